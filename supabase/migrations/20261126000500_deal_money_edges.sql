-- =============================================================================
-- Deal money at the edges: cancels that race a payment, payments a deal
-- cannot take, disputes after the money left escrow, long escrow holds
--
-- 1. Cancelling a deal whose payment was started goes through the payment
--    processor first (the cancel-deal function: the payment intent is
--    cancelled, the hosted checkout expired, and only then the deal). The
--    cancel_deal() RPC keeps cancelling deals that never started a payment
--    and refuses the others (PT409), so no deal is cancelled in SQL while an
--    intent or a checkout it knows of can still be paid.
--
-- 2. A payment that succeeds for a deal that cannot take it — the deal was
--    cancelled, is already paid by another payment, or the payment is not
--    the deal's (another amount, a replaced intent) — is a stray payment:
--    recorded once per payment intent in deal_stray_payments, in the
--    webhook's transaction, and refunded at the processor right after it
--    (idempotency key stray-refund:<intent>), or by the daily run's
--    stray-refunds sub-job when the processor was down.
--
--      pending ──► refunded    the processor made the refund (payproc_refund_id)
--         │           ▲
--         ▼           │        an admin refunded it by hand at the processor
--       failed ───────┘        (charge.refunded names the payment's charge)
--
--      failed: the processor refused the refund (last_error); no money
--      moved, and the admins were asked to refund it by hand.
--
-- 3. Events that change no state are recorded on the deal too: deal_events
--    rows with from_status = to_status (a stray payment received and
--    refunded, a dispute opened or decided after the payout or the refund, a
--    payout reversed for a dispute, a payout that went out while a dispute
--    opened), with what the processor said in detail. Such an event is
--    recorded once per (deal, cause, processor object): a webhook delivered
--    twice, or a job run twice, records nothing the second time.
--
-- 4. The daily run's escrow-alerts sub-job reads funded deals by funded_at
--    (index below) to warn admins before the processor's hold limit; the
--    deal event escrow_hold_flagged makes that once per deal.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- deal_events: events that change no state, with their detail
-- -----------------------------------------------------------------------------
alter table public.deal_events add column if not exists detail jsonb not null default '{}'::jsonb;

alter table public.deal_events drop constraint if exists deal_events_detail_is_object;
alter table public.deal_events add constraint deal_events_detail_is_object
  check (jsonb_typeof(detail) = 'object');

comment on table public.deal_events is
  'Audit of a deal: one row per state change (from_status → to_status, and the creation with from_status null, written by transition_deal() and the creation trigger) and one per event that changes no state (from_status = to_status, written by record_deal_event(): a stray payment, a dispute after the money left escrow, ...)';
comment on column public.deal_events.cause is
  'What caused it: created, offer_accepted, payment_succeeded, cancelled, handover_started, payout_released, refund_issued, dispute_opened, dispute_won, dispute_lost; for events without a state change stray_payment_received, stray_payment_refunded, stray_payment_refund_failed, dispute_{opened,won,lost}_after_payout, dispute_{opened,won,lost}_after_refund, dispute_{opened,won,lost}_on_stray_payment, payout_reversed_for_dispute, payout_released_during_dispute, escrow_hold_flagged';
comment on column public.deal_events.detail is
  'What the processor said about the event (a JSON object): amounts, the dispute''s reason and status, why a payment was stray, ...; {} for most state changes';
comment on constraint deal_events_detail_is_object on public.deal_events is
  'detail is a JSON object';

create unique index if not exists deal_events_once_per_object
  on public.deal_events (deal_id, cause, payproc_object_id)
  where from_status = to_status and payproc_object_id is not null;
comment on index public.deal_events_once_per_object is
  'An event without a state change is recorded once per deal, cause and processor object (record_deal_event inserts against it)';

-- -----------------------------------------------------------------------------
-- record_deal_event(): an event that changes no state, once
-- -----------------------------------------------------------------------------
create or replace function public.record_deal_event(
  p_deal uuid,
  p_cause text,
  p_payproc_object text,
  p_detail jsonb default '{}'::jsonb,
  p_actor uuid default null
)
returns boolean
language plpgsql
-- Invoker rights: only the service connection may execute it.
set search_path = ''
as $$
declare
  v_status text;
begin
  select status into v_status from public.deals where id = p_deal;
  if not found then
    raise exception 'Cannot record an event of deal "%": it does not exist', p_deal
      using errcode = 'P0002';
  end if;
  insert into public.deal_events
    (deal_id, from_status, to_status, cause, payproc_object_id, actor_id, detail)
  values (p_deal, v_status, v_status, p_cause, p_payproc_object, p_actor, coalesce(p_detail, '{}'))
  on conflict (deal_id, cause, payproc_object_id)
    where from_status = to_status and payproc_object_id is not null
    do nothing;
  return found;
end
$$;
comment on function public.record_deal_event(uuid, text, text, jsonb, uuid) is
  'Records on deal p_deal an event that changes no state (from_status = to_status = its status) with cause p_cause, processor object p_payproc_object, detail and actor; once per (deal, cause, object): answers false when it was recorded before. P0002 for an unknown deal';
revoke execute on function public.record_deal_event(uuid, text, text, jsonb, uuid)
  from public, anon, authenticated;
grant execute on function public.record_deal_event(uuid, text, text, jsonb, uuid) to service_role;

-- -----------------------------------------------------------------------------
-- deal_stray_payments: payments a deal could not take, refunded once
-- -----------------------------------------------------------------------------
create table if not exists public.deal_stray_payments (
  payproc_payment_intent_id text primary key,
  deal_id uuid not null references public.deals (id) on delete cascade,
  payproc_charge_id text,
  amount numeric(12, 2) not null,
  currency text not null,
  reason text not null,
  status text not null default 'pending',
  payproc_refund_id text unique,
  attempts integer not null default 0,
  last_error text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  refunded_at timestamptz,
  constraint deal_stray_payments_reason_known check (
    reason in ('deal_cancelled', 'deal_already_paid', 'not_the_deal_payment', 'amount_mismatch')
  ),
  constraint deal_stray_payments_status_known check (status in ('pending', 'refunded', 'failed')),
  constraint deal_stray_payments_amount_positive check (amount > 0),
  constraint deal_stray_payments_currency_iso_4217 check (currency ~ '^[A-Z]{3}$'),
  constraint deal_stray_payments_refunded_has_id check (
    status <> 'refunded' or payproc_refund_id is not null
  ),
  constraint deal_stray_payments_attempts_range check (attempts >= 0),
  constraint deal_stray_payments_last_error_short check (
    last_error is null or length(last_error) <= 1000
  )
);

comment on table public.deal_stray_payments is
  'Payments that succeeded for a deal that could not take them (cancelled, already paid, not its payment), one row per payment intent, refunded automatically (state machine in the deal_money_edges migration)';
comment on column public.deal_stray_payments.payproc_payment_intent_id is
  'The payment intent that paid; one row per payment, so a refund is claimed once however often its events arrive';
comment on column public.deal_stray_payments.deal_id is 'The deal the payment named (metadata.deal_id)';
comment on column public.deal_stray_payments.payproc_charge_id is 'The payment''s charge (disputes and refunds name it)';
comment on column public.deal_stray_payments.amount is 'What the buyer paid, in major units of currency';
comment on column public.deal_stray_payments.currency is 'The payment''s currency (ISO 4217, upper case)';
comment on column public.deal_stray_payments.reason is
  'Why the deal could not take it: deal_cancelled | deal_already_paid (another payment funded it) | not_the_deal_payment (a replaced intent) | amount_mismatch';
comment on column public.deal_stray_payments.status is
  'pending (to refund) | refunded | failed (the processor refused: refund by hand)';
comment on column public.deal_stray_payments.payproc_refund_id is 'The processor''s refund, once made';
comment on column public.deal_stray_payments.attempts is 'Refund attempts that failed for a passing reason (processor down, timeout)';
comment on column public.deal_stray_payments.last_error is 'Why the last attempt failed';
comment on column public.deal_stray_payments.created_at is 'When the payment was found stray';
comment on column public.deal_stray_payments.updated_at is 'Moves on every change (trigger)';
comment on column public.deal_stray_payments.refunded_at is 'When the refund was made';
comment on constraint deal_stray_payments_reason_known on public.deal_stray_payments is
  'A known reason';
comment on constraint deal_stray_payments_status_known on public.deal_stray_payments is
  'pending, refunded or failed';
comment on constraint deal_stray_payments_amount_positive on public.deal_stray_payments is
  'A payment has an amount';
comment on constraint deal_stray_payments_currency_iso_4217 on public.deal_stray_payments is
  'Currencies are ISO 4217 codes in upper case';
comment on constraint deal_stray_payments_refunded_has_id on public.deal_stray_payments is
  'A refunded payment names its refund';
comment on constraint deal_stray_payments_attempts_range on public.deal_stray_payments is
  'Attempts are counted from zero';
comment on constraint deal_stray_payments_last_error_short on public.deal_stray_payments is
  'An error is at most 1000 characters';

create index if not exists deal_stray_payments_deal_id_idx on public.deal_stray_payments (deal_id);
comment on index public.deal_stray_payments_deal_id_idx is 'A deal''s stray payments';
create index if not exists deal_stray_payments_charge_idx
  on public.deal_stray_payments (payproc_charge_id);
comment on index public.deal_stray_payments_charge_idx is
  'Finding a stray payment by its charge (charge.refunded, charge.dispute.*)';
create index if not exists deal_stray_payments_pending_idx
  on public.deal_stray_payments (created_at) where status = 'pending';
comment on index public.deal_stray_payments_pending_idx is 'The stray-refunds sub-job: what is left to refund';

drop trigger if exists deal_stray_payments_set_updated_at on public.deal_stray_payments;
create trigger deal_stray_payments_set_updated_at
  before update on public.deal_stray_payments
  for each row execute function public.set_updated_at();
comment on trigger deal_stray_payments_set_updated_at on public.deal_stray_payments is
  'Keeps updated_at current';

alter table public.deal_stray_payments enable row level security;

drop policy if exists "Deal participants can read their deals' stray payments and admins all"
  on public.deal_stray_payments;
create policy "Deal participants can read their deals' stray payments and admins all"
  on public.deal_stray_payments
  for select to authenticated
  using (
    exists (
      select 1 from public.deals d
      where d.id = deal_id
        and (d.buyer_id = (select auth.uid()) or d.seller_id = (select auth.uid()))
    )
    or (select public.is_admin())
  );
comment on policy "Deal participants can read their deals' stray payments and admins all"
  on public.deal_stray_payments is
  'The buyer sees the refund of their extra payment; the seller and admins see it too. Only the service connection writes';

revoke all on table public.deal_stray_payments from anon, authenticated;
grant select on table public.deal_stray_payments to authenticated;
grant all on table public.deal_stray_payments to service_role;

-- -----------------------------------------------------------------------------
-- cancel_deal(): only deals that never started a payment
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
  v_deal public.deals;
begin
  perform public.assert_signed_in('cancel this deal');
  if public.is_client_request() and not (
    public.is_deal_participant(p_deal, v_user) or public.is_admin()
  ) then
    raise exception 'Cannot cancel deal "%": only its buyer, its seller and admins may', p_deal
      using errcode = '42501';
  end if;
  select * into v_deal from public.deals where id = p_deal for update;
  if found and (v_deal.payproc_payment_intent_id is not null
                or v_deal.payproc_checkout_session_id is not null) then
    raise exception 'Cannot cancel deal "%" here: its payment was started; call the cancel-deal function, which stops the payment at the processor first', p_deal
      using errcode = 'PT409', hint = 'cancel-deal';
  end if;
  return public.transition_deal(p_deal, 'cancelled', 'cancelled', null, v_user);
end
$$;
comment on function public.cancel_deal(uuid) is
  'Cancels a deal that is still pending payment and never started a payment (PT409 otherwise: a deal with a payment intent or a hosted checkout is cancelled by the cancel-deal function, which stops the payment at the processor first); for its buyer, its seller, admins and the service connection (42501 for others and for anonymous sessions)';
revoke execute on function public.cancel_deal(uuid) from public, anon;
grant execute on function public.cancel_deal(uuid) to authenticated, service_role;

-- -----------------------------------------------------------------------------
-- Long escrow holds: funded deals by the time they were funded
-- -----------------------------------------------------------------------------
create index if not exists deals_held_in_escrow_idx
  on public.deals (funded_at) where status in ('funded', 'in_handover');
comment on index public.deals_held_in_escrow_idx is
  'The escrow-alerts sub-job: deals whose money is in escrow, oldest first';
