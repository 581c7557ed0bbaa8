-- =============================================================================
-- Duplicates: the same listing posted twice, the same price alert set twice
--
-- cleanup-duplicates (admin) finds duplicates with the find_* functions
-- below (read-only; a dry run calls only these) and, when asked to, removes
-- them from view with the archive/deactivate functions. Nothing is ever
-- deleted: a duplicate listing is archived with a reason, a duplicate alert
-- is deactivated. In every group the oldest row is kept (created_at, then
-- id), except that a listing group keeps its oldest APPROVED listing when it
-- has one (see below).
--
-- Duplicate listings: listings of ONE seller, not archived, that have a URL
-- and the same normalized title and normalized URL.
--   * Title (normalize_listing_title): lower case; every run of punctuation
--     and white space becomes one space; trimmed. "My  SaaS!" = "my saas",
--     "Foo-Bar" = "foo bar".
--   * URL (normalize_listing_url): the scheme is dropped (http and https are
--     the same), so are the query and the fragment; the host is lower-cased
--     and loses a leading "www."; trailing slashes of the path are dropped.
--     The path keeps its case (paths are case-sensitive on the web) and a
--     port stays part of the host. "HTTPS://www.Example.com/app/?ref=x" =
--     "http://example.com/app" = "example.com/app".
--   * A listing without a URL is nobody's duplicate: a title alone is too
--     weak a sign (two projects may share a name), and archiving is for
--     sure cases only.
--   * Different sellers never share a duplicate group.
--
-- Which listings are archived. The review state machine
-- (listings_guard_review, listings and listing content review migrations)
-- lets the service connection archive an approved listing only
-- (approved -> archived); draft, pending_review and rejected cannot become
-- archived. This migration does NOT change that state machine: it archives
-- the approved duplicates and reports the others as found but unchanged (a
-- draft or a rejected copy is not public; a pending copy an admin approves
-- is archived by the next run). So that a run never takes a project off
-- the market while keeping an unpublished copy of it, a group keeps its
-- oldest approved listing, and only when none is approved its oldest
-- listing. A group's duplicate_ids are its other listings, in that same
-- order (approved first, then by age).
--
-- listings.archived_reason says why a job archived a listing
-- ("duplicate of listing <kept id>"); null when a seller or an admin
-- archived it. It is set only together with archived (check constraint)
-- and cleared when the listing leaves archived (a seller reopening it,
-- trigger listings_clear_archived_reason). Clients cannot write it: the
-- listings grants to authenticated are per column and do not name it.
-- The state machine itself is unchanged:
--
--   from            to              who
--   draft           pending_review  seller (submit)
--   pending_review  draft           seller (withdraw the submission)
--   pending_review  approved        admin
--   pending_review  rejected        admin (rejection_reason says why)
--   rejected        pending_review  seller (resubmit)
--   rejected        draft           seller (back to editing)
--   approved        pending_review  seller, by editing content
--   approved        archived        seller or admin (withdrawn, sold);
--                                   service connection: a duplicate, with
--                                   archived_reason (this migration)
--   approved        rejected        admin (take down)
--   archived        draft           seller (reopen; clears archived_reason)
--
-- Duplicate price alerts: ACTIVE alerts of ONE user that ask the same
-- thing through the same channels:
--   * listing alerts: the same listing_id and target_price;
--   * saved searches: the same category (trimmed, lower case), max_price,
--     currency and keywords (each trimmed and lower-cased, blanks and
--     repeats dropped, order ignored).
--   Channels matter (compared as sets): deactivating an e-mail alert
--   because an in-app one asks the same would silence the e-mail, so
--   alerts that differ in channels are not duplicates.
--   The oldest alert is kept; the others get active = false.
--
-- Concurrency: archive_duplicate_listings() and
-- deactivate_duplicate_price_alerts() each take a transaction-scoped
-- advisory lock on a constant key of their own before they look, then find
-- and change in the same transaction (each later statement of a volatile
-- function sees what committed before it, in READ COMMITTED, the default).
-- Two concurrent runs therefore queue: the second finds what the first
-- left and changes nothing it changed. The updates also re-check the row's
-- state (approved, active), so a row is changed once even without the lock.
--
-- Who may call: the service connection (service_role) only; the function
-- cleanup-duplicates checks that its caller is an admin.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- listings.archived_reason
-- -----------------------------------------------------------------------------
alter table public.listings add column if not exists archived_reason text;
comment on column public.listings.archived_reason is
  'Why a job archived the listing (cleanup-duplicates: "duplicate of listing <kept id>"); null when its seller or an admin archived it. Set only while archived, cleared on reopening; clients cannot write it';

alter table public.listings drop constraint if exists listings_archived_reason_length;
alter table public.listings add constraint listings_archived_reason_length
  check (char_length(archived_reason) between 1 and 500);
comment on constraint listings_archived_reason_length on public.listings is
  'An archive reason is 1 to 500 characters';

