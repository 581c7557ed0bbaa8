-- =============================================================================
-- Deals: a buyer buying a listing from its seller (minimal)
--
-- Only what the deal functions need to find a deal and its participants;
-- the deals issue adds states, transitions and their audit with
-- `alter table`. Deals are created and changed by the service connection;
-- buyer, seller and admins read them.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- Table
-- -----------------------------------------------------------------------------
create table if not exists public.deals (
  id uuid primary key default gen_random_uuid(),
  listing_id uuid not null,
  buyer_id uuid not null references auth.users (id),
  seller_id uuid not null references auth.users (id),
  amount numeric(12, 2) not null,
  currency text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  -- The deal's seller is the listing's seller.
  constraint deals_listing_id_seller_id_fkey foreign key (listing_id, seller_id)
    references public.listings (id, seller_id),
  constraint deals_buyer_is_not_seller check (buyer_id <> seller_id),
  constraint deals_amount_positive check (amount > 0),
  constraint deals_currency_iso_4217 check (currency ~ '^[A-Z]{3}$')
);

comment on table public.deals is
  'A buyer''s purchase of a listing from its seller; dealId in the interface. Written by the service connection; read by its participants and admins. States come with the deals feature';
comment on column public.deals.amount is 'Agreed price in major units of currency';
comment on column public.deals.currency is 'ISO 4217 code, upper case';

create index if not exists deals_listing_id_idx on public.deals (listing_id, seller_id);
create index if not exists deals_buyer_id_idx on public.deals (buyer_id);
create index if not exists deals_seller_id_idx on public.deals (seller_id);

drop trigger if exists deals_set_updated_at on public.deals;
create trigger deals_set_updated_at
  before update on public.deals
  for each row execute function public.set_updated_at();

-- -----------------------------------------------------------------------------
-- Row level security
-- -----------------------------------------------------------------------------
alter table public.deals enable row level security;

drop policy if exists "Deal participants can read their deals and admins all" on public.deals;
create policy "Deal participants can read their deals and admins all" on public.deals
  for select to authenticated
  using (
    buyer_id = (select auth.uid())
    or seller_id = (select auth.uid())
    or (select public.is_admin())
  );

revoke all on table public.deals from anon, authenticated;
grant select on table public.deals to authenticated;
grant all on table public.deals to service_role;

-- -----------------------------------------------------------------------------
-- is_deal_participant(): the deal-participant access rule
-- -----------------------------------------------------------------------------
create or replace function public.is_deal_participant(p_deal uuid, p_user uuid)
returns boolean
language plpgsql
stable
-- Definer rights: the access rule runs before the caller is known to be
-- allowed to read the deal; assert_may_ask_about() keeps a client to itself.
security definer
set search_path = ''
as $$
begin
  if p_deal is null or p_user is null then
    return false;
  end if;
  perform public.assert_may_ask_about(p_user, 'check deal participation');
  return exists (
    select 1 from public.deals d
    where d.id = p_deal and (d.buyer_id = p_user or d.seller_id = p_user)
  );
end
$$;
comment on function public.is_deal_participant(uuid, uuid) is
  'True when p_user is the buyer or the seller of deal p_deal; false for nulls and unknown deals. Admins are not participants. A client may ask only about itself';
revoke execute on function public.is_deal_participant(uuid, uuid) from public, anon;
grant execute on function public.is_deal_participant(uuid, uuid) to authenticated, service_role;
