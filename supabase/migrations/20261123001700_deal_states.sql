-- =============================================================================
-- Deal states: the escrow state machine, its one writer and its audit
--
-- A deal is paid into escrow by the buyer (separate charges and transfers:
-- the payment lands on the platform's balance), handed over, and then paid
-- out to the seller minus the commission, or refunded to the buyer.
--
--   pending_payment ──► funded ──► in_handover ──► completed
--        │                │  ▲          │              │
--        ▼                │  │          │              │ (refund after the
--    cancelled            ▼  │          ▼              │  payout was reversed)
--                       disputed ◄──────┘              ▼
--                         │                         refunded
--                         └──────────────────────────► ▲
--                 funded | in_handover ────────────────┘
--
-- A deal's amount is whole in its currency's smallest unit (no fraction of a
-- yen); the commission is calculate_commission() rounded the same way
-- (deal_commission), so the seller's payout can always be transferred.
--
-- The state table (from → to: what causes it):
--
--   pending_payment → funded       the buyer's payment succeeded (webhook,
--                                   or payment-status reconciling)
--   pending_payment → cancelled    a participant or an admin cancelled
--                                   (cancel_deal) before any payment
--   funded          → in_handover  the handover started (documents feature)
--   funded          → completed    payout released early (release-deal-payout
--                                   with force: true)
--   in_handover     → completed    payout released (release-deal-payout)
--   funded | in_handover → refunded   refund issued (refund-deal-payment, or
--                                   a refund made at the processor)
--   funded | in_handover → disputed   the buyer's bank opened a dispute
--   disputed        → funded       dispute won: the funds are back in escrow
--   disputed        → refunded     dispute lost: the buyer got the money back
--   completed       → refunded     refund after the payout was reversed
--                                   (refund-deal-payment reverseTransfer: true)
--
-- completed, cancelled and refunded are final. public.transition_deal() is
-- the only writer of deals.status (a trigger refuses every other write), it
-- refuses any pair not in the table with SQLSTATE PT409 (409 at the API),
-- freezes the commission when the deal is funded, and records every
-- transition in deal_events in the same statement's transaction.
--
-- Money follows the one rule: numeric(12,2) major units plus the deal's
-- currency here; minor units only at the processor boundary (_shared/money.ts).
-- =============================================================================

-- -----------------------------------------------------------------------------
-- currency_minor_digits(), deal_commission(): money in the deal's currency
-- -----------------------------------------------------------------------------
create or replace function public.currency_minor_digits(p_currency text)
returns integer
language sql
immutable
set search_path = ''
as $$
  -- The processor's zero-decimal currencies (as _shared/money.ts lists them).
  select case when upper(p_currency) in (
    'BIF', 'CLP', 'DJF', 'GNF', 'JPY', 'KMF', 'KRW', 'MGA', 'PYG', 'RWF', 'UGX', 'VND', 'VUV',
    'XAF', 'XOF', 'XPF'
  ) then 0 else 2 end
$$;
comment on function public.currency_minor_digits(text) is
  'Decimal places of the currency''s smallest unit at the processor: 0 for zero-decimal currencies (JPY, KRW, ...), else 2';
revoke execute on function public.currency_minor_digits(text) from public;
grant execute on function public.currency_minor_digits(text) to anon, authenticated, service_role;

create or replace function public.deal_commission(p_amount numeric, p_currency text, p_seller uuid)
returns numeric
language sql
stable
set search_path = ''
as $$
  select round(
    public.calculate_commission(p_amount, p_seller),
    public.currency_minor_digits(p_currency)
  )::numeric(12, 2)
$$;
comment on function public.deal_commission(numeric, text, uuid) is
  'The commission on a deal of p_amount p_currency sold by p_seller: calculate_commission() rounded half-up to the currency''s smallest unit (whole yen for JPY), so the seller''s payout can be transferred';
revoke execute on function public.deal_commission(numeric, text, uuid) from public, anon;
grant execute on function public.deal_commission(numeric, text, uuid) to authenticated, service_role;

