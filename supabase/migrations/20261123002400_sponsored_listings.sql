-- =============================================================================
-- Sponsored listings: paid placements that put a listing first on explore
--
-- An admin schedules a placement of a listing for a window [starts_at,
-- ends_at). process-sponsored-activations (admin, and the daily
-- orchestrator) applies what is due through apply_sponsored_changes(): it
-- activates placements whose window has begun and expires those whose
-- window has ended, and mirrors the result onto the listing
-- (listings.is_sponsored, listings.sponsored_until: the explore page orders
-- by them without a join). send-sponsored-notifications tells the seller
-- once when a placement has started and once when it ends within 24 hours
-- (started_notified_at, ending_notified_at mark what was told).
--
-- Status state machine (enforced by guard_sponsored_listing_state()):
--
--                 window begun and                 window ended
--   scheduled ──── listing approved ───► active ─────────────────► expired
--       │  │                               │
--       │  └──── window ended first ───────┼──────────────────────► expired
--       │                                  │
--       └──────── cancel (admin) ──────────┴── cancel (admin) ────► cancelled
--
--   from       to         who / how
--   scheduled  active     apply_sponsored_changes() (service role) at a time
--                         `at` with starts_at <= at < ends_at, while the
--                         listing is approved; stamps activated_at
--   scheduled  expired    apply_sponsored_changes() when ends_at <= at before
--                         the placement could start (the listing was not
--                         approved during its window, or no run came in
--                         time); stamps expired_at
--   active     expired    apply_sponsored_changes() when ends_at <= at;
--                         stamps expired_at
--   scheduled  cancelled  an admin (RLS, the status column) or the service
--   active     cancelled  connection; stamps cancelled_at and cancelled_by
--
-- expired and cancelled are final. Activation and expiry belong to the
-- service connection (an admin setting them fails with 42501); every other
-- change of status fails with PT409. A new placement is scheduled, without
-- stamps. Its listing and seller never change; its window may be moved only
-- while it is scheduled. The notice stamps are set once, on placements that
-- were active, and never cleared (PT409).
--
-- A due placement whose listing is not approved (a draft, in review, taken
-- down, archived) is not activated: it stays scheduled, and is activated by
-- the first run after the listing is approved again inside its window — or
-- expired, never having run, once its window has passed. A listing that
-- leaves approved while its placement is active keeps the placement (the
-- explore page shows approved listings only, so it is not shown meanwhile).
--
-- The listing's mirror: whenever a placement's status changes (or a
-- placement is deleted), sync_listing_sponsorship() sets the listing's
-- is_sponsored (some placement of it is active) and sponsored_until (the
-- latest end of its active placements), under the listing's row lock and
-- after the change, so the last writer always sees every committed change:
-- an expired or cancelled placement clears is_sponsored unless another
-- placement of the listing is active. All of it in the transaction that
-- changed the status.
--
-- Invariants: the seller is the listing's seller (a composite foreign key
-- onto listings (id, seller_id); a mismatch fails with 23514 first); ends_at
-- > starts_at (23514); no two placements of one listing that are scheduled
-- or active overlap (half-open windows; 23P01, as an exclusion constraint
-- would say; btree_gist may not be installed, so check_sponsored_listing()
-- checks it under a lock on the listing row, which serializes every
-- placement written for that listing).
--
-- Who reads and writes: sellers read their own placements; admins read all,
-- schedule placements (listing_id, seller_id — defaults to the listing's —,
-- starts_at, ends_at), move a scheduled one's window and cancel; the service
-- connection does everything (and is the only one that deletes). The jobs'
-- functions sponsored_changes_due() and apply_sponsored_changes() are the
-- service role's alone.
--
-- Concurrency: the lock order is placement rows (in id order), then listing
-- rows (in id order). apply_sponsored_changes() waits for placement rows
-- locked by others rather than skipping them (a skipped row would wait for
-- the next run, a day away for the orchestrator; the locks it meets — a
-- cancel, a notice being written, another apply — are short) and rechecks
-- each row once it holds it, so two concurrent applies change each
-- placement once.
--
-- SQLSTATEs: 42501 not allowed (RLS, grants, activation or expiry by a
-- client; 403), PT409 not a transition of the state machine, or a change of
-- fixed columns (409), 23P01 overlapping placements (409), 23514 an invalid
-- placement: window, seller not the listing's (400), 23503 no such listing.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- Table
-- -----------------------------------------------------------------------------
create table if not exists public.sponsored_listings (
  id uuid primary key default gen_random_uuid(),
  listing_id uuid not null,
  seller_id uuid not null,
  starts_at timestamptz not null,
  ends_at timestamptz not null,
  status text not null default 'scheduled',
  created_by uuid default auth.uid() references auth.users (id) on delete set null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  activated_at timestamptz,
  expired_at timestamptz,
  cancelled_at timestamptz,
  cancelled_by uuid references auth.users (id) on delete set null,
  started_notified_at timestamptz,
  ending_notified_at timestamptz,
  constraint sponsored_listings_listing_seller_fkey foreign key (listing_id, seller_id)
    references public.listings (id, seller_id) on delete cascade on update cascade,
  constraint sponsored_listings_window_valid check (ends_at > starts_at),
  constraint sponsored_listings_status_known check (
    status in ('scheduled', 'active', 'expired', 'cancelled')
  ),
  constraint sponsored_listings_stamps_match_status check (
    case status
      when 'scheduled' then activated_at is null and expired_at is null and cancelled_at is null
      when 'active' then activated_at is not null and expired_at is null and cancelled_at is null
      when 'expired' then expired_at is not null and cancelled_at is null
      when 'cancelled' then cancelled_at is not null and expired_at is null
    end
  ),
  constraint sponsored_listings_notified_after_activation check (
    (started_notified_at is null and ending_notified_at is null) or activated_at is not null
  )
);

