-- =============================================================================
-- Connected accounts: sellers' payout accounts at the payment processor
--
-- One row per seller. Onboarding (connect-onboarding-link) creates the
-- processor account and the row; payproc-webhook (account.updated, re-read
-- from the processor) and refresh-kyc-status keep its KYC and payout status
-- current, and copy the summary onto the seller's profile. Sellers read their
-- own row; only the service connection writes.
--
-- kyc_status is derived from the processor's account by one function
-- (_shared/billing/connect_accounts.ts):
--
--   pending     details not submitted yet (onboarding not finished)
--   restricted  details submitted, but requirements are due or payouts are off
--   verified    details submitted, nothing due, payouts enabled
--   disabled    the processor rejected the account (disabled_reason rejected.*)
--
--   pending ──► restricted ◄──► verified
--      │            │               │
--      └────────────┴──────┬────────┘
--                          ▼
--                       disabled ──► restricted | verified (reinstated)
-- =============================================================================

-- -----------------------------------------------------------------------------
-- connect_accounts
-- -----------------------------------------------------------------------------
create table if not exists public.connect_accounts (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null unique references auth.users (id) on delete cascade,
  payproc_account_id text not null unique,
  kyc_status text not null default 'pending',
  details_submitted boolean not null default false,
  charges_enabled boolean not null default false,
  payouts_enabled boolean not null default false,
  currently_due_count integer not null default 0,
  past_due_count integer not null default 0,
  eventually_due_count integer not null default 0,
  disabled_reason text not null default '',
  requirements jsonb not null default '{}'::jsonb,
  payproc_event_created timestamptz,
  payproc_synced_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint connect_accounts_kyc_status_known check (
    kyc_status in ('pending', 'restricted', 'verified', 'disabled')
  ),
  constraint connect_accounts_counts_not_negative check (
    currently_due_count >= 0 and past_due_count >= 0 and eventually_due_count >= 0
  )
);

comment on table public.connect_accounts is
  'Each seller''s connected payout account at the payment processor and its KYC/payout status. Sellers read their own; written only by the service connection';
comment on column public.connect_accounts.id is 'Our id of the account row';
comment on column public.connect_accounts.user_id is 'The seller who owns the account (one account per seller)';
comment on column public.connect_accounts.created_at is 'When the row was first written';
comment on column public.connect_accounts.updated_at is 'Moves on every change (trigger)';
comment on column public.connect_accounts.payproc_account_id is 'The processor''s connected account id (acct_...)';
comment on column public.connect_accounts.kyc_status is 'pending | restricted | verified | disabled (see the migration header)';
comment on column public.connect_accounts.details_submitted is 'The seller finished the onboarding form';
comment on column public.connect_accounts.charges_enabled is 'The account can take charges';
comment on column public.connect_accounts.payouts_enabled is 'The account can receive payouts (refresh-kyc-status summary)';
comment on column public.connect_accounts.currently_due_count is 'Requirements due now (refresh-kyc-status summary)';
comment on column public.connect_accounts.past_due_count is 'Requirements past their deadline (refresh-kyc-status summary)';
comment on column public.connect_accounts.eventually_due_count is 'Requirements that will be due';
comment on column public.connect_accounts.disabled_reason is 'Why the account is disabled, empty when it is not (refresh-kyc-status summary)';
comment on column public.connect_accounts.requirements is
  'The requirement lists: currently_due, past_due, eventually_due, pending_verification (field names, no personal data)';
comment on column public.connect_accounts.payproc_event_created is
  'created of the newest account.updated event applied; an event whose account cannot be re-read is applied only if not older';
comment on column public.connect_accounts.payproc_synced_at is
  'When the mirrored state was read from the processor; a write carrying an older read is refused';

drop trigger if exists connect_accounts_set_updated_at on public.connect_accounts;
create trigger connect_accounts_set_updated_at
  before update on public.connect_accounts
  for each row execute function public.set_updated_at();

alter table public.connect_accounts enable row level security;

drop policy if exists "Sellers can read their own connect account and admins all"
  on public.connect_accounts;
create policy "Sellers can read their own connect account and admins all"
  on public.connect_accounts
  for select to authenticated
  using (user_id = (select auth.uid()) or (select public.is_admin()));

revoke all on table public.connect_accounts from anon, authenticated;
grant select on table public.connect_accounts to authenticated;
grant all on table public.connect_accounts to service_role;

-- -----------------------------------------------------------------------------
-- profiles: the KYC summary next to the seller's profile
-- -----------------------------------------------------------------------------
alter table public.profiles add column if not exists payproc_account_id text;
alter table public.profiles add column if not exists kyc_status text;
alter table public.profiles add column if not exists kyc_currently_due_count integer not null default 0;
alter table public.profiles add column if not exists kyc_past_due_count integer not null default 0;
alter table public.profiles add column if not exists kyc_disabled_reason text not null default '';
alter table public.profiles add column if not exists payouts_enabled boolean not null default false;
alter table public.profiles add column if not exists kyc_updated_at timestamptz;

comment on column public.profiles.payproc_account_id is 'The seller''s connected account (copy of connect_accounts)';
comment on column public.profiles.kyc_status is
  'pending | restricted | verified | disabled; null when the user has no connected account (copy of connect_accounts)';
comment on column public.profiles.kyc_currently_due_count is 'KYC requirements due now (copy of connect_accounts)';
comment on column public.profiles.kyc_past_due_count is 'KYC requirements past due (copy of connect_accounts)';
comment on column public.profiles.kyc_disabled_reason is 'Why payouts are disabled, empty when not (copy of connect_accounts)';
comment on column public.profiles.payouts_enabled is 'The seller can receive payouts (copy of connect_accounts)';
comment on column public.profiles.kyc_updated_at is 'When the KYC copy last changed';
