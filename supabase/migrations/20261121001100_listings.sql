-- =============================================================================
-- Listings: projects put up for sale, and their review
--
-- A seller writes a listing, submits it for review, and an admin approves or
-- rejects it. Only approved listings are public, and the public reads them
-- through listing_view_secure (blur policy migration), never from this table:
-- RLS here lets a seller read their own listings and an admin read all, so
-- the values hidden by the blur policy cannot be read around the view.
--
-- Review status state machine (enforced by listings_guard_review()):
--
--            submit (seller)             approve (admin)
--   draft ──────────────────► pending_review ──────────► approved ──► archived
--     ▲ ◄──── withdraw ──────┘    │     ▲                   │   archive   │
--     │        (seller)           │     │ resubmit          │ (seller,    │
--     │                 reject    │     │ (seller)          │  admin)     │
--     │                (admin)    ▼     │                   │             │
--     ├──── edit (seller) ──── rejected ◄──── take down ────┘             │
--     │                                        (admin)                    │
--     └──────────────────────── reopen (seller) ──────────────────────────┘
--
--   from            to              who
--   draft           pending_review  seller (submit)
--   pending_review  draft           seller (withdraw the submission)
--   pending_review  approved        admin
--   pending_review  rejected        admin (rejection_reason says why)
--   rejected        pending_review  seller (resubmit)
--   rejected        draft           seller (back to editing)
--   approved        archived        seller or admin (withdrawn, sold)
--   approved        rejected        admin (take down)
--   archived        draft           seller (reopen; needs review again)
--
-- A new listing starts as draft or pending_review. The service connection
-- may make any transition in the table (it acts for admins and jobs); any
-- other change of status fails with SQLSTATE PT409 (PostgREST answers 409
-- Conflict), and a transition reserved to admins made by a seller fails with
-- 42501. Entering pending_review stamps submitted_at and clears
-- rejection_reason; approved and rejected stamp reviewed_at and reviewed_by.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- Table
-- -----------------------------------------------------------------------------
create table if not exists public.listings (
  id uuid primary key default gen_random_uuid(),
  seller_id uuid not null default auth.uid() references auth.users (id) on delete cascade,
  title text not null,
  description text,
  url text,
  category text not null,
  asking_price numeric(12, 2) not null,
  currency text not null default 'USD',
  monthly_revenue numeric(12, 2),
  monthly_profit numeric(12, 2),
  monthly_traffic integer,
  review_status text not null default 'draft',
  rejection_reason text,
  views_count bigint not null default 0,
  submitted_at timestamptz,
  reviewed_at timestamptz,
  reviewed_by uuid references auth.users (id) on delete set null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint listings_title_length check (char_length(title) between 1 and 200),
  constraint listings_category_length check (char_length(category) between 1 and 60),
  constraint listings_url_is_http check (url ~ '^https?://[^[:space:]]+$'),
  constraint listings_currency_iso_4217 check (currency ~ '^[A-Z]{3}$'),
  constraint listings_asking_price_not_negative check (asking_price >= 0),
  constraint listings_monthly_revenue_not_negative check (monthly_revenue >= 0),
  constraint listings_monthly_traffic_not_negative check (monthly_traffic >= 0),
  constraint listings_views_count_not_negative check (views_count >= 0),
  constraint listings_review_status_known check (
    review_status in ('draft', 'pending_review', 'approved', 'rejected', 'archived')
  ),
  -- Lets deals reference (listing, seller) together, so a deal's seller is
  -- always the listing's seller.
  constraint listings_id_seller_id_key unique (id, seller_id)
);

comment on table public.listings is
  'Projects for sale. Review status: draft -> pending_review -> approved | rejected; rejected -> pending_review | draft; approved -> archived | rejected; archived -> draft (see the migration header). Public reads go through listing_view_secure';
comment on column public.listings.seller_id is 'The user selling the project; the owner of the row';
comment on column public.listings.url is 'Address of the project for sale; hidden by the blur policy from most plans';
comment on column public.listings.asking_price is 'Asking price in major units of currency';
comment on column public.listings.currency is 'ISO 4217 code, upper case';
comment on column public.listings.monthly_revenue is 'Average monthly revenue in major units of currency';
comment on column public.listings.monthly_profit is 'Average monthly profit in major units of currency (may be negative)';
comment on column public.listings.monthly_traffic is 'Average monthly visits';
comment on column public.listings.review_status is
  'draft | pending_review | approved | rejected | archived; changed only along the transitions listed in the migration header';
comment on column public.listings.rejection_reason is 'Why an admin rejected the listing; cleared on resubmission';
comment on column public.listings.views_count is 'Listing page views, incremented by update-views-count';
comment on column public.listings.submitted_at is 'When the listing last entered pending_review';
comment on column public.listings.reviewed_at is 'When an admin last approved or rejected the listing';
comment on column public.listings.reviewed_by is 'The admin who last approved or rejected the listing';

-- -----------------------------------------------------------------------------
-- Indexes
-- -----------------------------------------------------------------------------
-- The explore page: newest approved listings first, nine at a time.
create index if not exists listings_approved_created_at_idx
  on public.listings (created_at desc, id desc)
  where review_status = 'approved';
-- A seller's own listings.
create index if not exists listings_seller_id_created_at_idx
  on public.listings (seller_id, created_at desc);