alter table public.listings drop constraint if exists listings_archived_reason_only_when_archived;
alter table public.listings add constraint listings_archived_reason_only_when_archived
  check (archived_reason is null or review_status = 'archived');
comment on constraint listings_archived_reason_only_when_archived on public.listings is
  'Only an archived listing has an archive reason';

-- Clients (authenticated) write listings through per-column grants
-- (listings migration) that do not name archived_reason, so they cannot
-- write it; reading it is covered by their table-wide select grant and the
-- listings' RLS (a seller sees why their own listing was archived).

-- -----------------------------------------------------------------------------
-- listings_clear_archived_reason(): leaving archived clears the reason
-- -----------------------------------------------------------------------------
create or replace function public.listings_clear_archived_reason()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  new.archived_reason := null;
  return new;
end
$$;
comment on function public.listings_clear_archived_reason() is
  'Trigger on listings: clears archived_reason when the listing leaves archived (a seller reopening it), so the reason never outlives the archiving it explains';
revoke execute on function public.listings_clear_archived_reason() from public, anon, authenticated;

drop trigger if exists listings_clear_archived_reason on public.listings;
create trigger listings_clear_archived_reason
  before update on public.listings
  for each row
  when (old.archived_reason is not null and new.review_status is distinct from 'archived')
  execute function public.listings_clear_archived_reason();
comment on trigger listings_clear_archived_reason on public.listings is
  'Clears archived_reason when an archived listing changes to another review status';

-- -----------------------------------------------------------------------------
-- normalize_listing_title(), normalize_listing_url(): the comparison keys
-- -----------------------------------------------------------------------------
create or replace function public.normalize_listing_title(p_title text)
returns text
language plpgsql
immutable
parallel safe
set search_path = ''
as $$
begin
  -- PL/pgSQL rather than SQL: a SQL function with a SET clause is planned
  -- again on every call, and this one runs once per listing.
  return btrim(regexp_replace(lower(p_title), '[[:punct:][:space:]]+', ' ', 'g'));
end
$$;
comment on function public.normalize_listing_title(text) is
  'A listing title as duplicates are compared: lower case, each run of punctuation and white space one space, trimmed';
revoke execute on function public.normalize_listing_title(text) from public, anon, authenticated;
grant execute on function public.normalize_listing_title(text) to service_role;

create or replace function public.normalize_listing_url(p_url text)
returns text
language plpgsql
immutable
parallel safe
set search_path = ''
as $$
declare
  v_rest text;
  v_host text;
begin
  -- Without scheme, query and fragment.
  v_rest := regexp_replace(
    regexp_replace(btrim(p_url), '^[[:alpha:]][[:alnum:]+.-]*://', ''),
    '[?#].*$', '');
  v_host := split_part(v_rest, '/', 1);
  return nullif(
    regexp_replace(lower(v_host), '^www\.', '')
      || regexp_replace(substr(v_rest, char_length(v_host) + 1), '/+$', ''),
    '');
end
$$;
comment on function public.normalize_listing_url(text) is
  'A listing URL as duplicates are compared: no scheme (http = https), no query or fragment, host lower case without a leading "www.", path without trailing slashes (its case kept); null for a null or empty URL';
revoke execute on function public.normalize_listing_url(text) from public, anon, authenticated;
grant execute on function public.normalize_listing_url(text) to service_role;

-- -----------------------------------------------------------------------------
-- find_duplicate_listings(): the groups (read-only)
-- -----------------------------------------------------------------------------
create or replace function public.find_duplicate_listings()
returns table (keep_id uuid, duplicate_ids uuid[])
language sql
stable
set search_path = ''
as $$
  with candidates as (
    select l.id, l.seller_id, l.created_at, l.review_status,
           public.normalize_listing_title(l.title) as title_key,
           public.normalize_listing_url(l.url) as url_key
    from public.listings l
    where l.review_status <> 'archived' and l.url is not null
  ),
  groups as (
    select array_agg(c.id order by (c.review_status = 'approved') desc, c.created_at, c.id) as ids
    from candidates c
    where c.url_key is not null
    group by c.seller_id, c.title_key, c.url_key
    having count(*) > 1
  )
  select g.ids[1], g.ids[2:]
  from groups g
  order by g.ids[1];
$$;
comment on function public.find_duplicate_listings() is
  'Duplicate listings: per seller, the listings not archived with the same normalized title and URL (see the duplicates migration header). keep_id is the oldest approved one (else the oldest), duplicate_ids the others (approved first, then by age). Reads only';
revoke execute on function public.find_duplicate_listings() from public, anon, authenticated;
grant execute on function public.find_duplicate_listings() to service_role;

