-- =============================================================================
-- Escrow that closes itself: an inspection window, automatic release,
-- holdbacks and dispute cases with deadlines
--
-- ------------------------------------------------------------ the money plan
-- A deal of amount A holds A in escrow from funding; its commission C is
-- frozen then. Its terms (deals.terms, the letter of intent's) may hold back
-- H = A - cash_at_close for holdback_days after the release.
--
--   release   payout   = cash_at_close - C      (A - C without a holdback)
--   later     holdback = H                      (kind holdback)
--
-- The release comes when the inspection window ends: deals.inspection_ends_at
-- = handover completion + inspection_days (the terms', else the runtime's
-- HANDOVER_INSPECTION_DAYS), or earlier when the buyer calls accept_delivery.
-- deals.holdback_release_at = release + holdback_days, and never later than
-- 80 days after funding: the processor holds a charge's funds for 90 days
-- (the terms refuse inspection_days + holdback_days > 80, and a holdback of
-- more than half the amount, so the payout at release always covers C).
--
-- A deal stays in_handover until the seller has everything owed: without a
-- holdback the payout completes it (as before); with one, the holdback does.
-- While the money is held a chargeback moves it to disputed as before; won,
-- it goes back to where it was (disputed -> in_handover is new here).
--
-- ------------------------------------------------------------- the cases
-- public.deal_cases: a disagreement between buyer and seller, opened with
-- open_deal_case() by the buyer (in handover, until the holdback is paid) or
-- the seller (funded or in handover). At most one active case per deal, and
-- three per deal in all. An active case holds every automatic release.
--
--   from       to         who / how                                 deal event
--   (new)      open       open_deal_case() by the buyer or seller   case_opened
--   open       open       settle_deal_case() by one side: its       case_settlement_proposed
--                         proposal (outcome and amount) is kept
--   open       resolved   settle_deal_case() by the other side      case_resolved
--                         with the same outcome and amount          (by parties)
--   open       escalated  escalate_deal_case() by either side, or   case_escalated
--                         negotiate_until (7 days) passed: the
--                         deal-deadlines job; every admin alerted
--   open,      resolved   resolve-deal-case by an admin             case_resolved
--   escalated                                                       (by admin)
--   open,      resolved   the deal is refunded (a lost chargeback)  case_resolved
--   escalated             or completed meanwhile: the case is moot  (by deal)
--
-- resolved is final. Outcomes: release (the money goes on to the seller as
-- the terms say), refund (the buyer gets back what is still held: the whole
-- amount before the payout, the holdback after it), partial_refund with an
-- amount (0 < amount < what is still held: the buyer gets it back, the seller
-- the rest minus the commission on it). A case records, when resolved, its
-- phase: escrow (nothing was paid out) or holdback (the payout was, the
-- holdback not). The deal-deadlines job (or resolve-deal-case at once) moves
-- the outcome's money and stamps money_moved_at:
--
--   outcome         escrow phase                    holdback phase
--   release         the release, when due           the holdback, when due
--   refund          full refund (kind refund;       holdback refunded (kind
--                   deal -> refunded)               partial_refund; -> completed)
--   partial_refund  R refunded (partial_refund),    R refunded (partial_refund),
--                   payout (A - R) - C * (A - R)/A  holdback H - R
--                   (-> completed; no holdback)     (-> completed)
--
-- ------------------------------------------------------------- settlements
-- deal_settlements takes three more kinds, each with its own idempotency key
-- ("<kind>:<deal>", ":<attempt>" after a refusal) and the same claim-then-
-- call-then-finish path: holdback (a transfer to the seller),
-- partial_refund (a refund of part of the charge: a case's outcome) and
-- repayout (a transfer to the seller paying again what was reversed for a
-- chargeback the platform then won).
-- =============================================================================

-- -----------------------------------------------------------------------------
-- deals: the inspection window and the holdback's date
-- -----------------------------------------------------------------------------
alter table public.deals add column if not exists inspection_ends_at timestamptz;
alter table public.deals add column if not exists delivery_accepted_at timestamptz;
alter table public.deals add column if not exists holdback_release_at timestamptz;

comment on column public.deals.inspection_ends_at is
  'When the buyer''s inspection window ends and the payout is released (no case open): handover completion + inspection_days; now() when the buyer accepts the delivery early (accept_delivery). Null until the handover completes';
comment on column public.deals.delivery_accepted_at is
  'When the buyer accepted the delivery (accept_delivery), ending the inspection window early; null otherwise';
comment on column public.deals.holdback_release_at is
  'When the holdback is paid to the seller (no case open): the release + the terms'' holdback_days, at most 80 days after funding. Null without a holdback, or before the release';

-- The deal's own moves are pushed: the window and the holdback's date too.
drop trigger if exists deals_broadcast_escrow_dates on public.deals;
create trigger deals_broadcast_escrow_dates
  after update of inspection_ends_at, holdback_release_at on public.deals
  for each row
  when (old.inspection_ends_at is distinct from new.inspection_ends_at
        or old.holdback_release_at is distinct from new.holdback_release_at)
  execute function public.broadcast_deal_change();
comment on trigger deals_broadcast_escrow_dates on public.deals is
  'Pushes a started or shortened inspection window, and a holdback date, to the buyer''s and the seller''s topics user:<id>';

-- -----------------------------------------------------------------------------
-- The state table: a chargeback won during the handover returns to it
-- -----------------------------------------------------------------------------
create or replace function public.deal_transition_allowed(p_from text, p_to text)
returns boolean
language sql
immutable
set search_path = ''
as $$
  select coalesce((p_from, p_to) in (
    ('in_diligence', 'pending_payment'),
    ('in_diligence', 'cancelled'),
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
    ('disputed', 'in_handover'),
    ('disputed', 'refunded'),
    ('completed', 'refunded')
  ), false)
$$;
comment on function public.deal_transition_allowed(text, text) is
  'True when the deal state machine allows p_from → p_to (the state tables in the deal_states, letters of intent and escrow release migrations; disputed → in_handover is a chargeback won during the handover); false for nulls';

-- -----------------------------------------------------------------------------
-- deal_settlements: holdback, partial_refund and repayout
-- -----------------------------------------------------------------------------
alter table public.deal_settlements drop constraint if exists deal_settlements_kind_known;
alter table public.deal_settlements add constraint deal_settlements_kind_known check (
  kind in ('payout', 'refund', 'holdback', 'partial_refund', 'repayout')
);
alter table public.deal_settlements drop constraint if exists deal_settlements_only_payouts_reverse;
alter table public.deal_settlements add constraint deal_settlements_only_payouts_reverse check (
  status <> 'reversed' or kind in ('payout', 'holdback', 'repayout')
);
alter table public.deal_settlements drop constraint if exists deal_settlements_payout_has_destination;
alter table public.deal_settlements add constraint deal_settlements_payout_has_destination check (
  kind not in ('payout', 'holdback', 'repayout') or destination_account is not null
);
comment on constraint deal_settlements_kind_known on public.deal_settlements is
  'payout, holdback and repayout are transfers to the seller; refund (the whole charge) and partial_refund (a case''s outcome) go back to the buyer';
comment on constraint deal_settlements_only_payouts_reverse on public.deal_settlements is
  'Only a transfer to the seller is reversed';
comment on constraint deal_settlements_payout_has_destination on public.deal_settlements is
  'A transfer to the seller names the connected account';
comment on column public.deal_settlements.kind is
  'payout (the transfer at release) | holdback (the transfer of the held-back part, later) | repayout (paying again a payout reversed for a chargeback the platform won) | refund (the whole charge, to the buyer) | partial_refund (part of the charge, to the buyer: a case''s outcome)';
comment on column public.deal_settlements.amount is
  'Major units: payout = cash_at_close (the amount without a holdback) minus the frozen commission, or after a case''s partial refund R the rest minus its share of the commission; holdback = the held-back part (minus R); repayout = what was reversed; refund = the amount; partial_refund = R';
comment on column public.deal_settlements.attempt is
  'Which attempt: the idempotency key is "<kind>:<deal>" for the first, "<kind>:<deal>:<attempt>" after a refusal';
comment on table public.deal_settlements is
  'A deal''s money movements, one row per kind: the payout, the holdback and a repayout to the seller, the refund and a partial refund to the buyer; claimed before the processor is called, completed after (state machine in the deal_settlements migration; the kinds in the escrow release migration)';

-- -----------------------------------------------------------------------------
-- The terms: the holdback stays inside the processor's hold
-- -----------------------------------------------------------------------------
-- As the letters of intent migration wrote it, with two more rules: the
-- inspection and the holdback end within 80 days of funding (the processor
-- holds a charge's funds for 90), and at most half the amount is held back
-- (so the payout at release covers the commission). shared/
-- offer_terms_schemas.ts says the same; tests/db/offer_terms.test.ts holds
-- the two equal.
create or replace function public.offer_terms_checked(
  p_terms jsonb,
  p_amount numeric,
  p_currency text
)
returns jsonb
language plpgsql
stable
-- Definer rights: the offers guard runs as the client, who may not call
-- clean_user_text() or offer_term_days(); this is a function of its
-- arguments and today's date, and reads nothing.
security definer
set search_path = ''
as $$
declare
  v_unknown text;
  v_digits integer := public.currency_minor_digits(p_currency);
  v_cash numeric;
  v_holdback_days integer;
  v_inspection integer;
  v_exclusivity integer;
  v_close date;
  v_conditions jsonb := '[]'::jsonb;
  v_condition jsonb;
  v_text text;
  v_position integer := 0;
begin
  if p_terms is null or jsonb_typeof(p_terms) = 'null' then
    return null;
  end if;
  if jsonb_typeof(p_terms) <> 'object' then
    raise exception 'Cannot make offer: its terms are a JSON object, not %', jsonb_typeof(p_terms)
      using errcode = '23514';
  end if;
  select string_agg(k, ', ' order by k) into v_unknown
  from jsonb_object_keys(p_terms) k
  where k not in ('cash_at_close', 'holdback_days', 'inspection_days', 'exclusivity_days',
                  'proposed_close_date', 'conditions');
  if v_unknown is not null then
    raise exception 'Cannot make offer: unknown term %', v_unknown using errcode = '23514',
      hint = 'The terms are cash_at_close, holdback_days, inspection_days, exclusivity_days, proposed_close_date and conditions';
  end if;

  -- cash_at_close: a decimal string in major units, like every amount of the API.
  if coalesce(jsonb_typeof(p_terms -> 'cash_at_close'), 'null') = 'null' then
    v_cash := p_amount;
  elsif jsonb_typeof(p_terms -> 'cash_at_close') <> 'string'
        or (p_terms ->> 'cash_at_close') !~ '^[0-9]{1,10}(\.[0-9]{1,2})?$' then
    raise exception 'Cannot make offer: cash_at_close is a decimal string in major units, like "900.00"'
      using errcode = '23514';
  else
    v_cash := (p_terms ->> 'cash_at_close')::numeric;
    if v_cash <= 0 then
      raise exception 'Cannot make offer: cash_at_close must be more than 0' using errcode = '23514';
    end if;
    if v_cash > p_amount then
      raise exception 'Cannot make offer: cash_at_close (%) is more than the amount (%)', v_cash, p_amount
        using errcode = '23514';
    end if;
    if v_cash <> round(v_cash, v_digits) then
      raise exception 'Cannot make offer: cash_at_close must be whole in %''s smallest unit', p_currency
        using errcode = '23514';
    end if;
    if v_cash * 2 < p_amount then
      raise exception 'Cannot make offer: at most half the amount is held back (cash_at_close at least %)',
        round(p_amount / 2, v_digits) using errcode = '23514';
    end if;
  end if;

  v_holdback_days := public.offer_term_days(p_terms, 'holdback_days', 0, 60, 0);
  if v_cash < p_amount and v_holdback_days = 0 then
    raise exception 'Cannot make offer: holdback_days (1 to 60) is required when cash_at_close is below the amount'
      using errcode = '23514';
  end if;
  if v_cash = p_amount and v_holdback_days > 0 then
    raise exception 'Cannot make offer: holdback_days must be 0 without a holdback (cash_at_close is the whole amount)'
      using errcode = '23514';
  end if;
  v_inspection := public.offer_term_days(p_terms, 'inspection_days', 1, 30, 7);
  if v_inspection + v_holdback_days > 80 then
    raise exception 'Cannot make offer: inspection_days + holdback_days is %, more than 80 (the payment processor holds the money 90 days from payment)',
      v_inspection + v_holdback_days using errcode = '23514';
  end if;
  v_exclusivity := public.offer_term_days(p_terms, 'exclusivity_days', 0, 45, 14);

  if coalesce(jsonb_typeof(p_terms -> 'proposed_close_date'), 'null') <> 'null' then
    if jsonb_typeof(p_terms -> 'proposed_close_date') = 'string'
       and (p_terms ->> 'proposed_close_date') ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' then
      begin
        v_close := (p_terms ->> 'proposed_close_date')::date;
      exception when datetime_field_overflow or invalid_datetime_format then
        v_close := null;
      end;
    end if;
    if v_close is null then
      raise exception 'Cannot make offer: proposed_close_date is a date like "2027-01-31"'
        using errcode = '23514';
    end if;
    if v_close < (now() at time zone 'UTC')::date then
      raise exception 'Cannot make offer: proposed_close_date % is in the past', v_close
        using errcode = '23514';
    end if;
  end if;

  if coalesce(jsonb_typeof(p_terms -> 'conditions'), 'null') <> 'null' then
    if jsonb_typeof(p_terms -> 'conditions') <> 'array' then
      raise exception 'Cannot make offer: conditions is a list of texts' using errcode = '23514';
    end if;
    if jsonb_array_length(p_terms -> 'conditions') > 10 then
      raise exception 'Cannot make offer: at most 10 conditions, not %',
        jsonb_array_length(p_terms -> 'conditions') using errcode = '23514';
    end if;
    for v_condition in select value from jsonb_array_elements(p_terms -> 'conditions') loop
      v_position := v_position + 1;
      if jsonb_typeof(v_condition) <> 'string' then
        raise exception 'Cannot make offer: condition % is not a text', v_position using errcode = '23514';
      end if;
      begin
        v_text := public.clean_user_text(v_condition #>> '{}', format('condition %s', v_position), 500, true);
      exception when sqlstate '22023' then
        raise exception 'Cannot make offer: %', replace(sqlerrm, 'Cannot save ', '') using errcode = '23514';
      end;
      v_conditions := v_conditions || to_jsonb(v_text);
    end loop;
  end if;

  return jsonb_build_object(
    'cash_at_close', v_cash::numeric(12, 2)::text,
    'holdback_days', v_holdback_days,
    'inspection_days', v_inspection,
    'exclusivity_days', v_exclusivity,
    'proposed_close_date', to_jsonb(pg_catalog.to_char(v_close, 'YYYY-MM-DD')),
    'conditions', v_conditions
  );
end
$$;
comment on function public.offer_terms_checked(jsonb, numeric, text) is
  'The letter of intent terms p_terms of an offer of p_amount p_currency, checked and normalized (every key present, defaults filled); null for null. 23514 naming the broken rule (the rules are in the letters of intent migration header, plus: inspection_days + holdback_days <= 80, and at most half the amount held back). shared/offer_terms_schemas.ts is the same rule';

-- -----------------------------------------------------------------------------
-- deal_cases: a disagreement, negotiated, escalated, resolved
-- -----------------------------------------------------------------------------
create table if not exists public.deal_cases (
  id uuid primary key default gen_random_uuid(),
  deal_id uuid not null references public.deals (id) on delete cascade,
  opened_by uuid references auth.users (id) on delete set null,
  opened_by_side text not null,
  reason text not null,
  details text not null,
  status text not null default 'open',
  negotiate_until timestamptz not null,
  escalated_at timestamptz,
  escalated_by text,
  buyer_outcome text,
  buyer_refund_amount numeric(12, 2),
  seller_outcome text,
  seller_refund_amount numeric(12, 2),
  outcome text,
  refund_amount numeric(12, 2),
  phase text,
  resolved_by uuid references auth.users (id) on delete set null,
  resolution text,
  resolved_at timestamptz,
  money_moved_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint deal_cases_side_known check (opened_by_side in ('buyer', 'seller')),
  constraint deal_cases_reason_known check (
    reason in ('not_as_described', 'not_delivered', 'access_problem', 'misrepresentation',
               'payment_terms', 'other')
  ),
  constraint deal_cases_details_length check (length(details) between 1 and 4000),
  constraint deal_cases_status_known check (status in ('open', 'escalated', 'resolved')),
  constraint deal_cases_escalation_known check (
    (escalated_at is null) = (escalated_by is null)
    and (escalated_by is null or escalated_by in ('buyer', 'seller', 'deadline'))
    and (status <> 'escalated' or escalated_at is not null)
  ),
  constraint deal_cases_outcomes_known check (
    coalesce(outcome, 'release') in ('release', 'refund', 'partial_refund')
    and coalesce(buyer_outcome, 'release') in ('release', 'refund', 'partial_refund')
    and coalesce(seller_outcome, 'release') in ('release', 'refund', 'partial_refund')
  ),
  constraint deal_cases_amounts_with_partial check (
    coalesce(outcome = 'partial_refund', false) = (refund_amount is not null)
    and coalesce(buyer_outcome = 'partial_refund', false) = (buyer_refund_amount is not null)
    and coalesce(seller_outcome = 'partial_refund', false) = (seller_refund_amount is not null)
    and coalesce(refund_amount, 1) > 0
    and coalesce(buyer_refund_amount, 1) > 0
    and coalesce(seller_refund_amount, 1) > 0
  ),
  constraint deal_cases_resolved_whole check (
    (status = 'resolved') = (resolved_at is not null)
    and (status = 'resolved') = (outcome is not null)
    and (status = 'resolved') = (resolution is not null)
    and (status = 'resolved') = (phase is not null)
    and (resolution is null or resolution in ('settled', 'admin', 'deal_refunded', 'deal_completed'))
    and (phase is null or phase in ('escrow', 'holdback'))
    and (money_moved_at is null or status = 'resolved')
  )
);

comment on table public.deal_cases is
  'Dispute cases between a deal''s buyer and seller: open (negotiated until negotiate_until), escalated (admins decide), resolved with an outcome whose money the deal-deadlines job moves (state machine in the escrow release migration header). Participants and admins read; written only by the RPCs and the service connection';
comment on column public.deal_cases.deal_id is 'The deal';
comment on column public.deal_cases.opened_by is 'Who opened it';
comment on column public.deal_cases.opened_by_side is 'buyer | seller';
comment on column public.deal_cases.reason is
  'not_as_described | not_delivered | access_problem | misrepresentation | payment_terms | other';
comment on column public.deal_cases.details is 'What the opener says happened (plain text, 1-4000 characters)';
comment on column public.deal_cases.status is 'open | escalated | resolved';
comment on column public.deal_cases.negotiate_until is
  'Opening + 7 days: an open case still unresolved then is escalated by the deal-deadlines job';
comment on column public.deal_cases.escalated_at is 'When it was escalated to the admins';
comment on column public.deal_cases.escalated_by is 'buyer | seller (escalate_deal_case) | deadline (the job)';
comment on column public.deal_cases.buyer_outcome is 'The buyer''s proposal (settle_deal_case): release | refund | partial_refund';
comment on column public.deal_cases.buyer_refund_amount is 'With the buyer''s partial_refund proposal: the amount (major units)';
comment on column public.deal_cases.seller_outcome is 'The seller''s proposal (settle_deal_case): release | refund | partial_refund';
comment on column public.deal_cases.seller_refund_amount is 'With the seller''s partial_refund proposal: the amount (major units)';
comment on column public.deal_cases.outcome is 'Once resolved: release | refund | partial_refund';
comment on column public.deal_cases.refund_amount is 'With outcome partial_refund: what the buyer gets back (major units)';
comment on column public.deal_cases.phase is
  'Once resolved: escrow (nothing was paid out yet) | holdback (the payout was, the holdback was not)';
comment on column public.deal_cases.resolved_by is 'The admin who resolved it; null when the parties settled or the deal ended it';
comment on column public.deal_cases.resolution is
  'settled (both parties, settle_deal_case) | admin (resolve-deal-case) | deal_refunded / deal_completed (the deal ended first)';
comment on column public.deal_cases.resolved_at is 'When it was resolved';
comment on column public.deal_cases.money_moved_at is
  'When the outcome''s money moved (refunds and payouts succeeded, or nothing to move); null while the job still has something to do';
comment on column public.deal_cases.created_at is 'When it was opened';
comment on column public.deal_cases.updated_at is 'Moves on every change (trigger)';
comment on constraint deal_cases_side_known on public.deal_cases is 'The opener is the buyer or the seller';
comment on constraint deal_cases_reason_known on public.deal_cases is 'reason is one of the listed codes';
comment on constraint deal_cases_details_length on public.deal_cases is 'details is 1-4000 characters';
comment on constraint deal_cases_status_known on public.deal_cases is 'status is open, escalated or resolved';
comment on constraint deal_cases_escalation_known on public.deal_cases is
  'An escalation has a time and a cause; an escalated case has both';
comment on constraint deal_cases_outcomes_known on public.deal_cases is
  'Outcomes and proposals are release, refund or partial_refund';
comment on constraint deal_cases_amounts_with_partial on public.deal_cases is
  'An amount goes with partial_refund and only with it, and is positive';
comment on constraint deal_cases_resolved_whole on public.deal_cases is
  'A resolved case has its time, outcome, resolution and phase, and only a resolved one; money moves only after resolution';

create unique index if not exists deal_cases_one_active
  on public.deal_cases (deal_id) where status in ('open', 'escalated');
comment on index public.deal_cases_one_active is 'At most one open or escalated case per deal';
create index if not exists deal_cases_deal_idx on public.deal_cases (deal_id, created_at);
comment on index public.deal_cases_deal_idx is 'A deal''s cases, oldest first';
create index if not exists deal_cases_negotiation_due_idx
  on public.deal_cases (negotiate_until) where status = 'open';
comment on index public.deal_cases_negotiation_due_idx is 'Open cases by deadline, for the deal-deadlines job';
create index if not exists deal_cases_money_due_idx
  on public.deal_cases (resolved_at) where status = 'resolved' and money_moved_at is null;
comment on index public.deal_cases_money_due_idx is 'Resolved cases whose money has not moved yet, for the deal-deadlines job';
create index if not exists deal_cases_opened_by_idx on public.deal_cases (opened_by);
comment on index public.deal_cases_opened_by_idx is 'Covers the opened_by foreign key';
create index if not exists deal_cases_resolved_by_idx on public.deal_cases (resolved_by);
comment on index public.deal_cases_resolved_by_idx is 'Covers the resolved_by foreign key';

drop trigger if exists deal_cases_set_updated_at on public.deal_cases;
create trigger deal_cases_set_updated_at
  before update on public.deal_cases
  for each row execute function public.set_updated_at();
comment on trigger deal_cases_set_updated_at on public.deal_cases is 'Stamps updated_at';

alter table public.deal_cases enable row level security;

drop policy if exists "Deal participants can read their deals' cases and admins all"
  on public.deal_cases;
create policy "Deal participants can read their deals' cases and admins all"
  on public.deal_cases
  for select to authenticated
  using (
    exists (
      select 1 from public.deals d
      where d.id = deal_id
        and (d.buyer_id = (select auth.uid()) or d.seller_id = (select auth.uid()))
    )
    or (select public.is_admin())
  );

revoke all on table public.deal_cases from anon, authenticated;
grant select on table public.deal_cases to authenticated;
grant all on table public.deal_cases to service_role;

-- Every move of a case is pushed to both sides, as the deal's are.
create or replace function public.broadcast_deal_case_change()
returns trigger
language plpgsql
-- Definer rights: writers may not insert into realtime.messages themselves.
security definer
set search_path = ''
as $$
declare
  v_deal public.deals;
begin
  select * into v_deal from public.deals where id = new.deal_id;
  perform realtime.broadcast_changes(
    'user:' || v_deal.buyer_id::text, tg_op, tg_op, tg_table_name, tg_table_schema, new, old
  );
  perform realtime.broadcast_changes(
    'user:' || v_deal.seller_id::text, tg_op, tg_op, tg_table_name, tg_table_schema, new, old
  );
  return null;
end
$$;
comment on function public.broadcast_deal_case_change() is
  'Trigger on deal_cases: broadcasts a new case and every change to the deal''s buyer''s and seller''s private topics user:<id>';
revoke execute on function public.broadcast_deal_case_change() from public, anon, authenticated;

drop trigger if exists deal_cases_broadcast on public.deal_cases;
create trigger deal_cases_broadcast
  after insert or update on public.deal_cases
  for each row execute function public.broadcast_deal_case_change();
comment on trigger deal_cases_broadcast on public.deal_cases is
  'Pushes every move of a case to both sides';

-- -----------------------------------------------------------------------------
-- What a deal still holds, and what each transfer pays
-- -----------------------------------------------------------------------------
create or replace function public.deal_holdback_gross(p_deal public.deals)
returns numeric
language sql
immutable
set search_path = ''
as $$
  select coalesce(p_deal.amount - (p_deal.terms ->> 'cash_at_close')::numeric, 0)::numeric(12, 2)
$$;
comment on function public.deal_holdback_gross(public.deals) is
  'The part of the deal''s amount its terms hold back (amount - cash_at_close); 0 without terms or holdback';
revoke execute on function public.deal_holdback_gross(public.deals) from public, anon, authenticated;
grant execute on function public.deal_holdback_gross(public.deals) to service_role;

create or replace function public.deal_held_amount(p_deal uuid)
returns numeric
language plpgsql
stable
-- Invoker rights: the definer RPCs below and the service connection.
set search_path = ''
as $$
declare
  v_deal public.deals;
begin
  select * into v_deal from public.deals where id = p_deal;
  if v_deal.status not in ('funded', 'in_handover', 'disputed') then
    return 0;
  end if;
  if not exists (
    select 1 from public.deal_settlements s
    where s.deal_id = p_deal and s.kind = 'payout' and s.status in ('succeeded', 'reversed')
  ) then
    -- Less what a case already refunded before the payout went out.
    return v_deal.amount - coalesce((
      select s.amount from public.deal_settlements s
      where s.deal_id = p_deal and s.kind = 'partial_refund' and s.status = 'succeeded'
    ), 0);
  end if;
  if exists (
    select 1 from public.deal_settlements s
    where s.deal_id = p_deal and s.kind in ('holdback', 'partial_refund')
      and s.status in ('succeeded', 'reversed')
  ) then
    return 0;
  end if;
  return public.deal_holdback_gross(v_deal);
end
$$;
comment on function public.deal_held_amount(uuid) is
  'What deal p_deal still holds for the buyer, major units: the whole amount (less a case''s partial refund) before the payout, the holdback after it until paid (or refunded), else 0';
revoke execute on function public.deal_held_amount(uuid) from public, anon, authenticated;
grant execute on function public.deal_held_amount(uuid) to service_role;

create or replace function public.deal_transfer_amount(p_deal uuid, p_kind text)
returns numeric
language plpgsql
stable
-- Invoker rights: the service connection.
set search_path = ''
as $$
declare
  v_deal public.deals;
  v_case public.deal_cases;
  v_rest numeric;
  v_digits integer;
begin
  select * into v_deal from public.deals where id = p_deal;
  if not found or v_deal.commission is null then
    return null;
  end if;
  v_digits := public.currency_minor_digits(v_deal.currency);
  -- The case that settled the deal's money, if any (resolved with a refund).
  select * into v_case from public.deal_cases c
  where c.deal_id = p_deal and c.status = 'resolved' and c.outcome <> 'release'
    and c.resolution in ('settled', 'admin')
  order by c.resolved_at desc limit 1;
  if p_kind = 'payout' then
    if v_case.id is not null and v_case.phase = 'escrow' then
      if v_case.outcome = 'refund' then
        return null;
      end if;
      v_rest := v_deal.amount - v_case.refund_amount;
      return (v_rest - round(v_deal.commission * v_rest / v_deal.amount, v_digits))::numeric(12, 2);
    end if;
    return (v_deal.amount - public.deal_holdback_gross(v_deal) - v_deal.commission)::numeric(12, 2);
  elsif p_kind = 'holdback' then
    if public.deal_holdback_gross(v_deal) = 0 then
      return null;
    end if;
    if v_case.id is not null and (v_case.phase = 'escrow' or v_case.outcome = 'refund') then
      return null;
    end if;
    v_rest := public.deal_holdback_gross(v_deal) - coalesce(v_case.refund_amount, 0);
    return case when v_rest > 0 then v_rest::numeric(12, 2) end;
  elsif p_kind = 'repayout' then
    return (
      select sum(s.amount)::numeric(12, 2) from public.deal_settlements s
      where s.deal_id = p_deal and s.kind in ('payout', 'holdback') and s.status = 'reversed'
    );
  end if;
  raise exception 'Cannot price a "%" transfer: payout, holdback or repayout', p_kind using errcode = '22023';
end
$$;
comment on function public.deal_transfer_amount(uuid, text) is
  'What transfer p_kind of deal p_deal pays the seller, major units (the money plan in the escrow release migration header): payout = cash_at_close - commission, or after a case''s partial refund R in escrow (A - R) - commission * (A - R) / A; holdback = the held-back part (minus a holdback-phase partial refund); repayout = what was reversed. Null when nothing is owed';
revoke execute on function public.deal_transfer_amount(uuid, text) from public, anon, authenticated;
grant execute on function public.deal_transfer_amount(uuid, text) to service_role;

create or replace function public.deal_release_hold(p_deal uuid)
returns text
language sql
stable
-- Invoker rights: the service connection.
set search_path = ''
as $$
  select case
    when exists (
      select 1 from public.deal_cases c
      where c.deal_id = p_deal and c.status in ('open', 'escalated')
    ) then 'case_open'
    when exists (
      select 1 from public.deal_cases c
      where c.deal_id = p_deal and c.status = 'resolved' and c.money_moved_at is null
        and c.outcome <> 'release'
    ) then 'case_settling'
  end
$$;
comment on function public.deal_release_hold(uuid) is
  'Why no transfer to the seller of deal p_deal may start now: case_open (a case is open or escalated) or case_settling (a resolved case still moves its refund); null when none';
revoke execute on function public.deal_release_hold(uuid) from public, anon, authenticated;
grant execute on function public.deal_release_hold(uuid) to service_role;

-- -----------------------------------------------------------------------------
-- A case's outcome, checked
-- -----------------------------------------------------------------------------
create or replace function public.deal_case_outcome_checked(
  p_case public.deal_cases,
  p_outcome text,
  p_refund_amount numeric
)
returns numeric
language plpgsql
stable
-- Invoker rights: the definer RPCs below and the service connection.
set search_path = ''
as $$
declare
  v_deal public.deals;
  v_held numeric;
begin
  if p_outcome is null or p_outcome not in ('release', 'refund', 'partial_refund') then
    raise exception 'Cannot settle the case: the outcome is release, refund or partial_refund, not %',
      coalesce(p_outcome, 'null') using errcode = '22023';
  end if;
  if p_outcome <> 'partial_refund' then
    if p_refund_amount is not null then
      raise exception 'Cannot settle the case: only partial_refund takes an amount' using errcode = '22023';
    end if;
    return null;
  end if;
  select * into v_deal from public.deals where id = p_case.deal_id;
  v_held := public.deal_held_amount(v_deal.id);
  if p_refund_amount is null or p_refund_amount <= 0 then
    raise exception 'Cannot settle the case: a partial refund needs an amount more than 0'
      using errcode = '22023';
  end if;
  if p_refund_amount <> round(p_refund_amount, public.currency_minor_digits(v_deal.currency)) then
    raise exception 'Cannot settle the case: the amount must be whole in %''s smallest unit', v_deal.currency
      using errcode = '22023';
  end if;
  if p_refund_amount >= v_held then
    raise exception 'Cannot settle the case: a partial refund is less than the % % still held; for all of it, refund',
      v_held, v_deal.currency using errcode = '22023';
  end if;
  return p_refund_amount::numeric(12, 2);
end
$$;
comment on function public.deal_case_outcome_checked(public.deal_cases, text, numeric) is
  'Internal: 22023 unless p_outcome is release, refund or partial_refund with an amount (> 0, whole in the currency''s smallest unit, less than what the deal still holds; none with the others). Answers the amount';
revoke execute on function public.deal_case_outcome_checked(public.deal_cases, text, numeric)
  from public, anon, authenticated;
grant execute on function public.deal_case_outcome_checked(public.deal_cases, text, numeric) to service_role;

-- The deal, locked, for a participant or an admin (PT404 for others and
-- unknown deals).
create or replace function public.lock_party_deal(p_deal uuid, p_action text)
returns public.deals
language plpgsql
-- Invoker rights: reached only from the definer functions below.
set search_path = ''
as $$
declare
  v_uid uuid := auth.uid();
  v_deal public.deals;
begin
  perform public.assert_signed_in(p_action);
  select * into v_deal from public.deals d where d.id = p_deal for update;
  if v_deal.id is null
     or (public.is_client_request() and v_uid is distinct from v_deal.buyer_id
         and v_uid is distinct from v_deal.seller_id and not public.is_admin()) then
    raise exception 'Cannot %: deal "%" does not exist', p_action, p_deal using errcode = 'PT404';
  end if;
  return v_deal;
end
$$;
comment on function public.lock_party_deal(uuid, text) is
  'Internal: refuses an anonymous caller (42501), locks deal p_deal and answers it; PT404 when it does not exist or the caller may not read it (not its buyer, its seller or an admin)';
revoke execute on function public.lock_party_deal(uuid, text) from public, anon, authenticated;
grant execute on function public.lock_party_deal(uuid, text) to service_role;

-- The deal and the case, locked in that order (as every writer of either
-- does), for a participant (PT404 for others and unknown cases).
create or replace function public.lock_deal_case(p_case uuid, p_action text)
returns public.deal_cases
language plpgsql
-- Invoker rights: reached only from the definer functions below.
set search_path = ''
as $$
declare
  v_uid uuid := auth.uid();
  v_deal_id uuid;
  v_deal public.deals;
  v_case public.deal_cases;
begin
  perform public.assert_signed_in(p_action);
  select c.deal_id into v_deal_id from public.deal_cases c where c.id = p_case;
  select * into v_deal from public.deals d where d.id = v_deal_id for update;
  select * into v_case from public.deal_cases c where c.id = p_case for update;
  if v_case.id is null
     or (public.is_client_request() and v_uid is distinct from v_deal.buyer_id
         and v_uid is distinct from v_deal.seller_id and not public.is_admin()) then
    raise exception 'Cannot %: case "%" does not exist', p_action, p_case using errcode = 'PT404';
  end if;
  return v_case;
end
$$;
comment on function public.lock_deal_case(uuid, text) is
  'Internal: refuses an anonymous caller (42501), locks case p_case''s deal and then the case, and answers the case; PT404 when it does not exist or the caller may not read it';
revoke execute on function public.lock_deal_case(uuid, text) from public, anon, authenticated;
grant execute on function public.lock_deal_case(uuid, text) to service_role;

-- Who the caller is in the case's deal: buyer, seller, or null (an admin or
-- the service connection).
create or replace function public.deal_side_of(p_deal uuid)
returns text
language sql
stable
set search_path = ''
as $$
  select case
    when (select auth.uid()) = d.buyer_id then 'buyer'
    when (select auth.uid()) = d.seller_id then 'seller'
  end
  from public.deals d where d.id = p_deal
$$;
comment on function public.deal_side_of(uuid) is
  'Internal: buyer or seller when the signed-in user is one of deal p_deal''s, else null';
revoke execute on function public.deal_side_of(uuid) from public, anon, authenticated;
grant execute on function public.deal_side_of(uuid) to service_role;

-- Resolves a locked case with an outcome, in the caller's transaction: the
-- phase is read now (a payout being made is waited for: PT409), the event
-- recorded, both sides told.
create or replace function public.finish_deal_case(
  p_case public.deal_cases,
  p_outcome text,
  p_refund_amount numeric,
  p_resolution text,
  p_actor uuid
)
returns public.deal_cases
language plpgsql
-- Invoker rights: reached only from the definer functions below and the
-- service connection.
set search_path = ''
as $$
declare
  v_deal public.deals;
  v_case public.deal_cases;
  v_paid boolean;
begin
  select * into v_deal from public.deals where id = p_case.deal_id;
  -- A deal that ended (the trigger below) waits for nothing.
  if p_resolution in ('settled', 'admin') and exists (
    select 1 from public.deal_settlements s
    where s.deal_id = v_deal.id and s.kind in ('payout', 'holdback') and s.status = 'pending'
  ) then
    raise exception 'Cannot resolve the case now: a transfer to the seller is being made; try again in a few minutes'
      using errcode = 'PT409', hint = 'transfer_in_progress';
  end if;
  v_paid := exists (
    select 1 from public.deal_settlements s
    where s.deal_id = v_deal.id and s.kind = 'payout' and s.status in ('succeeded', 'reversed')
  );
  update public.deal_cases c set
    status = 'resolved',
    outcome = p_outcome,
    refund_amount = p_refund_amount,
    phase = case when v_paid then 'holdback' else 'escrow' end,
    resolution = p_resolution,
    resolved_by = case when p_resolution = 'admin' then p_actor end,
    resolved_at = now(),
    money_moved_at = case when p_resolution like 'deal_%' then now() end
  where c.id = p_case.id
  returning * into v_case;
  perform public.record_deal_event(
    v_deal.id, 'case_resolved', v_case.id::text,
    jsonb_build_object('case', v_case.id, 'outcome', p_outcome, 'refund_amount', p_refund_amount::text,
                       'phase', v_case.phase, 'resolution', p_resolution),
    p_actor
  );
  perform public.queue_notice('deal_case_resolved', v_deal.buyer_id, v_case.id);
  perform public.queue_notice('deal_case_resolved', v_deal.seller_id, v_case.id);
  return v_case;
end
$$;
comment on function public.finish_deal_case(public.deal_cases, text, numeric, text, uuid) is
  'Internal: resolves locked case p_case with p_outcome (and p_refund_amount) by p_resolution (settled, admin, deal_refunded, deal_completed), recording its phase (escrow, or holdback once the payout was made; PT409 hint transfer_in_progress while a transfer is pending), the event case_resolved, and telling both sides';
revoke execute on function public.finish_deal_case(public.deal_cases, text, numeric, text, uuid)
  from public, anon, authenticated;
grant execute on function public.finish_deal_case(public.deal_cases, text, numeric, text, uuid)
  to service_role;

-- -----------------------------------------------------------------------------
-- open_deal_case(): the buyer or the seller asks for help
-- -----------------------------------------------------------------------------
insert into public.client_limits (name, max_hits, window_seconds, description) values
  ('deal_case:per_day', 5, 86400,
   'Dispute cases a user opens, per day (key deal_case:per_day:<user id>)'),
  ('deal_case_move:per_day', 50, 86400,
   'Settlement proposals and escalations of dispute cases a user makes, per day (key deal_case_move:per_day:<user id>)')
on conflict (name) do nothing;

create or replace function public.open_deal_case(p_deal uuid, p_reason text, p_details text)
returns uuid
language plpgsql
-- Definer rights: clients may not write deal_cases or deal_events; the caller
-- is checked first (lock_party_deal).
security definer
set search_path = ''
as $$
declare
  v_uid uuid := auth.uid();
  v_deal public.deals;
  v_side text;
  v_active uuid;
  v_details text;
  v_case uuid;
begin
  v_deal := public.lock_party_deal(p_deal, 'open a case');
  v_side := public.deal_side_of(p_deal);
  if v_side is null then
    raise exception 'Cannot open a case: only the deal''s buyer or seller may' using errcode = '42501';
  end if;
  if v_deal.status = 'disputed' then
    raise exception 'Cannot open a case: the buyer''s bank is deciding a chargeback on this payment'
      using errcode = 'PT409', hint = 'chargeback_open';
  end if;
  if v_deal.status in ('in_diligence', 'pending_payment', 'cancelled') then
    raise exception 'Cannot open a case: the deal is %, and holds no money',
      replace(v_deal.status, '_', ' ') using errcode = 'PT409', hint = 'not_funded';
  end if;
  if v_deal.status in ('completed', 'refunded') then
    raise exception 'Cannot open a case: the deal is %; its money has left escrow', v_deal.status
      using errcode = 'PT409', hint = 'deal_closed';
  end if;
  if v_side = 'buyer' and v_deal.status = 'funded' then
    raise exception 'Cannot open a case: the handover has not started yet'
      using errcode = 'PT409', hint = 'handover_not_started';
  end if;
  if public.deal_held_amount(p_deal) <= 0 then
    raise exception 'Cannot open a case: the deal holds no money any more' using errcode = 'PT409',
      hint = 'deal_closed';
  end if;
  select c.id into v_active from public.deal_cases c
  where c.deal_id = p_deal and c.status in ('open', 'escalated');
  if v_active is not null then
    raise exception 'Cannot open a case: case % is open on this deal', v_active
      using errcode = 'PT409', hint = 'case_open';
  end if;
  -- A case resolved with a refund settles the deal's money: while it moves,
  -- there is nothing left to dispute.
  if public.deal_release_hold(p_deal) = 'case_settling' then
    raise exception 'Cannot open a case: a resolved case is still moving the deal''s money'
      using errcode = 'PT409', hint = 'case_settling';
  end if;
  if (select count(*) from public.deal_cases c where c.deal_id = p_deal) >= 3 then
    raise exception 'Cannot open a case: a deal has at most 3 cases' using errcode = 'PT409';
  end if;
  if p_reason is null or p_reason not in ('not_as_described', 'not_delivered', 'access_problem',
                                          'misrepresentation', 'payment_terms', 'other') then
    raise exception 'Cannot open a case: the reason is one of not_as_described, not_delivered, access_problem, misrepresentation, payment_terms, other'
      using errcode = '22023';
  end if;
  v_details := public.clean_user_text(p_details, 'the details', 4000, true);
  perform public.take_user_limit('deal_case:per_day', 'open a case');
  insert into public.deal_cases
    (deal_id, opened_by, opened_by_side, reason, details, negotiate_until)
  values (p_deal, v_uid, v_side, p_reason, v_details, now() + interval '7 days')
  returning id into v_case;
  perform public.record_deal_event(
    p_deal, 'case_opened', v_case::text,
    jsonb_build_object('case', v_case, 'reason', p_reason, 'by', v_side),
    v_uid
  );
  perform public.queue_notice('deal_case_opened', v_deal.buyer_id, v_case);
  perform public.queue_notice('deal_case_opened', v_deal.seller_id, v_case);
  return v_case;
end
$$;
comment on function public.open_deal_case(uuid, text, text) is
  'The deal''s buyer (once the handover started) or seller (once funded) opens a dispute case until the holdback is paid: p_reason one of not_as_described, not_delivered, access_problem, misrepresentation, payment_terms, other and p_details (1-4000 characters of plain text) (22023 otherwise). PT404 for others and unknown deals; 42501 for an admin; PT409 with hint chargeback_open, not_funded, deal_closed, handover_not_started, case_open (one active case per deal) or case_settling (a resolved case still moves its refund), or at 3 cases; PT429 beyond client_limits deal_case:per_day. The case is open until negotiate_until (7 days); it holds every automatic release. Both sides are told. Answers the case id. supabase.rpc("open_deal_case", { p_deal, p_reason, p_details })';
revoke execute on function public.open_deal_case(uuid, text, text) from public, anon;
grant execute on function public.open_deal_case(uuid, text, text) to authenticated, service_role;

-- -----------------------------------------------------------------------------
-- settle_deal_case(): the two sides agree
-- -----------------------------------------------------------------------------
create or replace function public.settle_deal_case(
  p_case uuid,
  p_outcome text,
  p_refund_amount numeric default null
)
returns public.deal_cases
language plpgsql
-- Definer rights: clients may not write deal_cases; the caller is checked
-- first (lock_deal_case).
security definer
set search_path = ''
as $$
declare
  v_case public.deal_cases;
  v_side text;
  v_amount numeric;
  v_other_outcome text;
  v_other_amount numeric;
  v_deal public.deals;
begin
  v_case := public.lock_deal_case(p_case, 'settle the case');
  v_side := public.deal_side_of(v_case.deal_id);
  if v_side is null then
    raise exception 'Cannot settle the case: only the deal''s buyer or seller may; admins resolve escalated cases with resolve-deal-case'
      using errcode = '42501';
  end if;
  if v_case.status = 'resolved' then
    if v_case.outcome = p_outcome and v_case.refund_amount is not distinct from p_refund_amount then
      return v_case;
    end if;
    raise exception 'Cannot settle the case: it was resolved with %', v_case.outcome
      using errcode = 'PT409', hint = 'case_resolved';
  end if;
  if v_case.status = 'escalated' then
    raise exception 'Cannot settle the case: it was escalated; an admin decides it now'
      using errcode = 'PT409', hint = 'case_escalated';
  end if;
  v_amount := public.deal_case_outcome_checked(v_case, p_outcome, p_refund_amount);
  -- The same proposal again changes nothing and tells nobody twice.
  if (v_side = 'buyer' and v_case.buyer_outcome = p_outcome
      and v_case.buyer_refund_amount is not distinct from v_amount)
     or (v_side = 'seller' and v_case.seller_outcome = p_outcome
      and v_case.seller_refund_amount is not distinct from v_amount) then
    return v_case;
  end if;
  perform public.take_user_limit('deal_case_move:per_day', 'settle the case');
  if v_side = 'buyer' then
    update public.deal_cases c set buyer_outcome = p_outcome, buyer_refund_amount = v_amount
    where c.id = p_case returning * into v_case;
    v_other_outcome := v_case.seller_outcome;
    v_other_amount := v_case.seller_refund_amount;
  else
    update public.deal_cases c set seller_outcome = p_outcome, seller_refund_amount = v_amount
    where c.id = p_case returning * into v_case;
    v_other_outcome := v_case.buyer_outcome;
    v_other_amount := v_case.buyer_refund_amount;
  end if;
  select * into v_deal from public.deals where id = v_case.deal_id;
  if v_other_outcome = p_outcome and v_other_amount is not distinct from v_amount then
    return public.finish_deal_case(v_case, p_outcome, v_amount, 'settled', auth.uid());
  end if;
  perform public.record_deal_event(
    v_case.deal_id, 'case_settlement_proposed', null,
    jsonb_build_object('case', v_case.id, 'by', v_side, 'outcome', p_outcome,
                       'refund_amount', v_amount::text),
    auth.uid()
  );
  perform public.queue_notice(
    'deal_case_settlement_proposed',
    case when v_side = 'buyer' then v_deal.seller_id else v_deal.buyer_id end,
    v_case.id
  );
  return v_case;
end
$$;
comment on function public.settle_deal_case(uuid, text, numeric) is
  'The deal''s buyer or seller (42501 for an admin; PT404 for others and unknown cases) proposes how to settle open case p_case: p_outcome release, refund or partial_refund with p_refund_amount (major units, > 0, less than what the deal still holds; 22023 otherwise). When the other side proposed the same outcome and amount the case is resolved (the job then moves the money); otherwise the other side is told (the same proposal again answers the case unchanged). PT409 hint case_escalated (an admin decides), case_resolved (with another outcome; the same outcome answers the case), transfer_in_progress; PT429 beyond client_limits deal_case_move:per_day. Answers the case. supabase.rpc("settle_deal_case", { p_case, p_outcome, p_refund_amount })';
revoke execute on function public.settle_deal_case(uuid, text, numeric) from public, anon;
grant execute on function public.settle_deal_case(uuid, text, numeric) to authenticated, service_role;

-- -----------------------------------------------------------------------------
-- escalate_deal_case(): an admin decides
-- -----------------------------------------------------------------------------
create or replace function public.escalate_deal_case(p_case uuid)
returns public.deal_cases
language plpgsql
-- Definer rights: clients may not write deal_cases; the caller is checked
-- first (lock_deal_case).
security definer
set search_path = ''
as $$
declare
  v_case public.deal_cases;
  v_side text;
  v_deal public.deals;
  v_admin uuid;
begin
  v_case := public.lock_deal_case(p_case, 'escalate the case');
  v_side := public.deal_side_of(v_case.deal_id);
  if v_side is null and public.is_client_request() then
    raise exception 'Cannot escalate the case: only the deal''s buyer or seller may' using errcode = '42501';
  end if;
  if v_case.status = 'escalated' then
    return v_case;
  end if;
  if v_case.status = 'resolved' then
    raise exception 'Cannot escalate the case: it was resolved with %', v_case.outcome
      using errcode = 'PT409', hint = 'case_resolved';
  end if;
  -- The service connection is the deadline: not before it.
  if v_side is null and v_case.negotiate_until > now() then
    raise exception 'Cannot escalate the case: its negotiation runs until %', v_case.negotiate_until
      using errcode = 'PT409';
  end if;
  if v_side is not null then
    perform public.take_user_limit('deal_case_move:per_day', 'escalate the case');
  end if;
  update public.deal_cases c
  set status = 'escalated', escalated_at = now(), escalated_by = coalesce(v_side, 'deadline')
  where c.id = p_case
  returning * into v_case;
  select * into v_deal from public.deals where id = v_case.deal_id;
  perform public.record_deal_event(
    v_case.deal_id, 'case_escalated', v_case.id::text,
    jsonb_build_object('case', v_case.id, 'by', v_case.escalated_by),
    auth.uid()
  );
  perform public.queue_notice('deal_case_escalated', v_deal.buyer_id, v_case.id);
  perform public.queue_notice('deal_case_escalated', v_deal.seller_id, v_case.id);
  for v_admin in select r.user_id from public.user_roles r where r.role = 'admin' loop
    if v_admin not in (v_deal.buyer_id, v_deal.seller_id) then
      perform public.queue_notice('deal_case_escalated', v_admin, v_case.id);
    end if;
  end loop;
  return v_case;
end
$$;
comment on function public.escalate_deal_case(uuid) is
  'The deal''s buyer or seller (PT404 for others and unknown cases) asks an admin to decide open case p_case now; the deal-deadlines job (service connection) does it once negotiate_until passed. Both sides and every admin are told (in-app and e-mail). An escalated case answers itself; PT409 hint case_resolved; PT429 beyond client_limits deal_case_move:per_day. Answers the case. supabase.rpc("escalate_deal_case", { p_case })';
revoke execute on function public.escalate_deal_case(uuid) from public, anon;
grant execute on function public.escalate_deal_case(uuid) to authenticated, service_role;

-- -----------------------------------------------------------------------------
-- resolve_deal_case(): the admin's decision (resolve-deal-case)
-- -----------------------------------------------------------------------------
create or replace function public.resolve_deal_case(
  p_case uuid,
  p_outcome text,
  p_refund_amount numeric,
  p_actor uuid
)
returns public.deal_cases
language plpgsql
-- Invoker rights: only the service connection (resolve-deal-case, which
-- checks that the caller is an admin) may execute it.
set search_path = ''
as $$
declare
  v_case public.deal_cases;
  v_amount numeric;
begin
  v_case := public.lock_deal_case(p_case, 'resolve the case');
  if v_case.status = 'resolved' then
    if v_case.outcome = p_outcome and v_case.refund_amount is not distinct from p_refund_amount then
      return v_case;
    end if;
    raise exception 'Cannot resolve the case: it was resolved with %', v_case.outcome
      using errcode = 'PT409', hint = 'case_resolved';
  end if;
  v_amount := public.deal_case_outcome_checked(v_case, p_outcome, p_refund_amount);
  return public.finish_deal_case(v_case, p_outcome, v_amount, 'admin', p_actor);
end
$$;
comment on function public.resolve_deal_case(uuid, text, numeric, uuid) is
  'Admin p_actor (checked by resolve-deal-case) resolves open or escalated case p_case with p_outcome (and p_refund_amount, checked as settle_deal_case does: 22023); PT404 for an unknown case; PT409 hint case_resolved when resolved with another outcome (the same answers the case), transfer_in_progress. Service connection only';
revoke execute on function public.resolve_deal_case(uuid, text, numeric, uuid) from public, anon, authenticated;
grant execute on function public.resolve_deal_case(uuid, text, numeric, uuid) to service_role;

-- -----------------------------------------------------------------------------
-- A deal that ends closes its cases
-- -----------------------------------------------------------------------------
-- On the audit row of the move (not the deals row), so the case's
-- case_resolved event comes after the move that ended the deal.
create or replace function public.close_cases_with_deal()
returns trigger
language plpgsql
-- Definer rights: the move may be made by a participant's RPC, which may not
-- write deal_cases.
security definer
set search_path = ''
as $$
declare
  v_case public.deal_cases;
begin
  for v_case in
    select * from public.deal_cases c
    where c.deal_id = new.deal_id and c.status in ('open', 'escalated')
    for update
  loop
    perform public.finish_deal_case(
      v_case,
      case when new.to_status = 'refunded' then 'refund' else 'release' end,
      null,
      'deal_' || new.to_status,
      null
    );
  end loop;
  return null;
end
$$;
comment on function public.close_cases_with_deal() is
  'Trigger on deal_events: a deal that ends refunded (a lost chargeback, an admin''s refund) or completed resolves its open cases with refund or release (resolution deal_refunded / deal_completed), nothing left to move';
revoke execute on function public.close_cases_with_deal() from public, anon, authenticated;

drop trigger if exists deal_events_close_cases on public.deal_events;
create trigger deal_events_close_cases
  after insert on public.deal_events
  for each row
  when (new.from_status is distinct from new.to_status and new.to_status in ('refunded', 'completed'))
  execute function public.close_cases_with_deal();
comment on trigger deal_events_close_cases on public.deal_events is
  'A deal that ends resolves its open cases, after the move''s own audit row';

-- -----------------------------------------------------------------------------
-- accept_delivery(): the buyer ends the inspection window early
-- -----------------------------------------------------------------------------
create or replace function public.accept_delivery(p_deal uuid)
returns public.deals
language plpgsql
-- Definer rights: clients may not update deals; the caller is checked first
-- (lock_party_deal).
security definer
set search_path = ''
as $$
declare
  v_uid uuid := auth.uid();
  v_deal public.deals;
begin
  v_deal := public.lock_party_deal(p_deal, 'accept the delivery');
  if public.is_client_request() and v_uid is distinct from v_deal.buyer_id then
    raise exception 'Cannot accept the delivery: only the deal''s buyer may' using errcode = '42501';
  end if;
  if v_deal.delivery_accepted_at is not null then
    return v_deal;
  end if;
  if v_deal.status <> 'in_handover' or v_deal.handover_completed_at is null
     or v_deal.inspection_ends_at is null then
    raise exception 'Cannot accept the delivery: the deal is %, and its handover is not complete',
      replace(v_deal.status, '_', ' ') using errcode = 'PT409', hint = 'handover_not_complete';
  end if;
  if exists (
    select 1 from public.deal_cases c where c.deal_id = p_deal and c.status in ('open', 'escalated')
  ) then
    raise exception 'Cannot accept the delivery: a case is open on this deal; settle it instead'
      using errcode = 'PT409', hint = 'case_open';
  end if;
  update public.deals d
  set delivery_accepted_at = now(), inspection_ends_at = least(d.inspection_ends_at, now())
  where d.id = p_deal
  returning * into v_deal;
  perform public.record_deal_event(p_deal, 'delivery_accepted', p_deal::text, '{}'::jsonb, v_uid);
  perform public.queue_notice('deal_delivery_accepted', v_deal.seller_id, p_deal);
  return v_deal;
end
$$;
comment on function public.accept_delivery(uuid) is
  'The deal''s buyer (42501 for the seller; PT404 for others and unknown deals) accepts the delivery, ending the inspection window now: the payout is released by the deal-deadlines job within 15 minutes. PT409 hint handover_not_complete, case_open. Accepting twice answers the deal unchanged. The seller is told. supabase.rpc("accept_delivery", { p_deal })';
revoke execute on function public.accept_delivery(uuid) from public, anon;
grant execute on function public.accept_delivery(uuid) to authenticated, service_role;

-- -----------------------------------------------------------------------------
-- The notice queue's new kinds
-- -----------------------------------------------------------------------------
alter table public.notice_queue drop constraint if exists notice_queue_kind_known;
alter table public.notice_queue add constraint notice_queue_kind_known check (
  kind in ('listing_access_requested', 'listing_access_approved', 'listing_access_declined',
           'listing_access_revoked', 'listing_access_expired', 'conversation_unread',
           'conversation_reported', 'offer_countered', 'offer_accepted',
           'deal_diligence_confirmed', 'deal_withdrawn', 'deal_exclusivity_extended',
           'deal_exclusivity_ending', 'deal_exclusivity_lapsed', 'deal_delivery_accepted',
           'deal_case_opened', 'deal_case_settlement_proposed', 'deal_case_escalated',
           'deal_case_resolved')
);
comment on constraint notice_queue_kind_known on public.notice_queue is
  'kind is one of shared/notice_kinds.ts';
comment on column public.notice_queue.subject_id is
  'What it is about, by kind: a listing access request, a conversation, a conversation report, an offer version (offer_*), a dispute case (deal_case_*) or a deal (other deal_*)';

comment on column public.deal_events.cause is
  'What caused it: created, offer_accepted, payment_succeeded, cancelled, handover_started, payout_released, holdback_released, refund_issued, dispute_opened, dispute_won, dispute_lost, case_resolved (a case''s refund ending the deal); for events without a state change stray_payment_*, dispute_{opened,won,lost}_after_{payout,refund}, dispute_*_on_stray_payment, payout_reversed_for_dispute, payout_released_during_dispute, escrow_hold_flagged, delivery_accepted, payout_released (with a holdback to come), payout_waiting_for_account, payout_waiting_alerted, partial_refund_issued, case_opened, case_settlement_proposed, case_escalated, case_resolved, payout_owed_after_dispute_won, payout_repaid_after_dispute_won';
