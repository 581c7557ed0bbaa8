-- =============================================================================
-- Confidential blur: one rule decides every hidden value
--
-- A field of a listing is hidden from a viewer when
--
--   the plan blur hides it (blurred_fields, by the viewer's plan: as before)
--   OR it is one of the listing's confidential fields (access_mode = 'nda',
--      listings.confidential_fields) and the viewer has no approved access
--      (listing_access_requests, status approved)
--
-- The seller and admins see everything. An approved buyer's plan blur still
-- applies: access lifts the confidentiality layer, not the plan's.
--
-- The confidentiality layer is one function, confidential_fields_hidden():
--
--   access_mode   seller or admin   approved access   hidden by confidentiality
--   open          any               any               nothing
--   nda           yes               any               nothing
--   nda           no                yes               nothing
--   nda           no                no                confidential_fields
--
-- and everything that shows listing data composes it with the plan blur:
--   * listing_view_secure: a column is NULL when the plan hides it or the
--     confidentiality layer does; blurred_fields names what the plan hid (as
--     before) and the new confidential_fields_hidden column what the
--     confidentiality layer hid (the frontend says "sign the NDA" for the
--     one and "upgrade" for the other); access_mode is shown too;
--   * listing_visibility(listing, user): the same answer for one viewer and
--     one listing, for the server: can_view_field(), the price-alert matcher
--     (through can_view_field), the price-alert delivery and the new-listings
--     digest (_shared/price_alerts/notify_user.ts,
--     _shared/notifications/listings_digest_job.ts);
--   * shared/blur.ts mirrors it for the frontend (isFieldHidden), and
--     tests/db/confidential_blur.test.ts holds the view, can_view_field(),
--     listing_visibility() and shared/blur.ts to one matrix of plan, access
--     state, field and viewer.
--
-- Written for the explore page, which reads the view on every visit
-- (bench/listing_view.ts: the view against the view before this change, and
-- against the raw table on confidential listings). As before, the caller is
-- looked up once per query by listing_viewer_rows() and each listing joins
-- exactly one of its rows, which says what to hide; the confidentiality
-- layer is one more thing that row decides:
--
--   * listing_viewer_rows() returns four rows instead of two: for the
--     caller's own listings and everyone else's (own_listing), each unlocked
--     and locked (locked), read as before from the precomputed policy
--     (blurred_fields_by_viewer, now one row per viewer class, own_listing
--     and lock). A listing joins the row whose locked says whether the
--     listing is nda and the caller has no approved access; the locked row
--     of someone else's listings has hide_confidential set (never for
--     admins, nor for the seller, whose rows see everything). Whether a
--     listing is locked is decided once per listing, in the join.
--   * Who has approved access is kept on the listing: listings.access_buyers,
--     the buyers whose request is approved, maintained by a trigger on
--     listing_access_requests in the transaction of every move into or out
--     of approved (the requests stay the record; tests hold the two equal
--     after every move and every race). The test is
--     `user = any (access_buyers)` over the few buyers of that one listing,
--     in a row the page reads anyway. Decisions update their listing's row,
--     so they lock the listing for update (not for share), one at a time per
--     listing (the listing access migration's functions take that lock).
--   * Which fields a listing keeps confidential is also on the row, one
--     generated boolean per blur-able field (confidential_seller, ...), so a
--     hidden column is `hide_<field> or (hide_confidential and
--     confidential_<field>)`: two flags, no array to search.
--
-- Measured before choosing (100k listings, half of them nda, a buyer with
-- access to 400; medians of EXPLAIN's planning and execution times):
-- reading the caller's approved listings into an array once per query cost
-- that buyer 0.15 to 0.2 ms per query to build, and its scan per row and
-- column made an offset page 8x slower; an index probe per confidential row
-- (a subplan, or a function call) cost a nine-row page more than the whole
-- view did before; the rule spelled out in each column doubled the view's
-- planning time (0.33 ms against 0.16 ms), and confidential_fields_hidden()
-- inlined into each column more (0.40 ms: a SQL function is inlined once per
-- call site). This way a nine-row page of open listings plans in 0.21 ms
-- against 0.17 ms before and executes in 0.16 ms against 0.14 ms;
-- bench/listing_view.ts measures it end to end (docs/benchmarks.md).
--
-- The view does not call confidential_fields_hidden() (that costs
-- planning); listing_visibility() does, and tests/db/confidential_blur.test.ts
-- holds every column of the view to listing_visibility(), can_view_field()
-- and shared/blur.ts for every plan, access state, field and viewer.
--
-- listing_viewer_row gains locked and hide_confidential; changing the type
-- needs listing_view_secure and listing_viewer_rows() dropped first (as the
-- blur policy migration says), so both are recreated here, with their grants.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- confidential_fields_hidden(): the confidentiality layer
-- -----------------------------------------------------------------------------
create or replace function public.confidential_fields_hidden(
  p_access_mode text,
  p_confidential_fields text[],
  p_sees_everything boolean,
  p_has_access boolean
)
returns text[]
language sql
immutable
parallel safe
set search_path = ''
return case
  when p_access_mode = 'nda' and not p_sees_everything and not p_has_access
    then p_confidential_fields
  else '{}'::text[]
end;
comment on function public.confidential_fields_hidden(text, text[], boolean, boolean) is
  'The confidentiality layer of the blur rule: the listing''s confidential fields when it is nda (p_access_mode), the viewer is neither its seller nor an admin (p_sees_everything) and has no approved access (p_has_access); else none. listing_visibility() asks it; listing_view_secure decides the same in its join (see the confidential blur migration)';
revoke execute on function public.confidential_fields_hidden(text, text[], boolean, boolean) from public;
grant execute on function public.confidential_fields_hidden(text, text[], boolean, boolean)
  to anon, authenticated, service_role;

-- -----------------------------------------------------------------------------
-- listing_fields: the view's two new columns
-- -----------------------------------------------------------------------------
insert into public.listing_fields (field_key, column_name, visibility, description) values
  ('access_mode', 'access_mode', 'listing',
   'open, or nda: confidential fields need approved access (an NDA-gated request)'),
  ('confidential_fields_hidden', 'confidential_fields_hidden', 'listing',
   'The confidential field keys hidden from the viewer on this listing (no approved access)')
on conflict (field_key) do nothing;

-- -----------------------------------------------------------------------------
-- listings: who has approved access, and which fields are confidential
-- -----------------------------------------------------------------------------
alter table public.listings
  add column if not exists access_buyers uuid[] not null default '{}',
  add column if not exists confidential_seller boolean
    generated always as ('seller' = any (confidential_fields)) stored,
  add column if not exists confidential_description boolean
    generated always as ('description' = any (confidential_fields)) stored,
  add column if not exists confidential_url boolean
    generated always as ('url' = any (confidential_fields)) stored,
  add column if not exists confidential_asking_price boolean
    generated always as ('asking_price' = any (confidential_fields)) stored,
  add column if not exists confidential_monthly_revenue boolean
    generated always as ('monthly_revenue' = any (confidential_fields)) stored,
  add column if not exists confidential_monthly_profit boolean
    generated always as ('monthly_profit' = any (confidential_fields)) stored,
  add column if not exists confidential_monthly_traffic boolean
    generated always as ('monthly_traffic' = any (confidential_fields)) stored;
comment on column public.listings.access_buyers is
  'The buyers with approved access to the listing (listing_access_requests approved), kept by the trigger on listing_access_requests; read by listing_view_secure and listing_visibility(). Written by the database only';
comment on column public.listings.confidential_seller is
  'Whether seller is in confidential_fields (generated): what listing_view_secure reads';
comment on column public.listings.confidential_description is
  'Whether description is in confidential_fields (generated): what listing_view_secure reads';
comment on column public.listings.confidential_url is
  'Whether url is in confidential_fields (generated): what listing_view_secure reads';
comment on column public.listings.confidential_asking_price is
  'Whether asking_price is in confidential_fields (generated): what listing_view_secure reads';
comment on column public.listings.confidential_monthly_revenue is
  'Whether monthly_revenue is in confidential_fields (generated): what listing_view_secure reads';
comment on column public.listings.confidential_monthly_profit is
  'Whether monthly_profit is in confidential_fields (generated): what listing_view_secure reads';
comment on column public.listings.confidential_monthly_traffic is
  'Whether monthly_traffic is in confidential_fields (generated): what listing_view_secure reads';

-- Filled for requests approved before this column existed (none, unless the
-- previous migration's tables were used in between).
update public.listings l
set access_buyers = coalesce((
  select array_agg(r.buyer_id order by r.buyer_id) from public.listing_access_requests r
  where r.listing_id = l.id and r.status = 'approved'
), '{}')
where exists (
  select 1 from public.listing_access_requests r where r.listing_id = l.id and r.status = 'approved'
);

create or replace function public.sync_listing_access_buyers()
returns trigger
language plpgsql
-- Definer rights: decisions run as the client, which may not write the
-- listing's column.
security definer
set search_path = ''
as $$
begin
  if tg_op in ('UPDATE', 'DELETE') and old.status = 'approved'
     and (tg_op = 'DELETE' or new.status <> 'approved') then
    update public.listings l set access_buyers = array_remove(l.access_buyers, old.buyer_id)
    where l.id = old.listing_id and old.buyer_id = any (l.access_buyers);
  end if;
  if tg_op in ('INSERT', 'UPDATE') and new.status = 'approved'
     and (tg_op = 'INSERT' or old.status <> 'approved') then
    update public.listings l set access_buyers = array_append(l.access_buyers, new.buyer_id)
    where l.id = new.listing_id and not (new.buyer_id = any (l.access_buyers));
  end if;
  return null;
end
$$;
comment on function public.sync_listing_access_buyers() is
  'Trigger on listing_access_requests: a request that becomes approved adds its buyer to listings.access_buyers, one that leaves approved (revoked) or is deleted removes them';
revoke execute on function public.sync_listing_access_buyers() from public, anon, authenticated;

drop trigger if exists listing_access_requests_sync_access_buyers on public.listing_access_requests;
create trigger listing_access_requests_sync_access_buyers
  after insert or update of status or delete on public.listing_access_requests
  for each row execute function public.sync_listing_access_buyers();
comment on trigger listing_access_requests_sync_access_buyers on public.listing_access_requests is
  'Keeps listings.access_buyers equal to the buyers with an approved request';

-- access_buyers is not an edit of the listing: as the job columns (listing
-- job columns migration), a change to it leaves updated_at, which price
-- alerts read as "the seller or an admin last changed this listing".
drop trigger if exists listings_set_updated_at on public.listings;
create trigger listings_set_updated_at
  before update on public.listings
  for each row
  when (
    old.views_count is not distinct from new.views_count
    and old.is_sponsored is not distinct from new.is_sponsored
    and old.sponsored_until is not distinct from new.sponsored_until
    and old.access_buyers is not distinct from new.access_buyers
  )
  execute function public.set_updated_at();
comment on trigger listings_set_updated_at on public.listings is
  'Moves updated_at on an edit; an update that changes a job column (views_count, is_sponsored, sponsored_until) or access_buyers leaves it';

-- -----------------------------------------------------------------------------
-- blurred_fields_by_viewer: each policy row twice, unlocked and locked
-- -----------------------------------------------------------------------------
-- The precomputed policy (blur policy migration) gains the lock: per viewer
-- class and own_listing, a row for a listing the viewer may see whole
-- (locked false) and one for a confidential listing they have no approved
-- access to (locked true), whose hide_confidential is set unless the viewer
-- sees everything (their own listing, or an admin).
alter table public.blurred_fields_by_viewer
  add column if not exists locked boolean not null default false,
  add column if not exists hide_confidential boolean not null default false;
comment on table public.blurred_fields_by_viewer is
  'Derived from blurred_fields by trigger (do not edit): per viewer class (a plan, or admin), own_listing and lock, the hide_<field> flags, hide_confidential and the hidden field keys listing_view_secure applies; read through listing_viewer_rows() and listing_viewer()';
comment on column public.blurred_fields_by_viewer.locked is
  'false: the policy for a listing the viewer may see whole; true: for a confidential (nda) listing they have no approved access to';
comment on column public.blurred_fields_by_viewer.hide_confidential is
  'The listing''s confidential fields are hidden too: locked, for a viewer who does not see everything (not their own listing, not an admin)';

do $$
begin
  if (
    select array_agg(a.attname::text order by k.ordinality)
    from pg_index i
    cross join lateral unnest(i.indkey) with ordinality as k (attnum, ordinality)
    join pg_attribute a on a.attrelid = i.indrelid and a.attnum = k.attnum
    where i.indrelid = 'public.blurred_fields_by_viewer'::regclass and i.indisprimary
  ) is distinct from array['viewer_class', 'own_listing', 'locked'] then
    alter table public.blurred_fields_by_viewer drop constraint blurred_fields_by_viewer_pkey;
    alter table public.blurred_fields_by_viewer
      add constraint blurred_fields_by_viewer_pkey primary key (viewer_class, own_listing, locked);
  end if;
end
$$;
comment on constraint blurred_fields_by_viewer_pkey on public.blurred_fields_by_viewer is
  'One policy row per viewer class, own_listing and lock';
comment on index public.blurred_fields_by_viewer_pkey is
  'One policy row per viewer class, own_listing and lock (listing_viewer_rows() reads a class''s four)';

-- As the blur policy migration wrote it, each row twice.
create or replace function public.refresh_blurred_fields_by_viewer()
returns void
language plpgsql
volatile
set search_path = ''
as $$
begin
  -- One refresh at a time (see the blur policy migration).
  lock table public.blurred_fields_by_viewer in share row exclusive mode;
  insert into public.blurred_fields_by_viewer as c (
    viewer_class, own_listing, locked, sees_unapproved, hide_confidential,
    hide_seller, hide_description, hide_url, hide_asking_price,
    hide_monthly_revenue, hide_monthly_profit, hide_monthly_traffic, hidden_fields
  )
  select
    k.viewer_class, o.own_listing, lk.locked, o.own_listing or k.viewer_class = 'admin',
    lk.locked and not (o.own_listing or k.viewer_class = 'admin'),
    'seller' = any (h.hidden), 'description' = any (h.hidden), 'url' = any (h.hidden),
    'asking_price' = any (h.hidden), 'monthly_revenue' = any (h.hidden),
    'monthly_profit' = any (h.hidden), 'monthly_traffic' = any (h.hidden),
    h.hidden
  from (values ('unauth'), ('free'), ('starter'), ('pro'), ('admin')) k (viewer_class)
  cross join (values (false), (true)) o (own_listing)
  cross join (values (false), (true)) lk (locked)
  cross join lateral (
    select coalesce(array_agg(b.field_key order by b.field_key), '{}') as hidden
    from public.blurred_fields b
    where not o.own_listing
      and case k.viewer_class
        when 'unauth' then b.unauth
        when 'free' then b.free
        when 'starter' then b.starter
        when 'pro' then b.pro
        else false
      end
  ) h
  on conflict (viewer_class, own_listing, locked) do update set
    sees_unapproved = excluded.sees_unapproved,
    hide_confidential = excluded.hide_confidential,
    hide_seller = excluded.hide_seller,
    hide_description = excluded.hide_description,
    hide_url = excluded.hide_url,
    hide_asking_price = excluded.hide_asking_price,
    hide_monthly_revenue = excluded.hide_monthly_revenue,
    hide_monthly_profit = excluded.hide_monthly_profit,
    hide_monthly_traffic = excluded.hide_monthly_traffic,
    hidden_fields = excluded.hidden_fields
  where (c.sees_unapproved, c.hide_confidential, c.hide_seller, c.hide_description, c.hide_url,
         c.hide_asking_price, c.hide_monthly_revenue, c.hide_monthly_profit,
         c.hide_monthly_traffic, c.hidden_fields)
    is distinct from
        (excluded.sees_unapproved, excluded.hide_confidential, excluded.hide_seller,
         excluded.hide_description, excluded.hide_url, excluded.hide_asking_price,
         excluded.hide_monthly_revenue, excluded.hide_monthly_profit,
         excluded.hide_monthly_traffic, excluded.hidden_fields);
end
$$;
comment on function public.refresh_blurred_fields_by_viewer() is
  'Internal: recomputes blurred_fields_by_viewer from blurred_fields (the trigger on blurred_fields runs it after every change): per viewer class, own_listing and lock';
revoke execute on function public.refresh_blurred_fields_by_viewer() from public, anon, authenticated;
grant execute on function public.refresh_blurred_fields_by_viewer() to service_role;

select public.refresh_blurred_fields_by_viewer();
-- Twenty rows never reach autovacuum's threshold (see the blur policy migration).
analyze public.blurred_fields_by_viewer;

-- listing_viewer(): the unlocked policy for someone else's listing, as before.
create or replace function public.listing_viewer(p_user uuid)
returns table (
  user_id uuid,
  plan text,
  is_admin boolean,
  hidden_fields text[],
  hide_seller boolean,
  hide_description boolean,
  hide_url boolean,
  hide_asking_price boolean,
  hide_monthly_revenue boolean,
  hide_monthly_profit boolean,
  hide_monthly_traffic boolean
)
language plpgsql
stable
rows 1
-- Definer rights: reads the viewer's subscription and roles and the
-- precomputed policy, which RLS and grants keep from clients;
-- assert_may_ask_about() keeps a client to itself.
security definer
set search_path = ''
as $$
declare
  v_plan text;
  v_admin boolean;
begin
  if p_user is distinct from auth.uid() then
    perform public.assert_may_ask_about(p_user, 'read the blur policy');
  end if;
  v_plan := public.plan_of(p_user);
  -- has_role(p_user, 'admin'), inlined: has_role() would be planned again on
  -- every call.
  v_admin := p_user is not null and exists (
    select 1 from public.user_roles r where r.user_id = p_user and r.role = 'admin'
  );
  return query
  select
    p_user, v_plan, v_admin, c.hidden_fields,
    c.hide_seller, c.hide_description, c.hide_url, c.hide_asking_price,
    c.hide_monthly_revenue, c.hide_monthly_profit, c.hide_monthly_traffic
  from public.blurred_fields_by_viewer c
  where c.viewer_class = case when v_admin then 'admin' else v_plan end
    and not c.own_listing
    and not c.locked;
end
$$;
comment on function public.listing_viewer(uuid) is
  'The viewer as the blur policy sees them: user id, plan, admin flag, the field keys hidden from their plan (none for admins) and one hide_<field> flag per blur-able field. One row; a client may ask only about itself. The confidentiality layer is listing_visibility()''s';
revoke execute on function public.listing_viewer(uuid) from public;
grant execute on function public.listing_viewer(uuid) to anon, authenticated, service_role;

-- -----------------------------------------------------------------------------
-- listing_viewer_rows(): the caller's four policy rows, once per query
-- -----------------------------------------------------------------------------
drop view if exists public.listing_view_secure;
drop function if exists public.listing_viewer_rows();

do $$
begin
  if not exists (
    select 1 from pg_attribute
    where attrelid = 'public.listing_viewer_row'::regclass and attname = 'locked' and not attisdropped
  ) then
    alter type public.listing_viewer_row add attribute locked boolean;
  end if;
  if not exists (
    select 1 from pg_attribute
    where attrelid = 'public.listing_viewer_row'::regclass and attname = 'hide_confidential'
      and not attisdropped
  ) then
    alter type public.listing_viewer_row add attribute hide_confidential boolean;
  end if;
end
$$;
comment on type public.listing_viewer_row is
  'A row of listing_viewer_rows(): the caller and the blur policy for their own listings (own_listing) or for everyone else''s, for a listing the caller may see whole (locked false) or a confidential one they have no approved access to (locked true; hide_confidential: its confidential fields are hidden)';

-- As the blur policy migration wrote it (its notes on speed hold): the
-- caller's class's rows, now four (two for a visitor).
create or replace function public.listing_viewer_rows()
returns setof public.listing_viewer_row
language plpgsql
stable
-- Four rows: keeps the explore page on its index.
rows 4
-- Definer rights: reads the caller's subscription and roles and the
-- precomputed policy, which RLS and grants keep from clients; it tells the
-- caller only about themself.
security definer
set search_path = ''
as $$
declare
  v_user uuid := auth.uid();
begin
  return query
  select
    v_user, c.own_listing, c.sees_unapproved,
    c.hide_seller, c.hide_description, c.hide_url, c.hide_asking_price,
    c.hide_monthly_revenue, c.hide_monthly_profit, c.hide_monthly_traffic,
    c.hidden_fields, c.locked, c.hide_confidential
  from public.blurred_fields_by_viewer c
  -- A visitor never matches an own_listing row: those are left out, so each
  -- listing is compared with two rows, as before this change, instead of
  -- four. (An index probe could leave them out for signed-in users without
  -- listings too: it halves an offset page's join, but costs a nine-row page
  -- more than it saves; measured, bench/listing_view.ts.)
  where (v_user is not null or not c.own_listing)
    and c.viewer_class = case
      when v_user is null then 'unauth'
      -- has_role(v_user, 'admin')
      when exists (
        select 1 from public.user_roles r where r.user_id = v_user and r.role = 'admin'
      ) then 'admin'
      -- plan_of(v_user) for a signed-in user
      else coalesce(
        (
          select s.subscription_level
          from public.subscriptions s
          where s.user_id = v_user
            and s.subscription_status in ('active', 'trialing')
            and (s.current_period_end is null or s.current_period_end > now())
        ),
        'free'
      )
    end;
end
$$;
comment on function public.listing_viewer_rows() is
  'The caller as listing_view_secure sees them: their user id and the blur policy for their own listings (own_listing) and for everyone else''s, from their plan (admins: nothing hidden), each for an unlocked listing and a locked one (locked: confidential, and the caller has no approved access; hide_confidential: its confidential fields are hidden). Four rows; two for a visitor (no own_listing rows: a visitor owns nothing)';
revoke execute on function public.listing_viewer_rows() from public;
grant execute on function public.listing_viewer_rows() to anon, authenticated, service_role;

-- -----------------------------------------------------------------------------
-- listing_view_secure: the plan blur and the confidentiality layer
-- -----------------------------------------------------------------------------
-- The notes on the view in the blur policy migration (owner rights, why it is
-- not a security_barrier view, how the caller is looked up once) still hold;
-- its columns are as before, two appended. Each listing joins exactly one of
-- the caller's four rows: own or not, locked or not. A visitor's null user_id
-- has no access (the coalesce), so an nda listing is locked for them.
create view public.listing_view_secure
as
select
  l.id,
  case when v.hide_seller or (v.hide_confidential and l.confidential_seller) then null
    else l.seller_id end as seller_id,
  l.title,
  case when v.hide_description or (v.hide_confidential and l.confidential_description) then null
    else l.description end as description,
  case when v.hide_url or (v.hide_confidential and l.confidential_url) then null
    else l.url end as url,
  l.category,
  case when v.hide_asking_price or (v.hide_confidential and l.confidential_asking_price) then null
    else l.asking_price end as asking_price,
  l.currency,
  case when v.hide_monthly_revenue or (v.hide_confidential and l.confidential_monthly_revenue) then null
    else l.monthly_revenue end as monthly_revenue,
  case when v.hide_monthly_profit or (v.hide_confidential and l.confidential_monthly_profit) then null
    else l.monthly_profit end as monthly_profit,
  case when v.hide_monthly_traffic or (v.hide_confidential and l.confidential_monthly_traffic) then null
    else l.monthly_traffic end as monthly_traffic,
  l.review_status,
  case when v.sees_unapproved then l.rejection_reason end as rejection_reason,
  l.views_count,
  l.submitted_at,
  l.reviewed_at,
  l.created_at,
  l.updated_at,
  v.own_listing as is_owner,
  v.hidden_fields as blurred_fields,
  l.is_sponsored,
  l.sponsored_until,
  l.access_mode,
  case when v.hide_confidential then l.confidential_fields else '{}'::text[] end
    as confidential_fields_hidden
from public.listings l, public.listing_viewer_rows() v
where v.own_listing = (l.seller_id is not distinct from v.user_id)
  and v.locked = (
    l.access_mode = 'nda' and not coalesce(v.user_id = any (l.access_buyers), false)
  )
  and case when l.review_status = 'approved' then true else v.sees_unapproved end;

comment on view public.listing_view_secure is
  'Listings as the caller may see them: approved listings for everyone, their own for a seller, all for admins. Every column of a hidden field is NULL: blurred_fields names the fields the caller''s plan hides, confidential_fields_hidden the confidential fields of an nda listing they have no approved access to; is_owner marks the caller''s own listings';
comment on column public.listing_view_secure.blurred_fields is
  'Field keys (blurred_fields.field_key) the caller''s plan hides on this row; their columns are NULL';
comment on column public.listing_view_secure.is_owner is 'True on the caller''s own listings';
comment on column public.listing_view_secure.is_sponsored is
  'Whether the listing is sponsored now (the explore page shows these first)';
comment on column public.listing_view_secure.sponsored_until is
  'When the listing''s sponsored placement ends, or null';
comment on column public.listing_view_secure.access_mode is
  'open, or nda: the listing keeps confidential fields from viewers without approved access';
comment on column public.listing_view_secure.confidential_fields_hidden is
  'Confidential field keys hidden on this row because the listing is nda and the caller has no approved access (the seller and admins: none); their columns are NULL';

revoke all on table public.listing_view_secure from anon, authenticated;
grant select on table public.listing_view_secure to anon, authenticated, service_role;

-- -----------------------------------------------------------------------------
-- listing_visibility(): the rule for one viewer and one listing
-- -----------------------------------------------------------------------------
create or replace function public.listing_visibility(p_listing uuid, p_user uuid)
returns table (
  sees_listing boolean,
  sees_everything boolean,
  hidden_fields text[],
  confidential_fields_hidden text[]
)
language plpgsql
stable
rows 1
-- Definer rights: reads the listing, the viewer's plan and roles and their
-- access, which RLS keeps from clients; only the service role and definer
-- functions that checked their caller (can_view_field) call it.
security definer
set search_path = ''
as $$
declare
  v_listing record;
  v_viewer record;
  v_confidential text[];
begin
  select l.seller_id, l.review_status, l.access_mode, l.confidential_fields, l.access_buyers
  into v_listing
  from public.listings l where l.id = p_listing;
  if not found then
    return query select false, false, null::text[], null::text[];
    return;
  end if;
  select * into v_viewer from public.listing_viewer(p_user);
  if v_viewer.is_admin or v_listing.seller_id = p_user then
    return query select true, true, '{}'::text[], '{}'::text[];
    return;
  end if;
  if v_listing.review_status <> 'approved' then
    return query select false, false, null::text[], null::text[];
    return;
  end if;
  v_confidential := public.confidential_fields_hidden(
    v_listing.access_mode, v_listing.confidential_fields, false,
    coalesce(p_user = any (v_listing.access_buyers), false)
  );
  return query
  select true, false,
    array(select distinct f from unnest(v_viewer.hidden_fields || v_confidential) f order by f),
    v_confidential;
end
$$;
comment on function public.listing_visibility(uuid, uuid) is
  'The blur rule for viewer p_user (null: a visitor) and listing p_listing, as listing_view_secure applies it: whether they see the listing at all (approved, or theirs, or they are an admin), whether they see everything (its seller, an admin), every blur-able field key hidden from them (their plan''s blur and the confidentiality layer together), and the keys the confidentiality layer hides (an nda listing''s confidential fields when they have no approved access); the arrays are null when they do not see the listing. Service role only';
revoke execute on function public.listing_visibility(uuid, uuid) from public, anon, authenticated;
grant execute on function public.listing_visibility(uuid, uuid) to service_role;

-- -----------------------------------------------------------------------------
-- can_view_field(): the same rule, for one field
-- -----------------------------------------------------------------------------
-- As the listing fields migration wrote it; a blur-able field now asks
-- listing_visibility(), which adds the confidentiality layer to the plan blur.
create or replace function public.can_view_field(
  p_listing uuid,
  p_field_key text,
  p_user uuid default auth.uid()
)
returns boolean
language plpgsql
stable
-- Definer rights: decides for listings the caller may not read through RLS
-- (other sellers' approved listings); assert_may_ask_about() keeps a client
-- to its own visibility.
security definer
set search_path = ''
as $$
declare
  v_visibility text;
  v_key_of_column text;
  v_seen record;
begin
  perform public.assert_may_ask_about(p_user, 'check field visibility');
  if p_field_key is null then
    raise exception 'Cannot check field visibility: name a listing field'
      using errcode = '22023',
        hint = 'The field keys are the rows of public.listing_fields (FIELD_TO_COLUMN_MAP in shared/blur.ts)';
  end if;
  select f.visibility into v_visibility
  from public.listing_fields f
  where f.field_key = p_field_key;
  if not found then
    -- A column name given for its key (seller_id for seller) is named in the hint.
    select f.field_key into v_key_of_column
    from public.listing_fields f
    where f.column_name = p_field_key;
    raise exception 'Cannot check field visibility: "%" is not a listing field', p_field_key
      using errcode = '22023',
        hint = case when v_key_of_column is not null
          then format('"%s" is the column of the field "%s". ', p_field_key, v_key_of_column)
          else ''
        end || 'The field keys are the rows of public.listing_fields (FIELD_TO_COLUMN_MAP in shared/blur.ts)';
  end if;
  if p_listing is null then
    return false;
  end if;
  select * into v_seen from public.listing_visibility(p_listing, p_user);
  if not v_seen.sees_listing then
    return false;
  end if;
  if v_seen.sees_everything then
    return true;
  end if;
  return case v_visibility
    when 'listing' then true
    when 'seller_and_admins' then false
    else not (p_field_key = any (v_seen.hidden_fields))
  end;
end
$$;
comment on function public.can_view_field(uuid, text, uuid) is
  'True when p_user (default: the caller; null: a visitor who is not signed in) may see field p_field_key of listing p_listing, as listing_view_secure shows it: false for an unknown listing or one the user cannot see (not approved, not theirs, not an admin); else true for its seller and admins, and by the field''s visibility in listing_fields for everyone else (listing: true; seller_and_admins: false; blur_policy: hidden when the user''s plan hides it or it is a confidential field of an nda listing they have no approved access to). A key that is not in listing_fields raises 22023';
revoke execute on function public.can_view_field(uuid, text, uuid) from public;
grant execute on function public.can_view_field(uuid, text, uuid)
  to anon, authenticated, service_role;