-- The admin review queue.
create index if not exists listings_pending_review_submitted_at_idx
  on public.listings (submitted_at)
  where review_status = 'pending_review';

-- -----------------------------------------------------------------------------
-- listings_guard_review(): the review state machine
-- -----------------------------------------------------------------------------
create or replace function public.listings_guard_review()
returns trigger
language plpgsql
set search_path = ''
as $$
declare
  v_client boolean := public.is_client_request();
  v_admin boolean := false;
  v_seller_may boolean;
begin
  if v_client then
    v_admin := public.is_admin();
  end if;

  if tg_op = 'INSERT' then
    if new.review_status not in ('draft', 'pending_review') then
      raise exception 'Cannot create listing: a new listing starts as "draft" or "pending_review", not "%"',
        new.review_status using errcode = 'PT409';
    end if;
    if v_client and not v_admin and new.rejection_reason is not null then
      raise exception 'Cannot create listing: only an admin sets rejection_reason'
        using errcode = '42501';
    end if;
    if new.review_status = 'pending_review' then
      new.submitted_at := now();
    end if;
    return new;
  end if;

  if v_client and not v_admin
     and new.rejection_reason is distinct from old.rejection_reason
     and not (new.review_status = 'pending_review' and new.rejection_reason is null) then
    raise exception 'Cannot update listing "%": only an admin sets rejection_reason', old.id
      using errcode = '42501';
  end if;

  if new.review_status is not distinct from old.review_status then
    return new;
  end if;

  -- true: the seller may; false: only an admin or the service connection;
  -- null: not a transition of the state machine.
  v_seller_may := case old.review_status || ' -> ' || new.review_status
    when 'draft -> pending_review' then true
    when 'pending_review -> draft' then true
    when 'pending_review -> approved' then false
    when 'pending_review -> rejected' then false
    when 'rejected -> pending_review' then true
    when 'rejected -> draft' then true
    when 'approved -> archived' then true
    when 'approved -> rejected' then false
    when 'archived -> draft' then true
  end;

  if v_seller_may is null then
    raise exception 'Cannot change review status of listing "%": "%" cannot become "%"',
      old.id, old.review_status, new.review_status using errcode = 'PT409';
  end if;
  if v_client and not v_admin and not v_seller_may then
    raise exception 'Cannot change review status of listing "%" to "%": only an admin may',
      old.id, new.review_status using errcode = '42501';
  end if;

  if new.review_status = 'pending_review' then
    new.submitted_at := now();
    new.rejection_reason := null;
  elsif new.review_status in ('approved', 'rejected') then
    new.reviewed_at := now();
    new.reviewed_by := auth.uid();
    if new.review_status = 'approved' then
      new.rejection_reason := null;
    end if;
  end if;
  return new;
end
$$;
comment on function public.listings_guard_review() is
  'Trigger on listings: allows only the review status transitions of the state machine (PT409 otherwise), reserves approve/reject/take-down to admins and the service connection (42501), and stamps submitted_at, reviewed_at and reviewed_by';
revoke execute on function public.listings_guard_review() from public, anon, authenticated;

drop trigger if exists listings_guard_review on public.listings;
create trigger listings_guard_review
  before insert or update on public.listings
  for each row execute function public.listings_guard_review();

drop trigger if exists listings_set_updated_at on public.listings;
create trigger listings_set_updated_at
  before update on public.listings
  for each row execute function public.set_updated_at();

-- -----------------------------------------------------------------------------
-- Row level security
-- -----------------------------------------------------------------------------
alter table public.listings enable row level security;

drop policy if exists "Sellers can read their own listings and admins all" on public.listings;
create policy "Sellers can read their own listings and admins all" on public.listings
  for select to authenticated
  using (seller_id = (select auth.uid()) or (select public.is_admin()));

drop policy if exists "Sellers can create their own listings" on public.listings;
create policy "Sellers can create their own listings" on public.listings
  for insert to authenticated
  with check (seller_id = (select auth.uid()));

drop policy if exists "Sellers can update their own listings and admins all" on public.listings;
create policy "Sellers can update their own listings and admins all" on public.listings
  for update to authenticated
  using (seller_id = (select auth.uid()) or (select public.is_admin()))
  with check (seller_id = (select auth.uid()) or (select public.is_admin()));

drop policy if exists "Sellers can delete their unpublished listings, admins any"
  on public.listings;
create policy "Sellers can delete their unpublished listings, admins any"
  on public.listings
  for delete to authenticated
  using (
    (seller_id = (select auth.uid()) and review_status in ('draft', 'rejected', 'archived'))
    or (select public.is_admin())
  );

-- Clients write only the columns a seller owns; counters, review stamps and
-- the owner are the database's and the service connection's.
revoke all on table public.listings from anon, authenticated;
grant select, delete on table public.listings to authenticated;
grant insert (
  id, seller_id, title, description, url, category, asking_price, currency,
  monthly_revenue, monthly_profit, monthly_traffic, review_status
) on table public.listings to authenticated;
grant update (
  title, description, url, category, asking_price, currency,
  monthly_revenue, monthly_profit, monthly_traffic, review_status, rejection_reason
) on table public.listings to authenticated;
grant all on table public.listings to service_role;
