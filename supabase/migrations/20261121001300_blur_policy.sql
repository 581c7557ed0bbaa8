-- =============================================================================
-- Blur policy: which listing fields each plan may see
--
-- blurred_fields holds one row per blur-able listing field with a flag per
-- plan (true = hidden from viewers on that plan). A trigger flattens it into
-- blurred_fields_by_viewer: per viewer class (plan, or admin) and per "is it
-- the viewer's own listing", one row with a flag per field and the list of
-- hidden field keys. listing_viewer_rows() picks the caller's two rows of it
-- once per query, and listing_view_secure joins every listing to the one of
-- the two that applies, returning NULL in every hidden column so the true
-- value never leaves the database. listing_viewer() and can_view_field()
-- answer the same questions for one user and one field.
--
-- The rule, for a viewer v and a listing l:
--   unknown field key or unknown listing              -> not visible
--   v is l's seller, or v is an admin                 -> visible
--   l is not approved                                 -> not visible (nor listed)
--   otherwise                                         -> visible unless the
--                                                        flag of v's plan is set
--
-- The set of blur-able fields is fixed by listing_view_secure's columns (the
-- check constraint below pins it); the flags are editable by admins and take
-- effect on the next query (the trigger refreshes blurred_fields_by_viewer in
-- the admin's transaction). shared/blur.ts mirrors field_key, column_name and
-- when_hidden for the frontend, and a test keeps the two in agreement.
--
-- Written for speed: the explore page reads listing_view_secure on every
-- visit, and bench/listing_view.ts holds a page of it to at most twice the
-- latency of the same nine rows read from listings (see the notes on
-- listing_viewer_rows() and on the view).
-- =============================================================================

-- -----------------------------------------------------------------------------
-- blurred_fields
-- -----------------------------------------------------------------------------
create table if not exists public.blurred_fields (
  field_key text primary key,
  column_name text not null unique,
  when_hidden text not null,
  unauth boolean not null,
  free boolean not null,
  starter boolean not null,
  pro boolean not null,
  description text,
  updated_at timestamptz not null default now(),
  constraint blurred_fields_known_field check (
    (field_key, column_name) in (
      ('asking_price', 'asking_price'),
      ('description', 'description'),
      ('monthly_revenue', 'monthly_revenue'),
      ('monthly_profit', 'monthly_profit'),
      ('monthly_traffic', 'monthly_traffic'),
      ('url', 'url'),
      ('seller', 'seller_id')
    )
  ),
  constraint blurred_fields_when_hidden_known check (when_hidden in ('blur', 'omit'))
);

comment on table public.blurred_fields is
  'Blur policy: per blur-able listing field, whether it is hidden (true) from viewers on each plan. Owners and admins always see everything';
comment on column public.blurred_fields.field_key is 'The field''s key, as can_view_field() and listing_view_secure.blurred_fields name it';
comment on column public.blurred_fields.column_name is 'The column of listing_view_secure that is NULL when the field is hidden';
comment on column public.blurred_fields.when_hidden is
  'How the frontend shows a hidden field: blur (a blurred placeholder) or omit (left out entirely)';
comment on column public.blurred_fields.unauth is 'Hidden from visitors who are not signed in';
comment on column public.blurred_fields.free is 'Hidden from signed-in users on the free plan';
comment on column public.blurred_fields.starter is 'Hidden from users on the starter plan';
comment on column public.blurred_fields.pro is 'Hidden from users on the pro plan';

drop trigger if exists blurred_fields_set_updated_at on public.blurred_fields;
create trigger blurred_fields_set_updated_at
  before update on public.blurred_fields
  for each row execute function public.set_updated_at();

-- Defaults: anyone sees the price; signing up shows the description and
-- revenue; starter adds profit and traffic; pro adds what identifies the
-- project and its seller. Existing rows (edited by admins) are kept.
insert into public.blurred_fields
  (field_key, column_name, when_hidden, unauth, free, starter, pro, description)
values
  ('asking_price', 'asking_price', 'blur', false, false, false, false, 'Asking price'),
  ('description', 'description', 'blur', true, false, false, false, 'Full description'),
  ('monthly_revenue', 'monthly_revenue', 'blur', true, false, false, false, 'Monthly revenue'),
  ('monthly_profit', 'monthly_profit', 'blur', true, true, false, false, 'Monthly profit'),
  ('monthly_traffic', 'monthly_traffic', 'blur', true, true, false, false, 'Monthly traffic'),
  ('url', 'url', 'omit', true, true, true, false, 'Project address (identifies the project)'),
  ('seller', 'seller_id', 'omit', true, true, true, false, 'Seller identity')
on conflict (field_key) do nothing;

alter table public.blurred_fields enable row level security;

drop policy if exists "Anyone can read the blur policy" on public.blurred_fields;
create policy "Anyone can read the blur policy" on public.blurred_fields
  for select to anon, authenticated
  using (true);

drop policy if exists "Admins can change the blur policy" on public.blurred_fields;
create policy "Admins can change the blur policy" on public.blurred_fields
  for update to authenticated
  using ((select public.is_admin()))
  with check ((select public.is_admin()));

-- The set of fields and how they are shown belong to the migrations (the
-- view and shared/blur.ts follow them); admins change only the flags.
revoke all on table public.blurred_fields from anon, authenticated;
grant select on table public.blurred_fields to anon, authenticated;
grant update (unauth, free, starter, pro, description) on table public.blurred_fields
  to authenticated;
grant all on table public.blurred_fields to service_role;

-- -----------------------------------------------------------------------------
-- blurred_fields_by_viewer: the policy per viewer class, ready to join
-- -----------------------------------------------------------------------------
-- Derived from blurred_fields, never edited: one row per viewer class
-- (unauth, free, starter, pro, admin) and own_listing (false: someone
-- else's listing; true: the viewer's own), with the hide_<field> flags and
-- the hidden field keys that listing_view_secure applies to such a row. An
-- admin's or an owner's row hides nothing and sees listings that are not
-- approved. Keeping it precomputed lets a query fetch the caller's policy
-- with one small read instead of aggregating blurred_fields every time.
create table if not exists public.blurred_fields_by_viewer (
  viewer_class text not null,
  own_listing boolean not null,
  sees_unapproved boolean not null,
  hide_seller boolean not null,
  hide_description boolean not null,
  hide_url boolean not null,
  hide_asking_price boolean not null,
  hide_monthly_revenue boolean not null,
  hide_monthly_profit boolean not null,
  hide_monthly_traffic boolean not null,
  hidden_fields text[] not null,
  primary key (viewer_class, own_listing),
  constraint blurred_fields_by_viewer_class_known check (
    viewer_class in ('unauth', 'free', 'starter', 'pro', 'admin')
  )
);

comment on table public.blurred_fields_by_viewer is
  'Derived from blurred_fields by trigger (do not edit): per viewer class (a plan, or admin) and per own_listing, the hide_<field> flags and hidden field keys listing_view_secure applies; read through listing_viewer_rows() and listing_viewer()';
comment on column public.blurred_fields_by_viewer.viewer_class is
  'unauth | free | starter | pro (the plan) | admin';
comment on column public.blurred_fields_by_viewer.own_listing is
  'false: the policy for someone else''s listing; true: for the viewer''s own listing (nothing hidden)';
comment on column public.blurred_fields_by_viewer.sees_unapproved is
  'The viewer sees such a listing even when it is not approved, and its rejection_reason (owners and admins)';
comment on column public.blurred_fields_by_viewer.hidden_fields is
  'The hidden field keys, sorted: listing_view_secure.blurred_fields';

-- Internal: read only by the definer functions below; the service
-- connection may inspect it.
alter table public.blurred_fields_by_viewer enable row level security;
revoke all on table public.blurred_fields_by_viewer from anon, authenticated;
grant all on table public.blurred_fields_by_viewer to service_role;

-- -----------------------------------------------------------------------------
-- refresh_blurred_fields_by_viewer(): recompute it from blurred_fields
-- -----------------------------------------------------------------------------
create or replace function public.refresh_blurred_fields_by_viewer()
returns void
language plpgsql
volatile
set search_path = ''
as $$
begin
  -- One refresh at a time. A second admin's refresh waits here and then
  -- reads blurred_fields with a new snapshot (read committed) that includes
  -- the first one's change; under repeatable read it fails on the rows the
  -- first one updated instead of writing a stale policy.
  lock table public.blurred_fields_by_viewer in share row exclusive mode;
  insert into public.blurred_fields_by_viewer as c (
    viewer_class, own_listing, sees_unapproved,
    hide_seller, hide_description, hide_url, hide_asking_price,
    hide_monthly_revenue, hide_monthly_profit, hide_monthly_traffic, hidden_fields
  )
  select
    k.viewer_class, o.own_listing, o.own_listing or k.viewer_class = 'admin',
    'seller' = any (h.hidden), 'description' = any (h.hidden), 'url' = any (h.hidden),
    'asking_price' = any (h.hidden), 'monthly_revenue' = any (h.hidden),
    'monthly_profit' = any (h.hidden), 'monthly_traffic' = any (h.hidden),
    h.hidden
  from (values ('unauth'), ('free'), ('starter'), ('pro'), ('admin')) k (viewer_class)
  cross join (values (false), (true)) o (own_listing)
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
  on conflict (viewer_class, own_listing) do update set
    sees_unapproved = excluded.sees_unapproved,
    hide_seller = excluded.hide_seller,
    hide_description = excluded.hide_description,
    hide_url = excluded.hide_url,
    hide_asking_price = excluded.hide_asking_price,
    hide_monthly_revenue = excluded.hide_monthly_revenue,
    hide_monthly_profit = excluded.hide_monthly_profit,
    hide_monthly_traffic = excluded.hide_monthly_traffic,
    hidden_fields = excluded.hidden_fields
  where (c.sees_unapproved, c.hide_seller, c.hide_description, c.hide_url,
         c.hide_asking_price, c.hide_monthly_revenue, c.hide_monthly_profit,
         c.hide_monthly_traffic, c.hidden_fields)
    is distinct from
        (excluded.sees_unapproved, excluded.hide_seller, excluded.hide_description,
         excluded.hide_url, excluded.hide_asking_price, excluded.hide_monthly_revenue,
         excluded.hide_monthly_profit, excluded.hide_monthly_traffic, excluded.hidden_fields);
end
$$;
comment on function public.refresh_blurred_fields_by_viewer() is
  'Internal: recomputes blurred_fields_by_viewer from blurred_fields (the trigger on blurred_fields runs it after every change)';
revoke execute on function public.refresh_blurred_fields_by_viewer() from public, anon, authenticated;
grant execute on function public.refresh_blurred_fields_by_viewer() to service_role;

create or replace function public.blurred_fields_refresh_by_viewer()
returns trigger
language plpgsql
-- Definer rights: admins change blurred_fields as `authenticated`, which may
-- not write blurred_fields_by_viewer; the refresh must still follow.
security definer
set search_path = ''
as $$
begin
  perform public.refresh_blurred_fields_by_viewer();
  return null;
end
$$;
comment on function public.blurred_fields_refresh_by_viewer() is
  'Trigger on blurred_fields (after each statement): refreshes blurred_fields_by_viewer, so a changed flag applies to the next query';
revoke execute on function public.blurred_fields_refresh_by_viewer() from public, anon, authenticated;

drop trigger if exists blurred_fields_refresh_by_viewer on public.blurred_fields;
create trigger blurred_fields_refresh_by_viewer
  after insert or update or delete or truncate on public.blurred_fields
  for each statement execute function public.blurred_fields_refresh_by_viewer();

select public.refresh_blurred_fields_by_viewer();
-- Ten rows never reach autovacuum's threshold: without statistics the
-- planner would take the table for ten pages and read it through its index.
analyze public.blurred_fields_by_viewer;

-- -----------------------------------------------------------------------------
-- listing_viewer_rows(): the caller's two policy rows, once per query
-- -----------------------------------------------------------------------------
-- The row type is created once; a change to it needs a migration that drops
-- listing_view_secure and listing_viewer_rows() first.
do $$
begin
  if to_regtype('public.listing_viewer_row') is null then
    create type public.listing_viewer_row as (
      user_id uuid,
      own_listing boolean,
      sees_unapproved boolean,
      hide_seller boolean,
      hide_description boolean,
      hide_url boolean,
      hide_asking_price boolean,
      hide_monthly_revenue boolean,
      hide_monthly_profit boolean,
      hide_monthly_traffic boolean,
      hidden_fields text[]
    );
  end if;
end
$$;
comment on type public.listing_viewer_row is
  'A row of listing_viewer_rows(): the caller and the blur policy for their own listings (own_listing) or for everyone else''s';

-- Written for speed, as the explore page pays for it on every query (see
-- bench/listing_view.ts):
--   * PL/pgSQL, which keeps its statement's plan for the session; the same
--     lookups written into the view would be planned with every query;
--   * no argument: auth.uid() is read here, where it is planned once,
--     instead of being inlined and planned in every query of the view;
--   * one statement, without nested calls: has_role() and plan_of() are
--     inlined (a call of plan_of() would add about a tenth to what the view
--     costs over reading listings). The test "listing_view_secure follows
--     plan_of() ..." checks the copy of the plan rule against plan_of() for
--     every subscription status, source and period end;
--   * the flags come precomputed from blurred_fields_by_viewer.
-- A visitor who is not signed in gets an own_listing row too; with a null
-- user_id it matches no listing.
create or replace function public.listing_viewer_rows()
returns setof public.listing_viewer_row
language plpgsql
stable
-- Two rows: keeps the explore page on its index.
rows 2
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
    c.hidden_fields
  from public.blurred_fields_by_viewer c
  where c.viewer_class = case
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
  'The caller as listing_view_secure sees them: their user id and the blur policy for their own listings (own_listing) and for everyone else''s, from their plan (admins: nothing hidden). Two rows';
revoke execute on function public.listing_viewer_rows() from public;
grant execute on function public.listing_viewer_rows() to anon, authenticated, service_role;

-- -----------------------------------------------------------------------------
-- listing_viewer(): the viewer as the blur policy sees them, for any user
-- -----------------------------------------------------------------------------
-- Used by can_view_field() and available to clients about themselves; the
-- view uses listing_viewer_rows() instead.
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
    and not c.own_listing;
end
$$;
comment on function public.listing_viewer(uuid) is
  'The viewer as the blur policy sees them: user id, plan, admin flag, the field keys hidden from their plan (none for admins) and one hide_<field> flag per blur-able field. One row; a client may ask only about itself';
revoke execute on function public.listing_viewer(uuid) from public;
grant execute on function public.listing_viewer(uuid) to anon, authenticated, service_role;

-- -----------------------------------------------------------------------------
-- can_view_field(): may this user see this field of this listing?
-- -----------------------------------------------------------------------------
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
  v_seller uuid;
  v_status text;
  v_viewer record;
begin
  perform public.assert_may_ask_about(p_user, 'check field visibility');
  if p_listing is null or p_field_key is null then
    return false;
  end if;
  if not exists (select 1 from public.blurred_fields b where b.field_key = p_field_key) then
    return false;
  end if;
  select l.seller_id, l.review_status into v_seller, v_status
  from public.listings l
  where l.id = p_listing;
  if not found then
    return false;
  end if;
  select * into v_viewer from public.listing_viewer(p_user);
  if v_viewer.is_admin or v_seller = p_user then
    return true;
  end if;
  if v_status <> 'approved' then
    return false;
  end if;
  return not (p_field_key = any (v_viewer.hidden_fields));
end
$$;
comment on function public.can_view_field(uuid, text, uuid) is
  'True when p_user (default: the caller; null: a visitor who is not signed in) may see field p_field_key of listing p_listing: false for an unknown field or listing, true for its seller and admins, false for a listing that is not approved, else the opposite of the blurred_fields flag of the user''s plan';
revoke execute on function public.can_view_field(uuid, text, uuid) from public;
grant execute on function public.can_view_field(uuid, text, uuid)
  to anon, authenticated, service_role;

-- -----------------------------------------------------------------------------
-- listing_view_secure: listings as the viewer may see them
-- -----------------------------------------------------------------------------
-- Owner rights (no security_invoker): the view reads listings past their RLS,
-- which keeps other sellers' rows from clients, and applies the blur policy
-- itself: a hidden column is a CASE that yields NULL, and a caller's
-- predicate on that column is evaluated on the CASE, never on the stored
-- value.
--
-- Each listing joins exactly one of the caller's rows from
-- listing_viewer_rows(): the own_listing row when the caller is its seller,
-- else the other one. So whether a listing is the caller's own is decided
-- once per listing, in the join, and every hidden column is a CASE on one
-- flag. Written for the explore page (bench/listing_view.ts), whose query
-- costs little more to plan and run than the same read of listings:
--   * the caller is looked up once per query, by one function in FROM whose
--     statement PL/pgSQL plans once per session, rather than by scalar
--     subqueries or inlined SQL functions, which PostgreSQL would plan with
--     every query (a scalar subquery once for each column that uses it);
--   * the listing filter is a CASE rather than `approved OR own OR admin`:
--     PostgreSQL cannot use an index for either (one arm depends on the
--     caller), but for an OR it tries bitmap OR paths and partial-index
--     proofs on every plan, about a third more planning;
--   * the explore page's own `review_status = 'approved'` is what selects
--     the partial index (created_at desc, id desc) where approved, for
--     offset and for keyset (created_at, id) < (...) paging alike. A query
--     without it reads the whole table, as it did before. (A UNION ALL of an
--     approved branch and an own/admin branch does not help: its branches
--     are joins, which PostgreSQL does not merge in index order, so it
--     sorts every approved listing.)
--
-- Deliberately not a security_barrier view: a barrier stops PostgreSQL from
-- pushing the explore page's ORDER BY created_at DESC LIMIT 9 into the view,
-- so it sorts every approved listing (about 250 ms instead of well under a
-- millisecond at 100k listings). What a barrier would add is that a caller's
-- own leaky function could not see the always-visible columns (title,
-- category, ...) of rows the view filters out; clients reach the database
-- only through PostgREST and our functions, neither of which lets them
-- define a function.
--
-- Supabase's database linter reports owner-rights views
-- ("security_definer_view"); for this view that is the design.
create or replace view public.listing_view_secure
as
select
  l.id,
  case when v.hide_seller then null else l.seller_id end as seller_id,
  l.title,
  case when v.hide_description then null else l.description end as description,
  case when v.hide_url then null else l.url end as url,
  l.category,
  case when v.hide_asking_price then null else l.asking_price end as asking_price,
  l.currency,
  case when v.hide_monthly_revenue then null else l.monthly_revenue end as monthly_revenue,
  case when v.hide_monthly_profit then null else l.monthly_profit end as monthly_profit,
  case when v.hide_monthly_traffic then null else l.monthly_traffic end as monthly_traffic,
  l.review_status,
  case when v.sees_unapproved then l.rejection_reason end as rejection_reason,
  l.views_count,
  l.submitted_at,
  l.reviewed_at,
  l.created_at,
  l.updated_at,
  v.own_listing as is_owner,
  v.hidden_fields as blurred_fields
from public.listings l, public.listing_viewer_rows() v
where v.own_listing = (l.seller_id is not distinct from v.user_id)
  and case when l.review_status = 'approved' then true else v.sees_unapproved end;

comment on view public.listing_view_secure is
  'Listings as the caller may see them: approved listings for everyone, their own for a seller, all for admins. Every column of a field hidden by the blur policy is NULL and blurred_fields names the hidden field keys; is_owner marks the caller''s own listings';
comment on column public.listing_view_secure.blurred_fields is
  'Field keys (blurred_fields.field_key) hidden from the caller on this row; their columns are NULL';
comment on column public.listing_view_secure.is_owner is 'True on the caller''s own listings';

revoke all on table public.listing_view_secure from anon, authenticated;
grant select on table public.listing_view_secure to anon, authenticated, service_role;
