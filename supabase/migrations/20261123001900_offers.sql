-- =============================================================================
-- Offers: a buyer proposes a price for a listing, its seller accepts or declines
--
-- A signed-in buyer makes an offer on an approved listing that is not their
-- own and has no active deal (a deal whose status is not cancelled or
-- refunded), in the listing's currency, with an optional message. The offer
-- is pending until the listing's seller accepts or declines it, its buyer
-- withdraws it, or it lapses at expires_at (a week unless the buyer says
-- otherwise). Accepting creates the deal at the offered amount and currency
-- and declines every other pending offer on the listing. A buyer has at most
-- one pending offer per listing; a new one needs the old one gone first.
--
-- Status state machine (enforced by guard_offer_state()):
--
--            ┌─ accept_offer (seller) ──► accepted    deal_id = the new deal
--   pending ─┼─ decline_offer (seller) ─► declined
--            ├─ withdraw_offer (buyer) ─► withdrawn
--            └─ expires_at passed ─────► expired
--
--   from     to         who / how
--   pending  accepted   the listing's seller or the service connection:
--                       accept_offer()
--   pending  declined   the listing's seller or the service connection:
--                       decline_offer(); accept_offer() declines the
--                       listing's other pending offers
--   pending  withdrawn  the buyer or the service connection: withdraw_offer()
--   pending  expired    expire_offers() (scheduled, service role); also
--                       accept_offer() for the listing's other lapsed offers,
--                       and a buyer's new offer for their own lapsed offer on
--                       the same listing
--
-- accepted, declined, withdrawn and expired are final. An offer's terms
-- (listing, buyer, amount, currency, message) never change: a buyer who
-- wants another price withdraws and offers again. Any other change fails
-- with SQLSTATE PT409. Leaving pending stamps decided_at.
--
-- An offer past expires_at is expired even while its row still says
-- pending: accept, decline and withdraw refuse it with PT409. A refusal
-- rolls its transaction back, so the refused call cannot also mark the row;
-- the paths listed above do.
--
-- A listing that leaves approved (archived, taken down, back to review)
-- keeps its pending offers; they cannot be accepted until it is approved
-- again, and they lapse as usual. When the deal an offer became is
-- cancelled or refunded, the listing takes offers again; the offers that
-- accepting declined stay declined.
--
-- Who writes: buyers insert their own offers (RLS and a column-level grant:
-- listing_id, amount, currency, message, expires_at; buyer_id defaults to
-- auth.uid()). Every other change goes through accept_offer(),
-- decline_offer(), withdraw_offer() (definer rights, the caller checked
-- first) or the service connection; clients never update or delete offers.
-- The service connection's offers obey the same rules (status, expiry,
-- currency, buyer not the seller, listing open for offers) through the
-- triggers; only RLS and the grants are the clients' alone.
-- Buyers read their offers, sellers the offers on their listings, admins all.
--
-- Concurrency: the lock order is the listing row, then its offers.
-- accept_offer() locks the listing (for update) and then the offer, so
-- every accept on one listing queues on the listing row, and the one that
-- goes first leaves an accepted offer, declined rivals and an active deal
-- for the next to find: one deal, however many accepts race. A new offer
-- locks its listing (for share) after its row is written and checks again
-- there, so it cannot slip in beside a deal being created.
--
-- SQLSTATEs: 42501 not allowed (RLS, grants, caller checks; 403), P0002 no
-- such offer (404), PT409 the offer or listing is not in a state for it
-- (409), 23505 a second pending offer by one buyer on one listing (409),
-- 23514 an invalid offer: expiry not in the future, another currency than
-- the listing's, amount, message length; and a buyer who is the listing's
-- seller, when the service connection writes it (a client's offer on its
-- own listing fails RLS, 42501) (400).
--
-- Realtime (critical channel): every new offer and every status change is
-- broadcast to the buyer's and the seller's private topics user:<id>.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- Table
-- -----------------------------------------------------------------------------
create table if not exists public.offers (
  id uuid primary key default gen_random_uuid(),
  listing_id uuid not null references public.listings (id) on delete cascade,
  buyer_id uuid not null default auth.uid() references auth.users (id) on delete cascade,
  amount numeric(12, 2) not null,
  currency text not null,
  message text,
  status text not null default 'pending',
  expires_at timestamptz not null default (now() + interval '7 days'),
  deal_id uuid unique references public.deals (id),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  decided_at timestamptz,
  constraint offers_amount_positive check (amount > 0),
  constraint offers_currency_iso_4217 check (currency ~ '^[A-Z]{3}$'),
  constraint offers_message_length check (char_length(message) <= 2000),
  constraint offers_status_known check (
    status in ('pending', 'accepted', 'declined', 'withdrawn', 'expired')
  ),
  constraint offers_deal_when_accepted check ((status = 'accepted') = (deal_id is not null)),
  constraint offers_decided_when_not_pending check ((status = 'pending') = (decided_at is null))
);

