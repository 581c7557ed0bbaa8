-- =============================================================================
-- Listing job columns: what scheduled jobs keep on a listing
--
-- Two kinds of listing columns are written by jobs, never by sellers:
--   * views_count (listings migration), folded in by update-views-count;
--   * is_sponsored and sponsored_until (added here), set by
--     process-sponsored-activations from sponsored_listings, so the explore
--     page can put sponsored listings first without a join.
-- A change to these columns alone is not an edit of the listing: the
-- updated_at trigger is recreated to leave updated_at alone when a job
-- column changed (jobs never change content in the same statement), so
-- updated_at keeps meaning "the seller or an admin last changed this
-- listing" — price alerts match saved searches against listings changed
-- since their last run, and a fold of a million views must neither make
-- every viewed listing look new nor pay the trigger for it.
--
-- listing_view_secure is recreated with the two sponsored columns appended
-- (create or replace view can only add columns at the end); everything
-- else in it is as the blur policy migration wrote it.
-- =============================================================================

alter table public.listings
  add column if not exists is_sponsored boolean not null default false,
  add column if not exists sponsored_until timestamptz;

comment on column public.listings.is_sponsored is
  'Whether a sponsored placement of the listing is active now; set by process-sponsored-activations from sponsored_listings';
comment on column public.listings.sponsored_until is
  'When the active sponsored placement ends (null when not sponsored); set by process-sponsored-activations';

-- The explore page's sponsored strip: the approved listings sponsored now,
-- newest first (a handful of rows; the main page keeps its own index).
create index if not exists listings_sponsored_created_at_idx
  on public.listings (created_at desc, id desc)
  where review_status = 'approved' and is_sponsored;
comment on index public.listings_sponsored_created_at_idx is
  'The explore page''s sponsored listings: approved and sponsored now, newest first';

-- -----------------------------------------------------------------------------
-- updated_at: moved by edits, not by jobs
-- -----------------------------------------------------------------------------
drop trigger if exists listings_set_updated_at on public.listings;
create trigger listings_set_updated_at
  before update on public.listings
  for each row
  when (
    old.views_count is not distinct from new.views_count
    and old.is_sponsored is not distinct from new.is_sponsored
    and old.sponsored_until is not distinct from new.sponsored_until
  )
  execute function public.set_updated_at();
comment on trigger listings_set_updated_at on public.listings is
  'Moves updated_at on an edit; an update that changes a job column (views_count, is_sponsored, sponsored_until) leaves it';

-- -----------------------------------------------------------------------------
-- listing_view_secure: the sponsored columns appended
-- -----------------------------------------------------------------------------
-- The notes on the view in the blur policy migration (why it is not a
-- security_barrier view, how the caller is looked up once) still hold.
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
  v.hidden_fields as blurred_fields,
  l.is_sponsored,
  l.sponsored_until
from public.listings l, public.listing_viewer_rows() v
where v.own_listing = (l.seller_id is not distinct from v.user_id)
  and case when l.review_status = 'approved' then true else v.sees_unapproved end;

comment on view public.listing_view_secure is
  'Listings as the caller may see them: approved listings for everyone, their own for a seller, all for admins. Every column of a field hidden by the blur policy is NULL and blurred_fields names the hidden field keys; is_owner marks the caller''s own listings';
comment on column public.listing_view_secure.blurred_fields is
  'Field keys (blurred_fields.field_key) hidden from the caller on this row; their columns are NULL';
comment on column public.listing_view_secure.is_owner is 'True on the caller''s own listings';
comment on column public.listing_view_secure.is_sponsored is
  'Whether the listing is sponsored now (the explore page shows these first)';
comment on column public.listing_view_secure.sponsored_until is
  'When the listing''s sponsored placement ends, or null';

revoke all on table public.listing_view_secure from anon, authenticated;
grant select on table public.listing_view_secure to anon, authenticated, service_role;
