-- =============================================================================
-- Listing content review: an edited approved listing is reviewed again
--
-- Security finding: a seller could change the content of an approved listing
-- (its url, revenue, title, ...) and it stayed approved and public, so
-- content no admin had seen was published. Now a change to the content of an
-- approved listing made by a client that is not an admin sends the listing
-- back to pending_review, with the stamps of a submission (submitted_at =
-- now(), rejection_reason cleared; reviewed_at and reviewed_by stay as the
-- record of the last review). Nothing unreviewed is ever public: from that
-- update on, listing_view_secure shows the listing only to its seller and to
-- admins until an admin approves it again.
--
-- Content: title, description, url, category, asking_price, currency,
-- monthly_revenue, monthly_profit, monthly_traffic. Admins and the service
-- connection may edit an approved listing and it stays approved (a
-- correction by a reviewer needs no review).
--
-- Review status state machine (enforced by listings_guard_review(); this
-- migration adds the row marked *):
--
--                                    edit content (seller) *
--                                   ┌───────────◄───────────┐
--            submit (seller)        ▼    approve (admin)    │
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
--   approved        pending_review  seller, by editing content (*)
--   approved        archived        seller or admin (withdrawn, sold)
--   approved        rejected        admin (take down)
--   archived        draft           seller (reopen; needs review again)
--
-- approved -> pending_review happens only through a content edit: the
-- update's review_status may stay 'approved' (the trigger changes it) or say
-- 'pending_review'; without a content change, and for admins and the
-- service connection, it is not a transition (PT409). A seller's update that
-- edits content and archives the listing in one statement archives it
-- (archived is not public either, and reopening leads through review).
--
-- The broadcast of review status changes (realtime migration) was a
-- column trigger, `after update of review_status`, which PostgreSQL fires
-- only when the UPDATE statement names review_status: a change made by this
-- BEFORE trigger would not have been pushed to the seller. It is recreated
-- here for every update, still filtered on a changed review_status.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- listings_guard_review(): the review state machine, with content review
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
  v_content_edit boolean := false;
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

  -- A client that is not an admin changing the content of an approved
  -- listing sends it back to review, unless the same update takes it to
  -- another status of its own (archived; a reserved one fails below).
  if v_client and not v_admin
     and old.review_status = 'approved'
     and new.review_status in ('approved', 'pending_review')
     and (new.title, new.description, new.url, new.category, new.asking_price, new.currency,
          new.monthly_revenue, new.monthly_profit, new.monthly_traffic)
         is distinct from
         (old.title, old.description, old.url, old.category, old.asking_price, old.currency,
          old.monthly_revenue, old.monthly_profit, old.monthly_traffic) then
    v_content_edit := true;
    new.review_status := 'pending_review';
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
    -- Only by a seller's content edit (above); never asked for on its own.
    when 'approved -> pending_review' then case when v_content_edit then true end
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
  'Trigger on listings: allows only the review status transitions of the state machine (PT409 otherwise), reserves approve/reject/take-down to admins and the service connection (42501), sends an approved listing back to pending_review when a client that is not an admin changes its content (title, description, url, category, asking_price, currency, monthly_revenue, monthly_profit, monthly_traffic), and stamps submitted_at, reviewed_at and reviewed_by';
revoke execute on function public.listings_guard_review() from public, anon, authenticated;

-- The trigger itself is unchanged (listings migration); create or replace
-- above swapped its function.

comment on table public.listings is
  'Projects for sale. Review status: draft -> pending_review -> approved | rejected; rejected -> pending_review | draft; approved -> archived | rejected, or pending_review when a seller edits its content; archived -> draft (see the listings and listing content review migration headers). Public reads go through listing_view_secure';

-- -----------------------------------------------------------------------------
-- Broadcast: every change of review status, also one made by the trigger
-- -----------------------------------------------------------------------------
drop trigger if exists listings_broadcast_status_change on public.listings;
create trigger listings_broadcast_status_change
  after update on public.listings
  for each row
  when (old.review_status is distinct from new.review_status)
  execute function public.broadcast_listing_status_change();
comment on trigger listings_broadcast_status_change on public.listings is
  'Broadcasts every review status change to the seller, including the return to pending_review that listings_guard_review() makes on a content edit (hence not a column trigger on review_status)';