comment on table public.offers is
  'A buyer''s proposed price for a listing. Status: pending -> accepted | declined | withdrawn | expired, all final (see the offers migration header). Buyers insert; the rest goes through accept_offer, decline_offer, withdraw_offer and expire_offers';
comment on column public.offers.listing_id is 'The listing the offer is for';
comment on column public.offers.buyer_id is 'The user making the offer; defaults to the signed-in user';
comment on column public.offers.amount is 'Offered price in major units of currency; the deal''s amount once accepted';
comment on column public.offers.currency is 'ISO 4217 code, upper case; always the listing''s currency when the offer was made';
comment on column public.offers.message is 'The buyer''s note to the seller (at most 2000 characters)';
comment on column public.offers.status is
  'pending | accepted | declined | withdrawn | expired; changed only along the transitions in the offers migration header';
comment on column public.offers.expires_at is
  'When a pending offer lapses (in the future when made; default a week); past it the offer counts as expired';
comment on column public.offers.deal_id is 'The deal the offer became; set exactly when the offer is accepted';
comment on column public.offers.created_at is 'When the offer was made';
comment on column public.offers.updated_at is 'Moves on every change (trigger)';
comment on column public.offers.decided_at is 'When the offer left pending (accepted, declined, withdrawn or expired)';

-- -----------------------------------------------------------------------------
-- deals.offer_id: the offer a deal came from
-- -----------------------------------------------------------------------------
alter table public.deals
  add column if not exists offer_id uuid unique references public.offers (id);
comment on column public.deals.offer_id is
  'The accepted offer this deal came from (accept_offer); null for deals created otherwise';

-- -----------------------------------------------------------------------------
-- Indexes
-- -----------------------------------------------------------------------------
-- One pending offer per buyer and listing (23505 for a second one).
create unique index if not exists offers_one_pending_per_buyer_and_listing
  on public.offers (listing_id, buyer_id)
  where status = 'pending';
comment on index public.offers_one_pending_per_buyer_and_listing is
  'A buyer has at most one pending offer on a listing';
-- A buyer's offers, newest first.
create index if not exists offers_buyer_id_created_at_idx
  on public.offers (buyer_id, created_at desc);