-- -----------------------------------------------------------------------------
-- deals: state, frozen commission and the processor's payment objects
-- -----------------------------------------------------------------------------
alter table public.deals add column if not exists status text not null default 'pending_payment';
alter table public.deals add column if not exists commission numeric(12, 2);
alter table public.deals add column if not exists funded_at timestamptz;
alter table public.deals add column if not exists closed_at timestamptz;
alter table public.deals add column if not exists payproc_payment_intent_id text;
alter table public.deals add column if not exists payproc_checkout_session_id text;
alter table public.deals add column if not exists payproc_charge_id text;
alter table public.deals add column if not exists payment_status text;
alter table public.deals add column if not exists payment_synced_at timestamptz;

alter table public.deals drop constraint if exists deals_status_known;
alter table public.deals add constraint deals_status_known check (
  status in ('pending_payment', 'funded', 'in_handover', 'completed', 'cancelled', 'refunded', 'disputed')
);
alter table public.deals drop constraint if exists deals_amount_in_smallest_units;
alter table public.deals add constraint deals_amount_in_smallest_units check (
  amount = round(amount, public.currency_minor_digits(currency))
);
alter table public.deals drop constraint if exists deals_commission_within_amount;
alter table public.deals add constraint deals_commission_within_amount check (
  commission is null or (commission >= 0 and commission <= amount)
);

create unique index if not exists deals_payproc_payment_intent_id_key
  on public.deals (payproc_payment_intent_id);
create unique index if not exists deals_payproc_checkout_session_id_key
  on public.deals (payproc_checkout_session_id);
create index if not exists deals_status_idx on public.deals (status);

comment on column public.deals.status is
  'pending_payment | funded | in_handover | completed | cancelled | refunded | disputed (state table in the deal_states migration); written only by transition_deal()';
comment on column public.deals.commission is
  'Our commission in major units: deal_commission() (calculate_commission() in the currency''s smallest unit) at the moment the deal was funded, frozen from then on; null before';
comment on column public.deals.funded_at is 'When the buyer''s payment reached escrow';
comment on column public.deals.closed_at is 'When the deal reached a final state (completed, cancelled, refunded)';
comment on column public.deals.payproc_payment_intent_id is
  'The payment intent paying the deal (create-deal-payment, or the hosted checkout''s once completed)';
comment on column public.deals.payproc_checkout_session_id is 'The hosted checkout created for the deal (create-deal-checkout)';
comment on column public.deals.payproc_charge_id is
  'The succeeded charge holding the escrow: source_transaction of the payout, refunded by a refund';
comment on column public.deals.payment_status is
  'The processor''s status of the payment intent as last read (requires_payment_method, processing, succeeded, ...)';
comment on column public.deals.payment_synced_at is 'When payment_status was read from the processor; older reads never overwrite it';

-- -----------------------------------------------------------------------------
-- deal_events: every transition, in the transaction that made it
-- -----------------------------------------------------------------------------
create table if not exists public.deal_events (
  id bigint generated by default as identity primary key,
  deal_id uuid not null references public.deals (id) on delete cascade,
  from_status text,
  to_status text not null,
  cause text not null,
  payproc_object_id text,
  actor_id uuid references auth.users (id) on delete set null,
  created_at timestamptz not null default now(),
  constraint deal_events_cause_short check (length(cause) between 1 and 100)
);

comment on table public.deal_events is
  'Audit of deal state changes: one row per transition (and one for the creation, from_status null), written by transition_deal() and the creation trigger';
comment on column public.deal_events.deal_id is 'The deal';
comment on column public.deal_events.from_status is 'State before; null for the creation';
comment on column public.deal_events.to_status is 'State after';
comment on column public.deal_events.cause is
  'What caused it: created, offer_accepted, payment_succeeded, cancelled, handover_started, payout_released, refund_issued, dispute_opened, dispute_won, dispute_lost, ...';
comment on column public.deal_events.payproc_object_id is 'The processor object behind it (payment intent, transfer, refund, dispute), if any';
comment on column public.deal_events.actor_id is 'The user who caused it (participant or admin); null for the processor and jobs';
comment on column public.deal_events.created_at is 'When it happened';

create index if not exists deal_events_deal_id_idx on public.deal_events (deal_id, id);
create index if not exists deal_events_actor_id_idx on public.deal_events (actor_id);

alter table public.deal_events enable row level security;

drop policy if exists "Deal participants can read their deals' events and admins all"
  on public.deal_events;