comment on table public.sponsored_listings is
  'Sponsored placements of listings in a window [starts_at, ends_at). Status: scheduled -> active -> expired; scheduled -> expired; scheduled | active -> cancelled (see the migration header). Admins schedule and cancel, process-sponsored-activations activates and expires, mirroring onto listings.is_sponsored / sponsored_until';
comment on column public.sponsored_listings.id is 'The placement''s id';
comment on column public.sponsored_listings.listing_id is 'The listing sponsored; never changes';
comment on column public.sponsored_listings.seller_id is
  'The listing''s seller (enforced: composite key onto listings); defaults to it when omitted; never changes';
comment on column public.sponsored_listings.starts_at is
  'When the placement begins (inclusive); may be moved only while scheduled';
comment on column public.sponsored_listings.ends_at is
  'When the placement ends (exclusive), after starts_at; may be moved only while scheduled';
comment on column public.sponsored_listings.status is
  'scheduled | active | expired | cancelled; changed only along the transitions in the migration header';
comment on column public.sponsored_listings.created_by is 'The admin who scheduled the placement (null: the service connection)';
comment on column public.sponsored_listings.created_at is 'When the placement was scheduled';
comment on column public.sponsored_listings.updated_at is 'Moves on every change (trigger)';
comment on column public.sponsored_listings.activated_at is 'When the placement became active';
comment on column public.sponsored_listings.expired_at is 'When the placement became expired';
comment on column public.sponsored_listings.cancelled_at is 'When the placement was cancelled';
comment on column public.sponsored_listings.cancelled_by is 'The admin who cancelled it (null: the service connection)';
comment on column public.sponsored_listings.started_notified_at is
  'When send-sponsored-notifications told the seller the placement started (set once)';
comment on column public.sponsored_listings.ending_notified_at is
  'When send-sponsored-notifications told the seller the placement ends within 24 hours (set once)';
comment on constraint sponsored_listings_listing_seller_fkey on public.sponsored_listings is
  'The placement''s seller is its listing''s seller; deleting the listing deletes its placements';
comment on constraint sponsored_listings_created_by_fkey on public.sponsored_listings is
  'created_by is a user; null once that user is deleted';
comment on constraint sponsored_listings_cancelled_by_fkey on public.sponsored_listings is
  'cancelled_by is a user; null once that user is deleted';
comment on constraint sponsored_listings_window_valid on public.sponsored_listings is
  'A placement ends after it starts';
comment on constraint sponsored_listings_status_known on public.sponsored_listings is
  'status is scheduled, active, expired or cancelled';
comment on constraint sponsored_listings_stamps_match_status on public.sponsored_listings is
  'The move stamps agree with the status: none while scheduled, activated_at once active, expired_at or cancelled_at at the end';
comment on constraint sponsored_listings_notified_after_activation on public.sponsored_listings is
  'Only a placement that was active has been notified';

