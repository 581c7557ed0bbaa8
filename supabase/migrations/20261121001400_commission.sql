-- =============================================================================
-- Commission: the platform's fee on a sale, by the seller's plan
--
-- commission_tiers holds one rate per plan a seller can be on (free, starter,
-- pro); admins edit the rates. calculate_commission() applies the rate of the
-- seller's current_plan() to an amount and rounds the fee half-up to cents.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- commission_tiers
-- -----------------------------------------------------------------------------
create table if not exists public.commission_tiers (
  plan text primary key,
  rate numeric(5, 4) not null,
  description text,
  updated_at timestamptz not null default now(),
  constraint commission_tiers_plan_known check (plan in ('free', 'starter', 'pro')),
  constraint commission_tiers_rate_fraction check (rate >= 0 and rate < 1)
);

comment on table public.commission_tiers is
  'Commission rate per seller plan, as a fraction of the sale amount (0.0500 = 5 %); editable by admins';
comment on column public.commission_tiers.plan is 'free | starter | pro (the seller''s current_plan())';
comment on column public.commission_tiers.rate is 'Fraction of the amount taken as commission, 0 <= rate < 1';

drop trigger if exists commission_tiers_set_updated_at on public.commission_tiers;
create trigger commission_tiers_set_updated_at
  before update on public.commission_tiers
  for each row execute function public.set_updated_at();

-- Defaults; rates edited since are kept.
insert into public.commission_tiers (plan, rate, description) values
  ('free', 0.1000, 'Free plan: 10 % of the sale'),
  ('starter', 0.0700, 'Starter plan: 7 % of the sale'),
  ('pro', 0.0500, 'Pro plan: 5 % of the sale')
on conflict (plan) do nothing;

alter table public.commission_tiers enable row level security;

drop policy if exists "Anyone can read the commission tiers" on public.commission_tiers;
create policy "Anyone can read the commission tiers" on public.commission_tiers
  for select to anon, authenticated
  using (true);

drop policy if exists "Admins can change commission rates" on public.commission_tiers;
create policy "Admins can change commission rates" on public.commission_tiers
  for update to authenticated
  using ((select public.is_admin()))
  with check ((select public.is_admin()));

revoke all on table public.commission_tiers from anon, authenticated;
grant select on table public.commission_tiers to anon, authenticated;
grant update (rate, description) on table public.commission_tiers to authenticated;
grant all on table public.commission_tiers to service_role;

-- -----------------------------------------------------------------------------
-- calculate_commission(): the fee on an amount for a seller
-- -----------------------------------------------------------------------------
create or replace function public.calculate_commission(p_amount numeric, p_seller_id uuid)
returns numeric
language plpgsql
stable
-- Definer rights: reads the seller's plan (current_plan), which RLS keeps
-- from other users; assert_may_ask_about() keeps a client to its own fee.
security definer
set search_path = ''
as $$
declare
  v_plan text;
  v_rate numeric;
begin
  if p_amount is null then
    raise exception 'Cannot calculate commission: amount is null'
      using errcode = '22004';
  end if;
  if p_amount < 0 then
    raise exception 'Cannot calculate commission: amount "%" is negative', p_amount
      using errcode = '22023';
  end if;
  if p_seller_id is null then
    raise exception 'Cannot calculate commission: seller is null'
      using errcode = '22004';
  end if;
  perform public.assert_may_ask_about(p_seller_id, 'calculate commission');
  v_plan := public.plan_of(p_seller_id);
  select t.rate into v_rate from public.commission_tiers t where t.plan = v_plan;
  if v_rate is null then
    raise exception 'Cannot calculate commission: no commission tier for plan "%"', v_plan
      using errcode = 'P0002';
  end if;
  -- round(numeric) rounds half away from zero: half-up for amounts >= 0.
  return round(p_amount * v_rate, 2)::numeric(12, 2);
end
$$;
comment on function public.calculate_commission(numeric, uuid) is
  'The commission on p_amount (major units) for seller p_seller_id: the commission_tiers rate of the seller''s current plan, rounded half-up to cents. Raises 22004 for a null amount or seller and 22023 for a negative amount; a client may ask only about itself';
revoke execute on function public.calculate_commission(numeric, uuid) from public, anon;
grant execute on function public.calculate_commission(numeric, uuid) to authenticated, service_role;