-- The offers on a listing (the seller's list, the rivals accept_offer declines).
create index if not exists offers_listing_id_created_at_idx
  on public.offers (listing_id, created_at desc);
-- The lapsed pending offers expire_offers() looks for.
create index if not exists offers_pending_expires_at_idx
  on public.offers (expires_at)
  where status = 'pending';

-- -----------------------------------------------------------------------------
-- listing_open_for_offers(): approved and without an active deal
-- -----------------------------------------------------------------------------
create or replace function public.listing_open_for_offers(p_listing uuid)
returns boolean
language plpgsql
stable
-- Definer rights: the insert policy asks it for a buyer, who may read
-- neither the listing row nor its deals. It tells only what the public
-- listing already shows: on sale, and not under a deal.
security definer
set search_path = ''
as $$
begin
  return exists (
    select 1 from public.listings l
    where l.id = p_listing
      and l.review_status = 'approved'
      and not exists (
        select 1 from public.deals d
        where d.listing_id = l.id and d.status not in ('cancelled', 'refunded')
      )
  );
end
$$;
comment on function public.listing_open_for_offers(uuid) is
  'True when the listing is approved and has no active deal (one whose status is not cancelled or refunded): it takes offers, and an offer on it may be accepted';
revoke execute on function public.listing_open_for_offers(uuid) from public, anon;
grant execute on function public.listing_open_for_offers(uuid) to authenticated, service_role;

-- -----------------------------------------------------------------------------
-- guard_offer_state(): the status state machine
-- -----------------------------------------------------------------------------
create or replace function public.guard_offer_state()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if tg_op = 'INSERT' then
    -- Clients cannot name these columns (grants); this holds for every writer.
    if new.status is distinct from 'pending' or new.deal_id is not null
       or new.decided_at is not null then
      raise exception 'Cannot make offer: a new offer starts "pending" without a deal, not "%"',
        new.status using errcode = 'PT409';
    end if;
    if new.expires_at <= now() then
      raise exception 'Cannot make offer: its expiry "%" is not in the future', new.expires_at
        using errcode = '23514';
    end if;
    return new;
  end if;

  if (new.id, new.listing_id, new.buyer_id, new.amount, new.currency, new.message, new.created_at)
     is distinct from
     (old.id, old.listing_id, old.buyer_id, old.amount, old.currency, old.message, old.created_at)
  then
    raise exception 'Cannot change offer "%": its terms are fixed; withdraw it and make a new offer',
      old.id using errcode = 'PT409';
  end if;

  if new.status = old.status then
    if new.deal_id is distinct from old.deal_id
       or new.decided_at is distinct from old.decided_at
       or (old.status <> 'pending' and new.expires_at is distinct from old.expires_at) then
      raise exception 'Cannot change offer "%": it is %, and its deal, decision and expiry change only with its status',
        old.id, old.status using errcode = 'PT409';
    end if;
    return new;
  end if;

  if old.status <> 'pending'
     or new.status not in ('accepted', 'declined', 'withdrawn', 'expired') then
    raise exception 'Cannot change offer "%": "%" cannot become "%"', old.id, old.status, new.status
      using errcode = 'PT409';
  end if;
  if (new.status = 'accepted') <> (new.deal_id is not null) then
    raise exception 'Cannot change offer "%" to "%": an offer has a deal exactly when it is accepted',
      old.id, new.status using errcode = 'PT409';
  end if;
  new.decided_at := now();
  return new;
end
$$;
comment on function public.guard_offer_state() is
  'Trigger on offers: a new offer starts pending, without deal or decision, expiring in the future (PT409, 23514); afterwards only pending -> accepted (with its deal) | declined | withdrawn | expired, the terms never change (PT409 otherwise), and leaving pending stamps decided_at';
revoke execute on function public.guard_offer_state() from public, anon, authenticated;

drop trigger if exists offers_guard_state on public.offers;
create trigger offers_guard_state
  before insert or update on public.offers
  for each row execute function public.guard_offer_state();

drop trigger if exists offers_set_updated_at on public.offers;
create trigger offers_set_updated_at
  before update on public.offers
  for each row execute function public.set_updated_at();

-- -----------------------------------------------------------------------------
-- expire_lapsed_offer(): a new offer replaces the buyer's lapsed one
-- -----------------------------------------------------------------------------
create or replace function public.expire_lapsed_offer()
returns trigger
language plpgsql
-- Definer rights: the buyer may not update offers; this only marks expired
-- what already is (the buyer's own pending offer on the listing, past its
-- expiry), so that the one-pending-offer index does not refuse the new one.
security definer
set search_path = ''
as $$
begin
  if exists (
    select 1 from public.offers o
    where o.listing_id = new.listing_id and o.buyer_id = new.buyer_id
      and o.status = 'pending' and o.expires_at <= now()
  ) then
    -- The lock order: the listing first, then its offers.
    perform 1 from public.listings l where l.id = new.listing_id for share;
    update public.offers o set status = 'expired'
    where o.listing_id = new.listing_id and o.buyer_id = new.buyer_id
      and o.status = 'pending' and o.expires_at <= now();
  end if;
  return new;
end
$$;
comment on function public.expire_lapsed_offer() is
  'Trigger on offers (before insert): marks the buyer''s pending offer on the same listing expired when it is past expires_at, so that a new offer can take its place';
revoke execute on function public.expire_lapsed_offer() from public, anon, authenticated;

-- Fires after offers_guard_state (triggers fire in name order), so an
-- invalid new offer changes nothing.
drop trigger if exists offers_replace_lapsed on public.offers;
create trigger offers_replace_lapsed
  before insert on public.offers
  for each row execute function public.expire_lapsed_offer();

-- -----------------------------------------------------------------------------
-- check_offer_listing(): the offer agrees with its listing, under its lock
-- -----------------------------------------------------------------------------
create or replace function public.check_offer_listing()
returns trigger
language plpgsql
-- Definer rights: the buyer may not read the listing row or its deals.
-- After insert, so RLS has refused a client's offer on a listing it may not
-- make one on before anything about that listing is told in a message.
security definer
set search_path = ''
as $$
declare
  v_listing record;
begin
  -- Waits for an accept_offer() in progress on the listing, then looks again
  -- with what it committed (the insert policy saw the statement's snapshot).
  select l.seller_id, l.currency, l.review_status into v_listing
  from public.listings l where l.id = new.listing_id
  for share;
  if not found then
    return null; -- the foreign key refuses it
  end if;
  if new.buyer_id = v_listing.seller_id then
    raise exception 'Cannot make offer on listing "%": it is the buyer''s own listing', new.listing_id
      using errcode = '23514';
  end if;
  if new.currency <> v_listing.currency then
    raise exception 'Cannot make offer on listing "%": the offer is in "%" but the listing is priced in "%"',
      new.listing_id, new.currency, v_listing.currency using errcode = '23514';
  end if;
  if v_listing.review_status <> 'approved' then
    raise exception 'Cannot make offer on listing "%": it is not on sale', new.listing_id
      using errcode = 'PT409';
  end if;
  if not public.listing_open_for_offers(new.listing_id) then
    raise exception 'Cannot make offer on listing "%": it already has a deal in progress',
      new.listing_id using errcode = 'PT409';
  end if;
  return null;
end
$$;
comment on function public.check_offer_listing() is
  'Trigger on offers (after insert): under a share lock on the listing, refuses an offer by the listing''s seller or in another currency than the listing''s (23514), or on a listing that is not approved or has an active deal (PT409)';
revoke execute on function public.check_offer_listing() from public, anon, authenticated;

drop trigger if exists offers_check_listing on public.offers;
create trigger offers_check_listing
  after insert on public.offers
  for each row execute function public.check_offer_listing();

-- -----------------------------------------------------------------------------
-- Row level security
-- -----------------------------------------------------------------------------
alter table public.offers enable row level security;

drop policy if exists "Buyers can make offers on listings on sale that are not their own"
  on public.offers;
create policy "Buyers can make offers on listings on sale that are not their own"
  on public.offers
  for insert to authenticated
  with check (
    buyer_id = (select auth.uid())
    and status = 'pending'
    and deal_id is null
    and public.listing_open_for_offers(listing_id)
    -- A seller sees their own listings through the listings policy.
    and not exists (
      select 1 from public.listings l
      where l.id = offers.listing_id and l.seller_id = (select auth.uid())
    )
  );
comment on policy "Buyers can make offers on listings on sale that are not their own"
  on public.offers is
  'A buyer inserts a pending offer of their own on an approved listing of someone else with no active deal';

drop policy if exists "Buyers can read their own offers" on public.offers;
create policy "Buyers can read their own offers" on public.offers
  for select to authenticated
  using (buyer_id = (select auth.uid()));
comment on policy "Buyers can read their own offers" on public.offers is
  'A buyer reads the offers they made, in every status';

drop policy if exists "Sellers can read the offers on their listings" on public.offers;
create policy "Sellers can read the offers on their listings" on public.offers
  for select to authenticated
  using (
    exists (
      select 1 from public.listings l
      where l.id = offers.listing_id and l.seller_id = (select auth.uid())
    )
  );
comment on policy "Sellers can read the offers on their listings" on public.offers is
  'A seller reads every offer made on their listings';

drop policy if exists "Admins can read all offers" on public.offers;
create policy "Admins can read all offers" on public.offers
  for select to authenticated
  using ((select public.is_admin()));
comment on policy "Admins can read all offers" on public.offers is 'Admins read every offer';

-- Clients insert only the terms of an offer; status, deal and stamps are the
-- database's, and changes go through the functions below.
revoke all on table public.offers from anon, authenticated;
grant select on table public.offers to authenticated;
grant insert (listing_id, amount, currency, message, expires_at) on table public.offers
  to authenticated;
grant all on table public.offers to service_role;

-- -----------------------------------------------------------------------------
-- assert_offer_pending(): the one refusal of a decided or lapsed offer
-- -----------------------------------------------------------------------------
create or replace function public.assert_offer_pending(p_offer public.offers, p_action text)
returns void
language plpgsql
stable
set search_path = ''
as $$
begin
  if p_offer.status <> 'pending' then
    raise exception 'Cannot % offer "%": %', p_action, p_offer.id,
      case p_offer.status
        when 'accepted' then 'it was already accepted'
        when 'declined' then 'the seller already declined it'
        when 'withdrawn' then 'the buyer already withdrew it'
        when 'expired' then 'it has expired'
        else format('it is "%s"', p_offer.status)
      end
      using errcode = 'PT409';
  end if;
  if p_offer.expires_at <= now() then
    raise exception 'Cannot % offer "%": it expired at %', p_action, p_offer.id,
      to_char(p_offer.expires_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI "UTC"')
      using errcode = 'PT409';
  end if;
end
$$;
comment on function public.assert_offer_pending(public.offers, text) is
  'Raises PT409 (with a message for the client naming p_action) unless the offer is pending and not past expires_at';
revoke execute on function public.assert_offer_pending(public.offers, text)
  from public, anon, authenticated;
grant execute on function public.assert_offer_pending(public.offers, text) to service_role;

-- -----------------------------------------------------------------------------
-- accept_offer(): the seller accepts; the offer becomes a deal
-- -----------------------------------------------------------------------------
create or replace function public.accept_offer(p_offer uuid)
returns uuid
language plpgsql
-- Definer rights: a seller may neither update offers nor insert deals; this
-- checks that the caller is the listing's seller (or the service
-- connection) first.
security definer
set search_path = ''
as $$
declare
  v_listing_id uuid;
  v_listing public.listings;
  v_offer public.offers;
  v_cause text;
  v_deal uuid;
begin
  -- listing_id never changes, so it may be read before the locks.
  select o.listing_id into v_listing_id from public.offers o where o.id = p_offer;
  if not found then
    raise exception 'Cannot accept offer "%": it does not exist', p_offer using errcode = 'P0002';
  end if;

  -- The lock order: the listing, then the offer. Every accept on the listing
  -- queues here; the next one in finds what the previous one committed.
  select * into v_listing from public.listings l where l.id = v_listing_id for update;
  if not found then
    raise exception 'Cannot accept offer "%": it does not exist', p_offer using errcode = 'P0002';
  end if;
  if public.is_client_request() and v_listing.seller_id is distinct from auth.uid() then
    raise exception 'Cannot accept offer "%": only the listing''s seller may', p_offer
      using errcode = '42501';
  end if;
  select * into v_offer from public.offers o where o.id = p_offer for update;
  if not found then
    raise exception 'Cannot accept offer "%": it does not exist', p_offer using errcode = 'P0002';
  end if;

  perform public.assert_offer_pending(v_offer, 'accept');
  if v_listing.review_status <> 'approved' then
    raise exception 'Cannot accept offer "%": the listing is not on sale', p_offer
      using errcode = 'PT409';
  end if;
  if not public.listing_open_for_offers(v_listing.id) then
    raise exception 'Cannot accept offer "%": the listing already has a deal in progress', p_offer
      using errcode = 'PT409';
  end if;
  if v_offer.currency <> v_listing.currency then
    raise exception 'Cannot accept offer "%": the listing is now priced in "%", not "%"',
      p_offer, v_listing.currency, v_offer.currency using errcode = 'PT409';
  end if;

  -- The deal's first event (deals_record_creation) says why it exists.
  v_cause := current_setting('marketplace.deal_cause', true);
  perform set_config('marketplace.deal_cause', 'offer_accepted', true);
  insert into public.deals (listing_id, buyer_id, seller_id, amount, currency, offer_id)
  values (v_listing.id, v_offer.buyer_id, v_listing.seller_id, v_offer.amount, v_offer.currency,
          v_offer.id)
  returning id into v_deal;
  perform set_config('marketplace.deal_cause', coalesce(v_cause, ''), true);

  update public.offers o set status = 'accepted', deal_id = v_deal where o.id = p_offer;
  -- The rivals: declined, or expired when they had already lapsed.
  update public.offers o
  set status = case when o.expires_at <= now() then 'expired' else 'declined' end
  where o.listing_id = v_listing.id and o.status = 'pending' and o.id <> p_offer;
  return v_deal;
end
$$;
comment on function public.accept_offer(uuid) is
  'The listing''s seller (or the service connection; 42501 for others) accepts a pending, unexpired offer on an approved listing without an active deal (PT409 otherwise; P0002 for an unknown offer): creates the deal at the offered amount and currency (deal_events cause offer_accepted), marks the offer accepted with its deal, declines the listing''s other pending offers and returns the deal''s id. Serialized per listing by a row lock, so concurrent accepts create one deal';
revoke execute on function public.accept_offer(uuid) from public, anon;
grant execute on function public.accept_offer(uuid) to authenticated, service_role;

-- -----------------------------------------------------------------------------
-- decline_offer(): the seller says no
-- -----------------------------------------------------------------------------
create or replace function public.decline_offer(p_offer uuid)
returns void
language plpgsql
-- Definer rights: a seller may not update offers; this checks that the
-- caller is the listing's seller (or the service connection) first.
security definer
set search_path = ''
as $$
declare
  v_seller uuid;
  v_offer public.offers;
begin
  select l.seller_id into v_seller
  from public.offers o join public.listings l on l.id = o.listing_id
  where o.id = p_offer;
  if not found then
    raise exception 'Cannot decline offer "%": it does not exist', p_offer using errcode = 'P0002';
  end if;
  if public.is_client_request() and v_seller is distinct from auth.uid() then
    raise exception 'Cannot decline offer "%": only the listing''s seller may', p_offer
      using errcode = '42501';
  end if;
  select * into v_offer from public.offers o where o.id = p_offer for update;
  if not found then
    raise exception 'Cannot decline offer "%": it does not exist', p_offer using errcode = 'P0002';
  end if;
  perform public.assert_offer_pending(v_offer, 'decline');
  update public.offers o set status = 'declined' where o.id = p_offer;
end
$$;
comment on function public.decline_offer(uuid) is
  'The listing''s seller (or the service connection; 42501 for others) declines a pending, unexpired offer (PT409 otherwise; P0002 for an unknown offer)';
revoke execute on function public.decline_offer(uuid) from public, anon;
grant execute on function public.decline_offer(uuid) to authenticated, service_role;

-- -----------------------------------------------------------------------------
-- withdraw_offer(): the buyer takes the offer back
-- -----------------------------------------------------------------------------
create or replace function public.withdraw_offer(p_offer uuid)
returns void
language plpgsql
-- Definer rights: a buyer may not update offers (which would let them set
-- any status); this checks that the caller is the offer's buyer (or the
-- service connection) first and makes the one change a buyer may make.
security definer
set search_path = ''
as $$
declare
  v_buyer uuid;
  v_offer public.offers;
begin
  select o.buyer_id into v_buyer from public.offers o where o.id = p_offer;
  if not found then
    raise exception 'Cannot withdraw offer "%": it does not exist', p_offer using errcode = 'P0002';
  end if;
  if public.is_client_request() and v_buyer is distinct from auth.uid() then
    raise exception 'Cannot withdraw offer "%": only its buyer may', p_offer
      using errcode = '42501';
  end if;
  select * into v_offer from public.offers o where o.id = p_offer for update;
  if not found then
    raise exception 'Cannot withdraw offer "%": it does not exist', p_offer using errcode = 'P0002';
  end if;
  perform public.assert_offer_pending(v_offer, 'withdraw');
  update public.offers o set status = 'withdrawn' where o.id = p_offer;
end
$$;
comment on function public.withdraw_offer(uuid) is
  'The offer''s buyer (or the service connection; 42501 for others) withdraws a pending, unexpired offer (PT409 otherwise; P0002 for an unknown offer)';
revoke execute on function public.withdraw_offer(uuid) from public, anon;
grant execute on function public.withdraw_offer(uuid) to authenticated, service_role;

-- -----------------------------------------------------------------------------
-- expire_offers(): the scheduled sweep of lapsed offers
-- -----------------------------------------------------------------------------
create or replace function public.expire_offers()
returns integer
language plpgsql
-- Invoker rights: only the service role may execute it.
set search_path = ''
as $$
declare
  v_count integer;
begin
  -- Rows locked by an accept or a decision in progress are left for the next
  -- run (they are being decided now): the sweep never waits, so it never
  -- deadlocks with accept_offer().
  with lapsed as (
    select o.id from public.offers o
    where o.status = 'pending' and o.expires_at <= now()
    for update skip locked
  )
  update public.offers o set status = 'expired'
  from lapsed
  where o.id = lapsed.id;
  get diagnostics v_count = row_count;
  return v_count;
end
$$;
comment on function public.expire_offers() is
  'Marks every pending offer past expires_at expired and returns how many; offers locked by a decision in progress wait for the next run. For the scheduler (service role only)';
revoke execute on function public.expire_offers() from public, anon, authenticated;
grant execute on function public.expire_offers() to service_role;

-- -----------------------------------------------------------------------------
-- Realtime: every new offer and status change to the buyer and the seller
-- -----------------------------------------------------------------------------
create or replace function public.broadcast_offer_change()
returns trigger
language plpgsql
-- Definer rights: buyers insert offers as authenticated, which may neither
-- read the listing's seller nor insert into realtime.messages.
security definer
set search_path = ''
as $$
declare
  v_seller uuid;
begin
  select l.seller_id into v_seller from public.listings l where l.id = new.listing_id;
  perform realtime.broadcast_changes(
    'user:' || new.buyer_id::text, tg_op, tg_op, tg_table_name, tg_table_schema, new, old
  );
  if v_seller is not null then
    perform realtime.broadcast_changes(
      'user:' || v_seller::text, tg_op, tg_op, tg_table_name, tg_table_schema, new, old
    );
  end if;
  return null;
end
$$;
comment on function public.broadcast_offer_change() is
  'Trigger on offers: broadcasts a new offer and every status change to the buyer''s and the listing seller''s private topics user:<id>';
revoke execute on function public.broadcast_offer_change() from public, anon, authenticated;

drop trigger if exists offers_broadcast_insert on public.offers;
create trigger offers_broadcast_insert
  after insert on public.offers
  for each row execute function public.broadcast_offer_change();

-- Not a column trigger (`update of status`): it fires for every update that
-- changes the status, whether or not the statement names the column.
drop trigger if exists offers_broadcast_status_change on public.offers;
create trigger offers_broadcast_status_change
  after update on public.offers
  for each row
  when (old.status is distinct from new.status)
  execute function public.broadcast_offer_change();