-- -----------------------------------------------------------------------------
-- Indexes
-- -----------------------------------------------------------------------------
create index if not exists sponsored_listings_listing_id_starts_at_idx
  on public.sponsored_listings (listing_id, starts_at);
comment on index public.sponsored_listings_listing_id_starts_at_idx is
  'A listing''s placements: the overlap check, the listing mirror and the composite foreign key';
create index if not exists sponsored_listings_seller_id_starts_at_idx
  on public.sponsored_listings (seller_id, starts_at desc);
comment on index public.sponsored_listings_seller_id_starts_at_idx is
  'A seller''s placements, latest first';
create index if not exists sponsored_listings_scheduled_starts_at_idx
  on public.sponsored_listings (starts_at)
  where status = 'scheduled';
comment on index public.sponsored_listings_scheduled_starts_at_idx is
  'Scheduled placements by start: what apply_sponsored_changes() may activate';
create index if not exists sponsored_listings_open_ends_at_idx
  on public.sponsored_listings (ends_at)
  where status in ('scheduled', 'active');
comment on index public.sponsored_listings_open_ends_at_idx is
  'Scheduled and active placements by end: what expires, and the ending notices';

-- -----------------------------------------------------------------------------
-- guard_sponsored_listing_state(): the status state machine
-- -----------------------------------------------------------------------------
create or replace function public.guard_sponsored_listing_state()
returns trigger
language plpgsql
set search_path = ''
as $$
declare
  v_client boolean := public.is_client_request();
begin
  if tg_op = 'INSERT' then
    if new.status is distinct from 'scheduled' or new.activated_at is not null
       or new.expired_at is not null or new.cancelled_at is not null
       or new.cancelled_by is not null or new.started_notified_at is not null
       or new.ending_notified_at is not null then
      raise exception 'Cannot schedule sponsored placement: a new placement starts "scheduled" without stamps, not "%"',
        new.status using errcode = 'PT409';
    end if;
    return new;
  end if;

  if (new.id, new.listing_id, new.seller_id, new.created_by, new.created_at)
     is distinct from (old.id, old.listing_id, old.seller_id, old.created_by, old.created_at)
  then
    raise exception 'Cannot change sponsored placement "%": its listing and seller are fixed; cancel it and schedule another',
      old.id using errcode = 'PT409';
  end if;
  if (new.starts_at, new.ends_at) is distinct from (old.starts_at, old.ends_at)
     and (old.status <> 'scheduled' or new.status <> 'scheduled') then
    raise exception 'Cannot move sponsored placement "%": it is %, and only a scheduled placement''s window moves',
      old.id, old.status using errcode = 'PT409';
  end if;
  if (old.started_notified_at is not null
      and new.started_notified_at is distinct from old.started_notified_at)
     or (old.ending_notified_at is not null
      and new.ending_notified_at is distinct from old.ending_notified_at) then
    raise exception 'Cannot change sponsored placement "%": its notices were sent', old.id
      using errcode = 'PT409';
  end if;

  if new.status = old.status then
    if (new.activated_at, new.expired_at, new.cancelled_at, new.cancelled_by)
       is distinct from (old.activated_at, old.expired_at, old.cancelled_at, old.cancelled_by) then
      raise exception 'Cannot change sponsored placement "%": its stamps change only with its status',
        old.id using errcode = 'PT409';
    end if;
    return new;
  end if;

  case old.status || ' -> ' || new.status
    when 'scheduled -> active' then
      new.activated_at := now();
    when 'scheduled -> expired', 'active -> expired' then
      new.expired_at := now();
    when 'scheduled -> cancelled', 'active -> cancelled' then
      new.cancelled_at := now();
      new.cancelled_by := auth.uid();
    else
      raise exception 'Cannot change sponsored placement "%": "%" cannot become "%"',
        old.id, old.status, new.status using errcode = 'PT409';
  end case;
  if v_client and new.status in ('active', 'expired') then
    raise exception 'Cannot change sponsored placement "%" to "%": only process-sponsored-activations does',
      old.id, new.status using errcode = '42501';
  end if;
  return new;
end
$$;
comment on function public.guard_sponsored_listing_state() is
  'Trigger on sponsored_listings: a new placement is scheduled without stamps; afterwards only scheduled -> active | expired | cancelled and active -> expired | cancelled (PT409 otherwise; activation and expiry by a client 42501), stamping activated_at, expired_at, cancelled_at/cancelled_by; listing and seller never change, the window moves only while scheduled, notice stamps are set once';
