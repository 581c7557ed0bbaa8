-- =============================================================================
-- Listing fields: can_view_field() answers for every field of a listing
--
-- can_view_field() knew only the seven fields of blurred_fields and answered
-- false for anything else: for title, id or created_at, which everyone who
-- sees the listing sees, and just as quietly for a misspelt key. A client
-- asking about a field the blur policy does not govern was told it is
-- hidden, and a typo looked like a hidden field.
--
-- listing_fields is now the one list of listing field keys: one row per
-- column of listing_view_secure, with the column and who sees it:
--
--   visibility          who sees the field of a listing they can see
--   blur_policy         everyone whose plan's flag in blurred_fields is not
--                       set (the seven blur-able fields); the seller and
--                       admins always
--   seller_and_admins   the seller and admins only (rejection_reason)
--   listing             everyone who sees the listing
--
-- Why a table rather than a list inside can_view_field() next to the rows
-- of blurred_fields: there is then one list of keys, which clients and
-- tests can read (shared/blur.ts mirrors it for the frontend and
-- tests/db/blur_policy.test.ts keeps it equal to the view's columns), which
-- blurred_fields' rows are tied to by a foreign key (a blur-able field is a
-- listing field with the same column), and which the error for an unknown
-- key can point at. Only migrations change it; a column added to
-- listing_view_secure needs its row here (the test fails until it has one).
--
-- The rule of can_view_field(), for a viewer v, a listing l and a field f:
--   f is not a listing_fields key (or is null)    -> error 22023
--   l is null or unknown                          -> not visible
--   v is l's seller, or v is an admin             -> visible
--   l is not approved                             -> not visible
--   f is seller_and_admins                        -> not visible
--   f is listing                                  -> visible
--   f is blur_policy                              -> visible unless the flag
--                                                    of v's plan is set
-- "Can see the listing" is what listing_view_secure shows: approved listings
-- to everyone, their own to a seller, all to admins. For the seven blur-able
-- fields every answer is the one the blur policy migration gave.
--
-- SQLSTATE 22023 (invalid_parameter_value): PostgREST answers it HTTP 400,
-- so supabase.rpc("can_view_field") gets a client error with the message
-- and hint, not a 500 and not a silent false.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- listing_fields
-- -----------------------------------------------------------------------------
create table if not exists public.listing_fields (
  field_key text primary key,
  column_name text not null unique,
  visibility text not null,
  description text not null,
  constraint listing_fields_key_column unique (field_key, column_name),
  constraint listing_fields_visibility_known check (
    visibility in ('listing', 'blur_policy', 'seller_and_admins')
  )
);

comment on table public.listing_fields is
  'Every listing field key can_view_field() answers for: one row per column of listing_view_secure, with who sees it. Written by migrations only; shared/blur.ts mirrors it';
comment on column public.listing_fields.field_key is
  'The field''s key, as can_view_field() takes it (and blurred_fields.field_key for a blur-able field)';
comment on column public.listing_fields.column_name is 'The column of listing_view_secure that holds the field';
comment on column public.listing_fields.visibility is
  'Who sees the field of a listing they can see: listing (everyone), blur_policy (per plan, by the flags of blurred_fields; the seller and admins always), seller_and_admins';
comment on column public.listing_fields.description is 'What the field is';
comment on constraint listing_fields_key_column on public.listing_fields is
  'The pair blurred_fields refers to: a blur-able field has the same key and column here';
comment on constraint listing_fields_visibility_known on public.listing_fields is
  'visibility is one of listing, blur_policy, seller_and_admins';

