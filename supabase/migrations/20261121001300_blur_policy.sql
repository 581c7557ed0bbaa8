-- =============================================================================
-- Blur policy: which listing fields each plan may see
--
-- blurred_fields holds one row per blur-able listing field with a flag per
-- plan (true = hidden from viewers on that plan). listing_viewer() turns the
-- viewer into (plan, admin?, hidden field keys) once per query;
-- can_view_field() answers for one field of one listing, and
-- listing_view_secure applies the same rule to whole rows, returning NULL in
-- every hidden column so the true value never leaves the database.
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
-- effect on the next query. shared/blur.ts mirrors field_key, column_name and
-- when_hidden for the frontend, and a test keeps the two in agreement.
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
-- listing_viewer(): the viewer, once per query
-- -----------------------------------------------------------------------------
-- Returns the hidden fields both as a list and as one flag per field: the
-- view tests a boolean per row and column instead of searching the list.
-- Written for speed, as the explore page pays for it on every query (see
-- bench/listing_view.ts): the caller check runs only when the caller asks
-- about someone else.
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
-- One row: tells the planner to keep the explore page on its index.
rows 1
-- Definer rights: reads the viewer's subscription and roles, which RLS keeps
-- from the view's callers; assert_may_ask_about() keeps a client to itself.
security definer
set search_path = ''
as $$
declare
  v_plan text;
  v_admin boolean;
  v_hidden text[] := '{}';
begin
  if p_user is distinct from auth.uid() then
    perform public.assert_may_ask_about(p_user, 'read the blur policy');
  end if;
  v_plan := public.plan_of(p_user);
  -- has_role(p_user, 'admin'), inlined: has_role() is a SQL function that is
  -- planned again on every call, which would cost as much as the page.
  v_admin := p_user is not null and exists (
    select 1 from public.user_roles r where r.user_id = p_user and r.role = 'admin'
  );
  if not v_admin then
    select coalesce(array_agg(b.field_key order by b.field_key), '{}')
    into v_hidden
    from public.blurred_fields b
    where case v_plan
      when 'unauth' then b.unauth
      when 'free' then b.free
      when 'starter' then b.starter
      when 'pro' then b.pro
    end;
  end if;
  return query
  select
    p_user,
    v_plan,
    v_admin,
    v_hidden,
    'seller' = any (v_hidden),
    'description' = any (v_hidden),
    'url' = any (v_hidden),
    'asking_price' = any (v_hidden),
    'monthly_revenue' = any (v_hidden),
    'monthly_profit' = any (v_hidden),
    'monthly_traffic' = any (v_hidden);
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
  case when v.hide_seller and not o.own then null else l.seller_id end as seller_id,
  l.title,
  case when v.hide_description and not o.own then null else l.description end as description,
  case when v.hide_url and not o.own then null else l.url end as url,
  l.category,
  case when v.hide_asking_price and not o.own then null else l.asking_price end as asking_price,
  l.currency,
  case when v.hide_monthly_revenue and not o.own then null else l.monthly_revenue end
    as monthly_revenue,
  case when v.hide_monthly_profit and not o.own then null else l.monthly_profit end
    as monthly_profit,
  case when v.hide_monthly_traffic and not o.own then null else l.monthly_traffic end
    as monthly_traffic,
  l.review_status,
  case when o.own or v.is_admin then l.rejection_reason end as rejection_reason,
  l.views_count,
  l.submitted_at,
  l.reviewed_at,
  l.created_at,
  l.updated_at,
  o.own as is_owner,
  case when o.own then '{}'::text[] else v.hidden_fields end as blurred_fields
from public.listings l
cross join public.listing_viewer(auth.uid()) v
cross join lateral (select coalesce(l.seller_id = v.user_id, false) as own) o
where l.review_status = 'approved'
   or l.seller_id = v.user_id
   or v.is_admin;

comment on view public.listing_view_secure is
  'Listings as the caller may see them: approved listings for everyone, their own for a seller, all for admins. Every column of a field hidden by the blur policy is NULL and blurred_fields names the hidden field keys; is_owner marks the caller''s own listings';
comment on column public.listing_view_secure.blurred_fields is
  'Field keys (blurred_fields.field_key) hidden from the caller on this row; their columns are NULL';
comment on column public.listing_view_secure.is_owner is 'True on the caller''s own listings';

revoke all on table public.listing_view_secure from anon, authenticated;
grant select on table public.listing_view_secure to anon, authenticated, service_role;