revoke execute on function public.guard_sponsored_listing_state() from public, anon, authenticated;

drop trigger if exists sponsored_listings_guard_state on public.sponsored_listings;
create trigger sponsored_listings_guard_state
  before insert or update on public.sponsored_listings
  for each row execute function public.guard_sponsored_listing_state();
comment on trigger sponsored_listings_guard_state on public.sponsored_listings is
  'Enforces the status state machine and the fixed columns (guard_sponsored_listing_state)';

drop trigger if exists sponsored_listings_set_updated_at on public.sponsored_listings;
create trigger sponsored_listings_set_updated_at
  before update on public.sponsored_listings
  for each row execute function public.set_updated_at();
comment on trigger sponsored_listings_set_updated_at on public.sponsored_listings is
  'Moves updated_at on every change';

-- -----------------------------------------------------------------------------
-- check_sponsored_listing(): the listing's seller, and no overlap
-- -----------------------------------------------------------------------------
create or replace function public.check_sponsored_listing()
returns trigger
language plpgsql
-- Definer rights: an admin writes placements as authenticated, which may
-- not lock listing rows (that needs UPDATE on listings), and the overlap
-- must be judged against every placement of the listing, not only those
-- RLS shows the caller. It reads only the listing it locks and that
-- listing's placements, and changes nothing but new.seller_id.
security definer
set search_path = ''
as $$
declare
  v_seller uuid;
  v_other uuid;
begin
  -- Serializes every placement written for this listing: the check below
  -- runs on a fresh snapshot taken after this lock, so a competing writer
  -- that went first is seen.
  select l.seller_id into v_seller
  from public.listings l where l.id = new.listing_id
  for no key update;
  if not found then
    raise exception 'Cannot schedule sponsored placement: listing "%" does not exist',
      new.listing_id using errcode = '23503';
  end if;
  if new.seller_id is null then
    new.seller_id := v_seller;
  elsif new.seller_id <> v_seller then
    raise exception 'Cannot schedule sponsored placement: user "%" is not the seller of listing "%"',
      new.seller_id, new.listing_id using errcode = '23514';
  end if;

  if new.status in ('scheduled', 'active') then
    select s.id into v_other
    from public.sponsored_listings s
    where s.listing_id = new.listing_id
      and s.id <> new.id
      and s.status in ('scheduled', 'active')
      and s.starts_at < new.ends_at
      and new.starts_at < s.ends_at
    limit 1;
    if found then
      raise exception 'Cannot schedule sponsored placement of listing "%": it overlaps placement "%"',
        new.listing_id, v_other using errcode = '23P01';
    end if;
  end if;
  return new;
end
$$;
comment on function public.check_sponsored_listing() is
  'Trigger on sponsored_listings (insert, window moved): under a lock on the listing row, fills seller_id with the listing''s seller or refuses another (23514), and refuses a window overlapping another scheduled or active placement of the listing (23P01)';
revoke execute on function public.check_sponsored_listing() from public, anon, authenticated;

drop trigger if exists sponsored_listings_seller_and_overlap on public.sponsored_listings;
create trigger sponsored_listings_seller_and_overlap
  before insert or update of starts_at, ends_at on public.sponsored_listings
  for each row execute function public.check_sponsored_listing();
comment on trigger sponsored_listings_seller_and_overlap on public.sponsored_listings is
  'Fills and checks the seller and refuses overlapping placements of a listing (check_sponsored_listing); fires after sponsored_listings_guard_state (triggers fire in name order), so a refused move is refused as such';

-- -----------------------------------------------------------------------------
-- sync_listing_sponsorship(): the listing mirrors its active placements
-- -----------------------------------------------------------------------------
create or replace function public.sync_listing_sponsorship(p_listing uuid)
returns void
language plpgsql
set search_path = ''
as $$
declare
  v_active boolean;
  v_until timestamptz;