insert into public.listing_fields (field_key, column_name, visibility, description) values
  ('id', 'id', 'listing', 'The listing''s id'),
  ('seller', 'seller_id', 'blur_policy', 'Seller identity'),
  ('title', 'title', 'listing', 'Title'),
  ('description', 'description', 'blur_policy', 'Full description'),
  ('url', 'url', 'blur_policy', 'Project address (identifies the project)'),
  ('category', 'category', 'listing', 'Category'),
  ('asking_price', 'asking_price', 'blur_policy', 'Asking price'),
  ('currency', 'currency', 'listing', 'Currency of the prices and figures'),
  ('monthly_revenue', 'monthly_revenue', 'blur_policy', 'Monthly revenue'),
  ('monthly_profit', 'monthly_profit', 'blur_policy', 'Monthly profit'),
  ('monthly_traffic', 'monthly_traffic', 'blur_policy', 'Monthly traffic'),
  ('review_status', 'review_status', 'listing', 'Review status'),
  ('rejection_reason', 'rejection_reason', 'seller_and_admins', 'Why an admin rejected the listing, or a note to its seller'),
  ('views_count', 'views_count', 'listing', 'Views counted'),
  ('submitted_at', 'submitted_at', 'listing', 'When the seller last submitted it for review'),
  ('reviewed_at', 'reviewed_at', 'listing', 'When an admin last reviewed it'),
  ('created_at', 'created_at', 'listing', 'When it was created'),
  ('updated_at', 'updated_at', 'listing', 'When the seller or an admin last changed it'),
  ('is_owner', 'is_owner', 'listing', 'Whether the viewer is its seller'),
  ('blurred_fields', 'blurred_fields', 'listing', 'The field keys hidden from the viewer on this listing'),
  ('is_sponsored', 'is_sponsored', 'listing', 'Whether it is sponsored now'),
  ('sponsored_until', 'sponsored_until', 'listing', 'When its sponsored placement ends')
on conflict (field_key) do nothing;

alter table public.listing_fields enable row level security;

drop policy if exists "Anyone can read the listing fields" on public.listing_fields;
create policy "Anyone can read the listing fields" on public.listing_fields
  for select to anon, authenticated
  using (true);
comment on policy "Anyone can read the listing fields" on public.listing_fields is
  'The field keys and who sees each are public: the frontend builds its views from them';

revoke all on table public.listing_fields from anon, authenticated;
grant select on table public.listing_fields to anon, authenticated;
grant all on table public.listing_fields to service_role;

-- -----------------------------------------------------------------------------
-- blurred_fields: every blur-able field is a listing field
-- -----------------------------------------------------------------------------
do $$
begin
  if not exists (
    select 1 from pg_constraint
    where conrelid = 'public.blurred_fields'::regclass
      and conname = 'blurred_fields_listing_field'
  ) then
    alter table public.blurred_fields
      add constraint blurred_fields_listing_field
      foreign key (field_key, column_name)
      references public.listing_fields (field_key, column_name);
  end if;
end
$$;
comment on constraint blurred_fields_listing_field on public.blurred_fields is
  'A blur-able field is a listing field, with the same key and column (listing_fields)';

-- -----------------------------------------------------------------------------
-- can_view_field(): every listing field answers; an unknown key is an error
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
  v_visibility text;
  v_key_of_column text;
  v_seller uuid;
  v_status text;
  v_viewer record;
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
  return case v_visibility
    when 'listing' then true
    when 'seller_and_admins' then false
    else not (p_field_key = any (v_viewer.hidden_fields))
  end;
end
$$;
comment on function public.can_view_field(uuid, text, uuid) is
  'True when p_user (default: the caller; null: a visitor who is not signed in) may see field p_field_key of listing p_listing, as listing_view_secure shows it: false for an unknown listing or one the user cannot see (not approved, not theirs, not an admin); else true for its seller and admins, and by the field''s visibility in listing_fields for everyone else (listing: true; seller_and_admins: false; blur_policy: the opposite of the blurred_fields flag of the user''s plan). A key that is not in listing_fields raises 22023';
revoke execute on function public.can_view_field(uuid, text, uuid) from public;
grant execute on function public.can_view_field(uuid, text, uuid)
  to anon, authenticated, service_role;