create policy "Deal participants can read their deals' events and admins all"
  on public.deal_events
  for select to authenticated
  using (
    exists (
      select 1 from public.deals d
      where d.id = deal_id
        and (d.buyer_id = (select auth.uid()) or d.seller_id = (select auth.uid()))
    )
    or (select public.is_admin())
  );

revoke all on table public.deal_events from anon, authenticated;
grant select on table public.deal_events to authenticated;
grant all on table public.deal_events to service_role;

-- -----------------------------------------------------------------------------
-- deal_transition_allowed(): the state table
-- -----------------------------------------------------------------------------
create or replace function public.deal_transition_allowed(p_from text, p_to text)
returns boolean
language sql
immutable
set search_path = ''
as $$
  select coalesce((p_from, p_to) in (
    ('pending_payment', 'funded'),
    ('pending_payment', 'cancelled'),
    ('funded', 'in_handover'),
    ('funded', 'completed'),
    ('in_handover', 'completed'),
    ('funded', 'refunded'),
    ('in_handover', 'refunded'),
    ('funded', 'disputed'),
    ('in_handover', 'disputed'),
    ('disputed', 'funded'),
    ('disputed', 'refunded'),
    ('completed', 'refunded')
  ), false)
$$;
comment on function public.deal_transition_allowed(text, text) is
  'True when the deal state machine allows p_from → p_to (the state table in the deal_states migration); false for nulls';
revoke execute on function public.deal_transition_allowed(text, text) from public, anon;
grant execute on function public.deal_transition_allowed(text, text) to authenticated, service_role;

-- -----------------------------------------------------------------------------
-- transition_deal(): the one writer of deals.status
-- -----------------------------------------------------------------------------
create or replace function public.transition_deal(
  p_deal uuid,
  p_to text,
  p_cause text,
  p_payproc_object text default null,
  p_actor uuid default null
)
returns public.deals
language plpgsql
-- Invoker rights: only the service connection (and definer functions such as
-- cancel_deal, which check the caller first) may execute it.
set search_path = ''
as $$
declare
  v_deal public.deals;
  v_from text;
begin
  select * into v_deal from public.deals where id = p_deal for update;
  if not found then
    raise exception 'Cannot change deal "%": it does not exist', p_deal using errcode = 'P0002';
  end if;
  v_from := v_deal.status;
  if not public.deal_transition_allowed(v_from, p_to) then
    raise exception 'Cannot move the deal from % to %', replace(v_from, '_', ' '), replace(p_to, '_', ' ')
      using errcode = 'PT409',
            detail = format('deal %s: %s → %s refused (%s)', p_deal, v_from, p_to, p_cause);
  end if;
  perform set_config('marketplace.deal_transition', p_deal::text, true);
  update public.deals d set
    status = p_to,
    commission = case
      when p_to = 'funded' and d.commission is null
        then public.deal_commission(d.amount, d.currency, d.seller_id)
      else d.commission
    end,
    funded_at = case when p_to = 'funded' then coalesce(d.funded_at, now()) else d.funded_at end,
    closed_at = case when p_to in ('completed', 'cancelled', 'refunded') then now() else null end
  where d.id = p_deal
  returning * into v_deal;
  perform set_config('marketplace.deal_transition', '', true);
  insert into public.deal_events (deal_id, from_status, to_status, cause, payproc_object_id, actor_id)
  values (p_deal, v_from, p_to, p_cause, p_payproc_object, p_actor);
  return v_deal;
end
$$;
comment on function public.transition_deal(uuid, text, text, text, uuid) is
  'Moves deal p_deal to p_to under a row lock when the state table allows it (PT409 otherwise), freezes the commission on entering funded, stamps funded_at/closed_at and records the transition in deal_events with p_cause, the processor object and the actor. The only writer of deals.status';
revoke execute on function public.transition_deal(uuid, text, text, text, uuid)
  from public, anon, authenticated;
grant execute on function public.transition_deal(uuid, text, text, text, uuid) to service_role;

-- -----------------------------------------------------------------------------
-- Guard: status and commission change only through transition_deal()
-- -----------------------------------------------------------------------------
create or replace function public.guard_deal_state()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if tg_op = 'INSERT' then
    if new.status <> 'pending_payment' or new.commission is not null
       or new.funded_at is not null or new.closed_at is not null then
      raise exception 'Cannot create a deal in state %: deals start pending payment', new.status
        using errcode = 'PT409';
    end if;
    return new;
  end if;
  if (new.status, new.commission, new.funded_at, new.closed_at)
       is distinct from (old.status, old.commission, old.funded_at, old.closed_at)
     and current_setting('marketplace.deal_transition', true) is distinct from old.id::text then
    raise exception 'Cannot change the deal''s state directly: use transition_deal()'
      using errcode = 'PT409';
  end if;
  return new;