begin
  -- Lock first, then read on a fresh snapshot: a concurrent change of
  -- another placement of this listing either committed before (seen here)
  -- or syncs again after this transaction (it waits for this lock).
  perform 1 from public.listings l where l.id = p_listing for no key update;
  select count(*) > 0, max(s.ends_at) into v_active, v_until
  from public.sponsored_listings s
  where s.listing_id = p_listing and s.status = 'active';
  update public.listings l
  set is_sponsored = v_active, sponsored_until = v_until
  where l.id = p_listing
    and (l.is_sponsored, l.sponsored_until) is distinct from (v_active, v_until);
end
$$;
comment on function public.sync_listing_sponsorship(uuid) is
  'Sets the listing''s is_sponsored (an active placement exists) and sponsored_until (the latest end of its active placements) under the listing''s row lock; writes only when they change. Service role only';
revoke execute on function public.sync_listing_sponsorship(uuid) from public, anon, authenticated;
grant execute on function public.sync_listing_sponsorship(uuid) to service_role;

create or replace function public.sponsored_listing_changed()
returns trigger
language plpgsql
-- Definer rights: an admin cancels as authenticated, which may neither
-- update listings.is_sponsored nor call sync_listing_sponsorship(); it
-- syncs only the listing of the placement that changed.
security definer
set search_path = ''
as $$
begin
  perform public.sync_listing_sponsorship(coalesce(new.listing_id, old.listing_id));
  return null;
end
$$;
comment on function public.sponsored_listing_changed() is
  'Trigger on sponsored_listings (status change, delete): syncs the listing''s is_sponsored and sponsored_until (sync_listing_sponsorship)';
revoke execute on function public.sponsored_listing_changed() from public, anon, authenticated;

drop trigger if exists sponsored_listings_sync_listing on public.sponsored_listings;
create trigger sponsored_listings_sync_listing
  after update on public.sponsored_listings
  for each row
  when (old.status is distinct from new.status)
  execute function public.sponsored_listing_changed();
comment on trigger sponsored_listings_sync_listing on public.sponsored_listings is
  'A status change re-syncs the listing''s is_sponsored and sponsored_until, in the same transaction';

drop trigger if exists sponsored_listings_sync_listing_on_delete on public.sponsored_listings;
create trigger sponsored_listings_sync_listing_on_delete
  after delete on public.sponsored_listings
  for each row
  when (old.status = 'active')
  execute function public.sponsored_listing_changed();
comment on trigger sponsored_listings_sync_listing_on_delete on public.sponsored_listings is
  'Deleting an active placement (service connection only) re-syncs its listing';

-- -----------------------------------------------------------------------------
-- Row level security
-- -----------------------------------------------------------------------------
alter table public.sponsored_listings enable row level security;

drop policy if exists "Sellers can read their own sponsored placements"
  on public.sponsored_listings;
create policy "Sellers can read their own sponsored placements"
  on public.sponsored_listings
  for select to authenticated
  using (seller_id = (select auth.uid()));
comment on policy "Sellers can read their own sponsored placements" on public.sponsored_listings is
  'A seller reads the placements of their listings, in every status';

drop policy if exists "Admins can read all sponsored placements" on public.sponsored_listings;
create policy "Admins can read all sponsored placements" on public.sponsored_listings
  for select to authenticated
  using ((select public.is_admin()));
comment on policy "Admins can read all sponsored placements" on public.sponsored_listings is
  'Admins read every placement';

drop policy if exists "Admins can schedule sponsored placements" on public.sponsored_listings;
create policy "Admins can schedule sponsored placements" on public.sponsored_listings
  for insert to authenticated
  with check ((select public.is_admin()));
comment on policy "Admins can schedule sponsored placements" on public.sponsored_listings is
  'Admins insert placements (scheduled; the triggers check the seller, the window and overlaps)';

drop policy if exists "Admins can reschedule and cancel sponsored placements"
  on public.sponsored_listings;
create policy "Admins can reschedule and cancel sponsored placements"
  on public.sponsored_listings
  for update to authenticated
  using ((select public.is_admin()))
  with check ((select public.is_admin()));
comment on policy "Admins can reschedule and cancel sponsored placements"
  on public.sponsored_listings is
  'Admins move a scheduled placement''s window or cancel a placement (the state machine trigger allows nothing else)';

-- Clients write only what an admin decides; status moves, stamps and
-- notices are the database's and the jobs'.
revoke all on table public.sponsored_listings from anon, authenticated;
grant select on table public.sponsored_listings to authenticated;
grant insert (listing_id, seller_id, starts_at, ends_at) on table public.sponsored_listings
  to authenticated;
