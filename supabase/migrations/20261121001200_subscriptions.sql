-- =============================================================================
-- Subscriptions: each user's plan, and current_plan()
--
-- One row per user, written only by the service connection: billing
-- functions mirror the payment processor's subscription into it (source
-- 'payproc'), and admin tools grant plans without payment (source 'grant').
-- A user without a row is on the free plan.
--
-- subscription_status follows the payment processor's statuses; the
-- processor drives the transitions, we record them:
--
--   incomplete ──► active | trialing | incomplete_expired
--   trialing   ──► active | past_due | canceled | paused
--   active     ──► past_due | canceled | unpaid | paused
--   past_due   ──► active | canceled | unpaid
--   unpaid     ──► active | canceled
--   paused     ──► active | canceled
--   canceled, incomplete_expired: final for that processor subscription
--
-- A grant is a row with source 'grant' and status 'active' (or 'trialing')
-- whose period is the grant's: current_period_end is when it lapses (null:
-- until revoked). Revoking a grant sets status 'canceled'.
--
-- current_plan() reads a row as its subscription_level when the status is
-- active or trialing and current_period_end is null or still ahead;
-- otherwise the user is on 'free'. No user at all is 'unauth'.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- Table
-- -----------------------------------------------------------------------------
create table if not exists public.subscriptions (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null unique references auth.users (id) on delete cascade,
  subscription_level text not null default 'free',
  subscription_status text not null default 'active',
  source text not null default 'payproc',
  payproc_customer_id text unique,
  payproc_subscription_id text unique,
  payproc_price_id text,
  billing_interval text,
  current_period_start timestamptz,
  current_period_end timestamptz,
  cancel_at_period_end boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint subscriptions_level_known check (subscription_level in ('free', 'starter', 'pro')),
  constraint subscriptions_status_known check (
    subscription_status in (
      'active', 'trialing', 'past_due', 'canceled', 'unpaid',
      'incomplete', 'incomplete_expired', 'paused'
    )
  ),
  constraint subscriptions_source_known check (source in ('payproc', 'grant')),
  constraint subscriptions_billing_interval_known check (billing_interval in ('month', 'year')),
  constraint subscriptions_period_ordered check (current_period_end >= current_period_start),
  constraint subscriptions_grant_has_no_processor_subscription check (
    source <> 'grant' or payproc_subscription_id is null
  )
);

comment on table public.subscriptions is
  'One row per user: the plan they pay for (source payproc, mirrored from the payment processor) or were granted (source grant). Written only by the service connection; read it through current_plan()';
comment on column public.subscriptions.subscription_level is 'free | starter | pro';
comment on column public.subscriptions.subscription_status is
  'The payment processor''s status: active | trialing | past_due | canceled | unpaid | incomplete | incomplete_expired | paused. Only active and trialing (within the period) give the level';
comment on column public.subscriptions.source is
  'payproc: mirrored from the payment processor; grant: given by an admin tool, lapsing at current_period_end';
comment on column public.subscriptions.payproc_customer_id is 'The payment processor''s customer id';
comment on column public.subscriptions.payproc_subscription_id is 'The payment processor''s subscription id (null for grants)';
comment on column public.subscriptions.payproc_price_id is 'The payment processor''s price id of the plan';
comment on column public.subscriptions.billing_interval is 'month | year';
comment on column public.subscriptions.current_period_start is 'Start of the paid (or granted) period';
comment on column public.subscriptions.current_period_end is
  'End of the paid (or granted) period; past it the user is on free. Null: no end (grants until revoked)';
comment on column public.subscriptions.cancel_at_period_end is
  'The subscription ends at current_period_end instead of renewing';
comment on column public.subscriptions.updated_at is 'Moves on every change (trigger); sync jobs show up here';

drop trigger if exists subscriptions_set_updated_at on public.subscriptions;
create trigger subscriptions_set_updated_at
  before update on public.subscriptions
  for each row execute function public.set_updated_at();

-- -----------------------------------------------------------------------------
-- Row level security: users read their own row; only the service connection
-- writes.
-- -----------------------------------------------------------------------------
alter table public.subscriptions enable row level security;

drop policy if exists "Users can read their own subscription and admins all"
  on public.subscriptions;
create policy "Users can read their own subscription and admins all" on public.subscriptions
  for select to authenticated
  using (user_id = (select auth.uid()) or (select public.is_admin()));

revoke all on table public.subscriptions from anon, authenticated;
grant select on table public.subscriptions to authenticated;
grant all on table public.subscriptions to service_role;

-- -----------------------------------------------------------------------------
-- plan_of(): the rule, without the caller check (internal)
-- -----------------------------------------------------------------------------
create or replace function public.plan_of(p_user uuid)
returns text
language plpgsql
stable
-- Definer rights: reads any user's row past RLS. Not callable by clients;
-- current_plan() and listing_viewer() check the caller first.
security definer
set search_path = ''
as $$
begin
  if p_user is null then
    return 'unauth';
  end if;
  return coalesce(
    (
      select s.subscription_level
      from public.subscriptions s
      where s.user_id = p_user
        and s.subscription_status in ('active', 'trialing')
        and (s.current_period_end is null or s.current_period_end > now())
    ),
    'free'
  );
end
$$;
comment on function public.plan_of(uuid) is
  'Internal: the plan rule of current_plan() without its caller check. unauth for a null user; the subscription_level while active or trialing and not past current_period_end; else free';
revoke execute on function public.plan_of(uuid) from public, anon, authenticated;
grant execute on function public.plan_of(uuid) to service_role;

-- -----------------------------------------------------------------------------
-- current_plan(): unauth | free | starter | pro
-- -----------------------------------------------------------------------------
create or replace function public.current_plan(p_user uuid)
returns text
language plpgsql
stable
-- Definer rights: admins and the service connection ask for any user's
-- plan without reading the row through RLS; assert_may_ask_about() keeps a
-- client to its own plan.
security definer
set search_path = ''
as $$
begin
  perform public.assert_may_ask_about(p_user, 'read plan');
  return public.plan_of(p_user);
end
$$;
comment on function public.current_plan(uuid) is
  'The user''s plan: their subscription_level while the subscription is active or trialing and not past current_period_end, else free; unauth for a null user. A client may ask only about itself';
revoke execute on function public.current_plan(uuid) from public;
grant execute on function public.current_plan(uuid) to anon, authenticated, service_role;