end
$$;
comment on function public.guard_deal_state() is
  'Trigger on deals: a new deal starts pending_payment without commission; status, commission, funded_at and closed_at change only inside transition_deal() (PT409 otherwise)';
revoke execute on function public.guard_deal_state() from public, anon, authenticated;

drop trigger if exists deals_guard_state on public.deals;
create trigger deals_guard_state
  before insert or update on public.deals
  for each row execute function public.guard_deal_state();

-- -----------------------------------------------------------------------------
-- The creation is the first event
-- -----------------------------------------------------------------------------
create or replace function public.record_deal_creation()
returns trigger
language plpgsql
-- Definer rights: whoever creates the deal (the service connection, or
-- accept_offer for a seller) writes its first audit row.
security definer
set search_path = ''
as $$
begin
  insert into public.deal_events (deal_id, from_status, to_status, cause, actor_id)
  values (
    new.id,
    null,
    new.status,
    coalesce(nullif(current_setting('marketplace.deal_cause', true), ''), 'created'),
    auth.uid()
  );
  return null;
end
$$;
comment on function public.record_deal_creation() is
  'Trigger on deals: records the creation in deal_events (cause from the transaction setting marketplace.deal_cause, default created; actor auth.uid())';
revoke execute on function public.record_deal_creation() from public, anon, authenticated;

drop trigger if exists deals_record_creation on public.deals;
create trigger deals_record_creation
  after insert on public.deals
  for each row execute function public.record_deal_creation();

-- -----------------------------------------------------------------------------
-- cancel_deal(): participants (and admins) cancel before payment
-- -----------------------------------------------------------------------------
create or replace function public.cancel_deal(p_deal uuid)
returns public.deals
language plpgsql
-- Definer rights: clients may not execute transition_deal(); this checks
-- that the caller is a participant or an admin first.
security definer
set search_path = ''
as $$
declare
  v_user uuid := auth.uid();
begin
  if public.is_client_request() and not (
    public.is_deal_participant(p_deal, v_user) or public.is_admin()
  ) then
    raise exception 'Cannot cancel deal "%": only its buyer, its seller and admins may', p_deal
      using errcode = '42501';
  end if;
  return public.transition_deal(p_deal, 'cancelled', 'cancelled', null, v_user);
end
$$;
comment on function public.cancel_deal(uuid) is
  'Cancels a deal that is still pending payment (PT409 otherwise); for its buyer, its seller, admins and the service connection (42501 for others)';
revoke execute on function public.cancel_deal(uuid) from public, anon;
grant execute on function public.cancel_deal(uuid) to authenticated, service_role;

-- -----------------------------------------------------------------------------
-- Realtime: every deal change to both participants (critical channel)
-- -----------------------------------------------------------------------------
create or replace function public.broadcast_deal_change()
returns trigger
language plpgsql
-- Definer rights: writers may not insert into realtime.messages themselves.
security definer
set search_path = ''
as $$
begin
  perform realtime.broadcast_changes(
    'user:' || new.buyer_id::text, tg_op, tg_op, tg_table_name, tg_table_schema, new, old
  );
  perform realtime.broadcast_changes(
    'user:' || new.seller_id::text, tg_op, tg_op, tg_table_name, tg_table_schema, new, old
  );
  return null;
end
$$;
comment on function public.broadcast_deal_change() is
  'Trigger on deals: broadcasts a new deal and every state change to the buyer''s and the seller''s private topics user:<id>';
revoke execute on function public.broadcast_deal_change() from public, anon, authenticated;

drop trigger if exists deals_broadcast_creation on public.deals;
create trigger deals_broadcast_creation
  after insert on public.deals
  for each row execute function public.broadcast_deal_change();

drop trigger if exists deals_broadcast_change on public.deals;
create trigger deals_broadcast_change
  after update of status on public.deals
  for each row
  when (old.status is distinct from new.status)
  execute function public.broadcast_deal_change();