grant update (starts_at, ends_at, status) on table public.sponsored_listings to authenticated;
grant all on table public.sponsored_listings to service_role;

-- -----------------------------------------------------------------------------
-- sponsored_changes_due(): what is due at a time (read only)
-- -----------------------------------------------------------------------------
create or replace function public.sponsored_changes_due(p_at timestamptz)
returns table (
  id uuid,
  listing_id uuid,
  seller_id uuid,
  starts_at timestamptz,
  ends_at timestamptz,
  change text
)
language sql
stable
set search_path = ''
as $$
  select s.id, s.listing_id, s.seller_id, s.starts_at, s.ends_at,
         case when s.ends_at <= p_at then 'expire' else 'activate' end
  from public.sponsored_listings s
  join public.listings l on l.id = s.listing_id
  where s.status in ('scheduled', 'active')
    and (
      s.ends_at <= p_at
      or (s.status = 'scheduled' and s.starts_at <= p_at and l.review_status = 'approved')
    )
  order by 6, s.starts_at, s.id;
$$;
comment on function public.sponsored_changes_due(timestamptz) is
  'The placement changes due at p_at, given the current rows, changing nothing: expire (scheduled or active, ends_at <= p_at) and activate (scheduled, starts_at <= p_at < ends_at, listing approved). What apply_sponsored_changes(p_at) would do; test-sponsored-activation''s dry run. Service role only';
revoke execute on function public.sponsored_changes_due(timestamptz) from public, anon, authenticated;
grant execute on function public.sponsored_changes_due(timestamptz) to service_role;

-- -----------------------------------------------------------------------------
-- apply_sponsored_changes(): activate and expire what is due
-- -----------------------------------------------------------------------------
create or replace function public.apply_sponsored_changes(p_at timestamptz default now())
returns table (
  id uuid,
  listing_id uuid,
  seller_id uuid,
  starts_at timestamptz,
  ends_at timestamptz,
  change text
)
language plpgsql
set search_path = ''
as $$
#variable_conflict use_column
declare
  v_ids uuid[];
  v_listings uuid[];
begin
  if p_at is null or p_at > clock_timestamp() then
    raise exception 'Cannot apply sponsored changes at "%": only now or a past time', p_at
      using errcode = '22023';
  end if;

  -- The due placements, locked in id order. A row another transaction holds
  -- is waited for and then checked again against this where clause (a
  -- concurrent apply that changed it first leaves it no longer due).
  select coalesce(array_agg(d.id order by d.id), '{}'),
         coalesce(array_agg(distinct d.listing_id), '{}')
  into v_ids, v_listings
  from (
    select s.id, s.listing_id
    from public.sponsored_listings s
    join public.listings l on l.id = s.listing_id
    where s.status in ('scheduled', 'active')
      and (
        s.ends_at <= p_at
        or (s.status = 'scheduled' and s.starts_at <= p_at and l.review_status = 'approved')
      )
    order by s.id
    for update of s
  ) d;
  if cardinality(v_ids) = 0 then
    return;
  end if;

  -- Then their listings, in id order: the review status read below cannot
  -- change any more, and the listing mirror (sync_listing_sponsorship(),
  -- fired by the update) finds its locks taken.
  perform 1 from public.listings l
  where l.id = any(v_listings)
  order by l.id
  for no key update;

  return query
  update public.sponsored_listings s
  set status = case when s.ends_at <= p_at then 'expired' else 'active' end
  where s.id = any(v_ids)
    and (
      s.ends_at <= p_at
      or exists (
        select 1 from public.listings l
        where l.id = s.listing_id and l.review_status = 'approved'
      )
    )
  returning s.id, s.listing_id, s.seller_id, s.starts_at, s.ends_at,
            case when s.status = 'active' then 'activate' else 'expire' end;
end
$$;
comment on function public.apply_sponsored_changes(timestamptz) is
  'Applies what sponsored_changes_due(p_at) lists (p_at: now or a past time, else 22023): activates and expires the due placements and, in the same transaction, their listings'' is_sponsored and sponsored_until; returns what it changed. Idempotent: a rerun finds nothing due, and concurrent runs change each placement once (row locks). Service role only';
revoke execute on function public.apply_sponsored_changes(timestamptz) from public, anon, authenticated;
grant execute on function public.apply_sponsored_changes(timestamptz) to service_role;