-- -----------------------------------------------------------------------------
-- archive_duplicate_listings(): archive the approved duplicates, once
-- -----------------------------------------------------------------------------
create or replace function public.archive_duplicate_listings()
returns table (keep_id uuid, duplicate_ids uuid[], archived_ids uuid[])
language plpgsql
volatile
set search_path = ''
as $$
begin
  -- One run at a time; what a run before this one archived is seen below.
  perform pg_advisory_xact_lock(hashtextextended('cleanup-duplicates:listings', 0));
  return query
  with grouped as (
    select f.keep_id as keep, f.duplicate_ids as dups from public.find_duplicate_listings() f
  ),
  archived as (
    update public.listings l
       set review_status = 'archived',
           archived_reason = 'duplicate of listing ' || grouped.keep
      from grouped
     where l.id = any(grouped.dups)
       and l.review_status = 'approved'
    returning l.id
  )
  select grouped.keep, grouped.dups,
         array(select d from unnest(grouped.dups) with ordinality as u(d, n)
               where d in (select a.id from archived a) order by n)
  from grouped
  order by grouped.keep;
end
$$;
comment on function public.archive_duplicate_listings() is
  'Archives the approved duplicate listings (archived_reason "duplicate of listing <keep_id>") and returns every group with the ids it archived; the others stay as they are. Serialized by a transaction advisory lock: a concurrent second run archives nothing the first did';
revoke execute on function public.archive_duplicate_listings() from public, anon, authenticated;
grant execute on function public.archive_duplicate_listings() to service_role;

-- -----------------------------------------------------------------------------
-- normalize_alert_words(): keywords and channels as sets
-- -----------------------------------------------------------------------------
create or replace function public.normalize_alert_words(p_words text[])
returns text[]
language plpgsql
immutable
parallel safe
set search_path = ''
as $$
begin
  return array(
    select distinct lower(btrim(w)) from unnest(p_words) as w
    where btrim(w) <> ''
    order by 1
  );
end
$$;
comment on function public.normalize_alert_words(text[]) is
  'A price alert''s keywords or channels as duplicates are compared: each trimmed and lower case, blanks and repeats dropped, sorted';
revoke execute on function public.normalize_alert_words(text[]) from public, anon, authenticated;
grant execute on function public.normalize_alert_words(text[]) to service_role;

-- -----------------------------------------------------------------------------
-- find_duplicate_price_alerts(): the groups (read-only)
-- -----------------------------------------------------------------------------
create or replace function public.find_duplicate_price_alerts()
returns table (keep_id uuid, duplicate_ids uuid[])
language sql
stable
set search_path = ''
as $$
  with groups as (
    select array_agg(a.id order by a.created_at, a.id) as ids
    from public.price_alerts a
    where a.active
    group by a.user_id,
             a.listing_id, a.target_price,
             lower(btrim(a.category)), a.max_price, a.currency,
             public.normalize_alert_words(a.keywords),
             public.normalize_alert_words(a.channels)
    having count(*) > 1
  )
  select g.ids[1], g.ids[2:]
  from groups g
  order by g.ids[1];
$$;
comment on function public.find_duplicate_price_alerts() is
  'Duplicate price alerts: per user, the active alerts on the same listing and target price, or the same saved search (category, max_price, currency, keywords), through the same channels (see the duplicates migration header). keep_id is the oldest, duplicate_ids the others by age. Reads only';
revoke execute on function public.find_duplicate_price_alerts() from public, anon, authenticated;
grant execute on function public.find_duplicate_price_alerts() to service_role;

-- -----------------------------------------------------------------------------
-- deactivate_duplicate_price_alerts(): deactivate the duplicates, once
-- -----------------------------------------------------------------------------
create or replace function public.deactivate_duplicate_price_alerts()
returns table (keep_id uuid, duplicate_ids uuid[], deactivated_ids uuid[])
language plpgsql
volatile
set search_path = ''
as $$
begin
  -- One run at a time; what a run before this one deactivated is seen below.
  perform pg_advisory_xact_lock(hashtextextended('cleanup-duplicates:price_alerts', 0));
  return query
  with grouped as (
    select f.keep_id as keep, f.duplicate_ids as dups from public.find_duplicate_price_alerts() f
  ),
  deactivated as (
    update public.price_alerts a
       set active = false
      from grouped
     where a.id = any(grouped.dups)
       and a.active
    returning a.id
  )
  select grouped.keep, grouped.dups,
         array(select d from unnest(grouped.dups) with ordinality as u(d, n)
               where d in (select x.id from deactivated x) order by n)
  from grouped
  order by grouped.keep;
end
$$;
comment on function public.deactivate_duplicate_price_alerts() is
  'Deactivates the duplicate price alerts (active = false; the oldest of each group stays active) and returns every group with the ids it deactivated. Serialized by a transaction advisory lock: a concurrent second run deactivates nothing the first did';
revoke execute on function public.deactivate_duplicate_price_alerts() from public, anon, authenticated;
grant execute on function public.deactivate_duplicate_price_alerts() to service_role;
