-- =============================================================================
-- Deal settlements: the payout to the seller and the refund to the buyer
--
-- At most one payout and one refund per deal (unique deal_id, kind). The row
-- is written, under the deal's row lock, BEFORE the processor is called, and
-- the processor's id is written after: a crash in between leaves a pending
-- row that the next call resumes with the same idempotency key (and a look
-- at the processor first), so money moves at most once. The same lock makes
-- payout and refund exclusive: whichever claims the deal first wins, the
-- other answers 409.
--
--   pending ──► succeeded ──► reversed     (payout only: taken back from the
--      │  ▲                                  seller for a refund, or at the
--      ▼  │ retry (attempt + 1)              processor's dashboard)
--    failed
--
--   pending    claimed; the processor may or may not have it yet
--   succeeded  the processor made the transfer or refund (payproc_id)
--   failed     the processor refused (last_error); no money moved. A retry
--              goes back to pending with the next attempt, whose idempotency
--              key is new ("payout:<deal>" first, "payout:<deal>:<n>" after)
--   reversed   the payout's transfer was fully reversed (payproc_reversal_id)
--
-- Written only by the service connection (release-deal-payout,
-- refund-deal-payment, payproc-webhook); participants and admins read.
-- =============================================================================

create table if not exists public.deal_settlements (
  id uuid primary key default gen_random_uuid(),
  deal_id uuid not null references public.deals (id) on delete cascade,
  kind text not null,
  status text not null default 'pending',
  amount numeric(12, 2) not null,
  currency text not null,
  attempt integer not null default 1,
  destination_account text,
  payproc_id text unique,
  payproc_reversal_id text unique,
  reason text,
  last_error text,
  requested_by uuid references auth.users (id) on delete set null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  settled_at timestamptz,
  constraint deal_settlements_one_per_kind unique (deal_id, kind),
  constraint deal_settlements_kind_known check (kind in ('payout', 'refund')),
  constraint deal_settlements_status_known check (
    status in ('pending', 'succeeded', 'failed', 'reversed')
  ),
  constraint deal_settlements_only_payouts_reverse check (status <> 'reversed' or kind = 'payout'),
  constraint deal_settlements_amount_positive check (amount > 0),
  constraint deal_settlements_currency_iso_4217 check (currency ~ '^[A-Z]{3}$'),
  constraint deal_settlements_attempt_positive check (attempt >= 1),
  constraint deal_settlements_payout_has_destination check (
    kind <> 'payout' or destination_account is not null
  ),
  constraint deal_settlements_succeeded_has_id check (
    status not in ('succeeded', 'reversed') or payproc_id is not null
  ),
  constraint deal_settlements_reason_short check (reason is null or length(reason) <= 500)
);

comment on table public.deal_settlements is
  'A deal''s payout to the seller and refund to the buyer: claimed before the processor is called, completed after (state machine in the deal_settlements migration)';
comment on column public.deal_settlements.deal_id is 'The deal';
comment on column public.deal_settlements.kind is 'payout (transfer to the seller) | refund (to the buyer)';
comment on column public.deal_settlements.status is 'pending | succeeded | failed | reversed (see the migration header)';
comment on column public.deal_settlements.amount is
  'Major units: the payout is the deal amount minus its frozen commission; the refund the whole amount';
comment on column public.deal_settlements.currency is 'The deal''s currency (ISO 4217, upper case)';
comment on column public.deal_settlements.attempt is
  'Which attempt: the idempotency key is "<kind>:<deal>" for the first, "<kind>:<deal>:<attempt>" after a refusal';
comment on column public.deal_settlements.destination_account is 'Payout: the seller''s connected account (acct_...)';
comment on column public.deal_settlements.payproc_id is 'The processor''s transfer (payout) or refund id, once made';
comment on column public.deal_settlements.payproc_reversal_id is 'Payout: the transfer reversal that took it back';
comment on column public.deal_settlements.reason is 'Refund: the admin''s reason';
comment on column public.deal_settlements.last_error is 'Why the processor refused the last attempt';
comment on column public.deal_settlements.requested_by is 'The admin who asked for it; null when the processor reported it';
comment on column public.deal_settlements.created_at is 'When it was first claimed';
comment on column public.deal_settlements.updated_at is 'Moves on every change (trigger)';
comment on column public.deal_settlements.settled_at is 'When it succeeded';

create index if not exists deal_settlements_requested_by_idx
  on public.deal_settlements (requested_by);

drop trigger if exists deal_settlements_set_updated_at on public.deal_settlements;
create trigger deal_settlements_set_updated_at
  before update on public.deal_settlements
  for each row execute function public.set_updated_at();

alter table public.deal_settlements enable row level security;

drop policy if exists "Deal participants can read their deals' settlements and admins all"
  on public.deal_settlements;
create policy "Deal participants can read their deals' settlements and admins all"
  on public.deal_settlements
  for select to authenticated
  using (
    exists (
      select 1 from public.deals d
      where d.id = deal_id
        and (d.buyer_id = (select auth.uid()) or d.seller_id = (select auth.uid()))
    )
    or (select public.is_admin())
  );

revoke all on table public.deal_settlements from anon, authenticated;
grant select on table public.deal_settlements to authenticated;
grant all on table public.deal_settlements to service_role;
