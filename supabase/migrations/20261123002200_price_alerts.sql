-- =============================================================================
-- Price alerts: a user's alerts, what matched them, and each scan's summary
--
-- price_alerts: a user's alert, one of two kinds (price_alerts_one_kind):
--   * a listing alert (listing_id, target_price): tell me when this
--     listing's asking price is at or below target_price (in the listing's
--     currency, whatever it is);
--   * a saved search (category, currency, max_price, keywords): tell me about
--     approved listings in category, in currency, at or below max_price,
--     whose title or description contains every keyword.
-- Each has channels (a subset of email, in_app; default both) and active.
-- Users create, read, change and delete their own alerts (RLS). A listing
-- alert is only for an approved listing of someone else; its listing never
-- changes (listing_id is not updatable: watch another listing with another
-- alert). At most 50 active alerts per user (limit_active_price_alerts():
-- SQLSTATE PT409, answered 409). Keywords are stored lower-case, trimmed,
-- without empty entries or repeats, sorted (normalize_price_alert()), so
-- two searches for the same words are equal rows; category is trimmed,
-- currency upper-cased.
--
-- Matching (match_price_alerts(p_since), run by run-price-alerts): one
-- INSERT ... SELECT ... ON CONFLICT DO NOTHING over every active alert, no
-- loop per alert. An alert matches a listing when
--   * the alert is active, the listing approved, and the listing is not the
--     alert user's own;
--   * listing alert: asking_price <= target_price. Every run joins every
--     active listing alert to its listing by id (a full, linear scan);
--   * saved search: lower(category) equal, the same currency,
--     asking_price <= max_price, every keyword found (case-insensitive,
--     as a substring) in the title or the description, and the listing
--     changed after the search was saved (updated_at >= the alert's
--     created_at: new listings and price changes since, not the back
--     catalogue). Incremental: only listings with updated_at >= p_since are
--     looked at (listings_approved_updated_at_idx); p_since is the start of
--     the last run that matched (succeeded or partial) minus 10 minutes
--     (transactions that commit late; the unique key absorbs the overlap),
--     or now() - 24 hours on the very first run (price_alerts_since()). updated_at moves on every edit
--     and review change of a listing, not on view counts or sponsorship
--     (listing job columns migration).
-- A match writes one event per channel of the alert at the listing's current
-- price. The unique key (alert_id, listing_id, channel, price) makes a rerun
-- insert nothing, while a further drop in price is a new event (a price that
-- goes up and comes back to the same value is not).
--
-- price_alert_events.status state machine (guard_price_alert_event()):
--
--   (insert) ──► pending ──► sent         in-app notice written, or e-mail
--                   │                     sent/captured
--                   ├──────► suppressed   the user's preference blocks the
--                   │                     channel, no e-mail address, or the
--                   │                     alert or listing went away first
--                   └──────► failed ──► sent   the e-mail failed; a later
--                                              retry of it succeeded
--
--   from     to          when
--   pending  sent        delivery wrote the in-app notice; reconcile saw the
--                        e-mail sent or captured
--   pending  suppressed  delivery (preference, no address, alert inactive,
--                        listing no longer on sale); reconcile saw the
--                        e-mail suppressed
--   pending  failed      reconcile saw the e-mail failed
--   failed   sent        reconcile saw the retried e-mail sent or captured
-- sent and suppressed are final. An event's alert, user, listing, channel,
-- price and currency never change; email_log_id and notification_id are set
-- once. Any other change fails with SQLSTATE PT409.
--
-- Delivery (_shared/price_alerts/): pending events without an e-mail row are
-- claimed per user (for update skip locked) in one transaction that writes
-- one notice through the notifications module (type price_alerts: in-app
-- when any claimed event is in_app, an e-mail of type price_alert when any
-- is email) and sets in_app events sent or suppressed; email events keep
-- pending with their email_log_id. After the outbox is flushed,
-- reconcile_price_alert_emails() moves email events along their e-mail's
-- send_status, set-based; it also catches up events whose e-mail was
-- retried later (failed -> sent). At most 500 users are delivered per run;
-- the rest wait for the next run.
--
-- price_alert_runs: one row per run (started_at, finished_at, duration_ms
-- and the durations of matching and delivery, counts). Admins read it;
-- only the service connection writes.
--
-- Who writes: users write their own price_alerts (RLS, column grants);
-- events and runs only the service connection. Users read the events of
-- their own alerts; admins read every alert, event and run.
--
-- SQLSTATEs: 42501 not allowed (RLS, grants; 403), PT409 too many active
-- alerts, or an event change outside the state machine (409), 23514 an
-- invalid alert (kind, prices, currency, channels, keywords; 400).
-- =============================================================================

-- -----------------------------------------------------------------------------
-- price_alerts
-- -----------------------------------------------------------------------------
create table if not exists public.price_alerts (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null default auth.uid() references auth.users (id) on delete cascade,
  -- A listing alert: tell me when this listing's asking price is at or below target_price.
  listing_id uuid references public.listings (id) on delete cascade,
  target_price numeric(12, 2),
  -- A saved search: tell me about approved listings in category, in currency,
  -- at or below max_price, whose title or description has every keyword.
  category text,
  max_price numeric(12, 2),
  currency text,
  keywords text[] not null default '{}',
  channels text[] not null default '{email,in_app}',
  active boolean not null default true,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint price_alerts_one_kind check (
    (listing_id is not null and target_price is not null
       and category is null and max_price is null and currency is null and keywords = '{}')
    or (listing_id is null and target_price is null
       and category is not null and max_price is not null and currency is not null)
  ),
  constraint price_alerts_target_price_not_negative check (target_price >= 0),
  constraint price_alerts_max_price_not_negative check (max_price >= 0),
  constraint price_alerts_category_length check (char_length(category) between 1 and 60),
  constraint price_alerts_currency_iso_4217 check (currency ~ '^[A-Z]{3}$'),
  constraint price_alerts_keywords_limit check (cardinality(keywords) <= 10),
  constraint price_alerts_channels_known check (
    cardinality(channels) between 1 and 2 and channels <@ array['email', 'in_app']::text[]
  )
);

comment on table public.price_alerts is
  'A user''s price alert: on one listing (listing_id, target_price) or a saved search (category, currency, max_price, keywords), with channels and active. Users manage their own (RLS); run-price-alerts matches the active ones (see the migration header)';
comment on column public.price_alerts.id is 'The alert''s id';
comment on column public.price_alerts.user_id is 'Whose alert it is; defaults to the signed-in user and never changes';
comment on column public.price_alerts.listing_id is
  'Listing alert: the listing watched (approved and not the user''s own when created); null for a saved search. Never changes';
comment on column public.price_alerts.target_price is
  'Listing alert: matches when the listing''s asking price is at or below it, in the listing''s currency';
comment on column public.price_alerts.category is
  'Saved search: the listing category, compared case-insensitively (stored trimmed)';
comment on column public.price_alerts.max_price is 'Saved search: the highest asking price that matches, in currency';
comment on column public.price_alerts.currency is 'Saved search: ISO 4217 code (stored upper case); only listings in it match';
comment on column public.price_alerts.keywords is
  'Saved search: words that must all appear (case-insensitive substring) in the title or description; stored lower-case, trimmed, distinct, sorted; at most 10 of 1 to 50 characters';
comment on column public.price_alerts.channels is 'Where matches are told: a non-empty subset of email, in_app (default both)';
comment on column public.price_alerts.active is 'Only active alerts are matched; at most 50 active per user';
comment on column public.price_alerts.created_at is
  'When the alert was saved; a saved search matches only listings changed after it';
comment on column public.price_alerts.updated_at is 'Moves on every change (trigger)';
comment on constraint price_alerts_one_kind on public.price_alerts is
  'Exactly one kind: a listing alert (listing_id, target_price; no search fields) or a saved search (category, max_price, currency; no listing)';
comment on constraint price_alerts_target_price_not_negative on public.price_alerts is
  'A target price is not negative';
comment on constraint price_alerts_max_price_not_negative on public.price_alerts is
  'A maximum price is not negative';
comment on constraint price_alerts_category_length on public.price_alerts is
  'A category is 1 to 60 characters';
comment on constraint price_alerts_currency_iso_4217 on public.price_alerts is
  'A currency is an ISO 4217 code, upper case';
comment on constraint price_alerts_keywords_limit on public.price_alerts is
  'At most 10 keywords';
comment on constraint price_alerts_channels_known on public.price_alerts is
  'One or two channels among email and in_app';

-- -----------------------------------------------------------------------------
-- price_alerts: indexes
-- -----------------------------------------------------------------------------
-- A user's alerts, newest first (their list; the active cap counts here).
create index if not exists price_alerts_user_id_created_at_idx
  on public.price_alerts (user_id, created_at desc);
comment on index public.price_alerts_user_id_created_at_idx is
  'A user''s alerts, newest first (the user''s list, the active-alert cap)';

-- Listing alerts by listing: the cascade from listings (the matcher hashes
-- every listing alert against the approved listings instead).
create index if not exists price_alerts_listing_id_idx
  on public.price_alerts (listing_id)
  where listing_id is not null;
comment on index public.price_alerts_listing_id_idx is
  'Listing alerts by listing (the cascade when a listing is deleted, the alerts on one listing)';

-- Active saved searches by (category, currency): the matcher's lookup for
-- each changed listing.
create index if not exists price_alerts_active_search_idx
  on public.price_alerts (lower(category), currency, max_price)
  where active and listing_id is null;
comment on index public.price_alerts_active_search_idx is
  'Active saved searches by lower(category), currency and max_price (the matcher''s lookup for each changed listing)';

-- -----------------------------------------------------------------------------
-- listings: changed approved listings (the saved-search scan)
-- -----------------------------------------------------------------------------
create index if not exists listings_approved_updated_at_idx
  on public.listings (updated_at)
  where review_status = 'approved';
comment on index public.listings_approved_updated_at_idx is
  'Approved listings by when they last changed: the price-alert matcher reads those changed since its last run';

-- -----------------------------------------------------------------------------
-- listing_open_for_price_alerts(): approved and not the caller's own
-- -----------------------------------------------------------------------------
create or replace function public.listing_open_for_price_alerts(p_listing uuid)
returns boolean
language plpgsql
stable
-- Definer rights: the insert policy asks it for a user, who may not read
-- other sellers' listing rows. It tells only what the public listing
-- already shows: on sale, and whether it is the caller's own.
security definer
set search_path = ''
as $$
begin
  return exists (
    select 1 from public.listings l
    where l.id = p_listing
      and l.review_status = 'approved'
      and l.seller_id is distinct from auth.uid()
  );
end
$$;
comment on function public.listing_open_for_price_alerts(uuid) is
  'True when the listing is approved and not the signed-in caller''s own: a listing alert may watch it';
revoke execute on function public.listing_open_for_price_alerts(uuid) from public, anon;
grant execute on function public.listing_open_for_price_alerts(uuid) to authenticated, service_role;

-- -----------------------------------------------------------------------------
-- normalize_price_alert(): keywords, category and currency as stored
-- -----------------------------------------------------------------------------
create or replace function public.normalize_price_alert()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if exists (
    select 1 from unnest(new.keywords) k where k is null or char_length(btrim(k)) > 50
  ) then
    raise exception 'Cannot save price alert: a keyword is at most 50 characters'
      using errcode = '23514';
  end if;
  new.keywords := coalesce(
    array(
      select distinct lower(btrim(k)) from unnest(new.keywords) k
      where btrim(k) <> ''
      order by 1
    ),
    '{}'
  );
  new.channels := coalesce(array(select distinct c from unnest(new.channels) c order by 1), '{}');
  new.category := btrim(new.category);
  new.currency := upper(btrim(new.currency));
  return new;
end
$$;
comment on function public.normalize_price_alert() is
  'Trigger on price_alerts: keywords lower-case, trimmed, without empty entries or repeats, sorted (23514 for one over 50 characters); channels distinct and sorted; category trimmed; currency upper-cased';
revoke execute on function public.normalize_price_alert() from public, anon, authenticated;

drop trigger if exists price_alerts_normalize on public.price_alerts;
create trigger price_alerts_normalize
  before insert or update on public.price_alerts
  for each row execute function public.normalize_price_alert();
comment on trigger price_alerts_normalize on public.price_alerts is
  'Stores keywords, channels, category and currency normalized (normalize_price_alert)';

-- -----------------------------------------------------------------------------
-- limit_active_price_alerts(): at most 50 active alerts per user
-- -----------------------------------------------------------------------------
create or replace function public.limit_active_price_alerts()
returns trigger
language plpgsql
set search_path = ''
as $$
declare
  v_limit constant integer := 50;
  v_active integer;
begin
  if not new.active or (tg_op = 'UPDATE' and old.active and old.user_id = new.user_id) then
    return new;
  end if;
  -- One writer per user at a time, so two inserts at once cannot both pass
  -- the count (transaction-scoped: safe behind the transaction pooler).
  perform pg_advisory_xact_lock(hashtextextended('price_alerts:' || new.user_id::text, 0));
  select count(*) into v_active
  from public.price_alerts a
  where a.user_id = new.user_id and a.active and a.id <> new.id;
  if v_active >= v_limit then
    raise exception 'Cannot save price alert: you have % active price alerts, the most allowed; switch one off first',
      v_active using errcode = 'PT409';
  end if;
  return new;
end
$$;
comment on function public.limit_active_price_alerts() is
  'Trigger on price_alerts: a new or reactivated active alert fails with PT409 when its user already has 50 active ones (serialized per user by a transaction advisory lock)';
revoke execute on function public.limit_active_price_alerts() from public, anon, authenticated;

drop trigger if exists price_alerts_limit_active on public.price_alerts;
create trigger price_alerts_limit_active
  before insert or update on public.price_alerts
  for each row execute function public.limit_active_price_alerts();
comment on trigger price_alerts_limit_active on public.price_alerts is
  'At most 50 active alerts per user (limit_active_price_alerts; PT409)';

drop trigger if exists price_alerts_set_updated_at on public.price_alerts;
create trigger price_alerts_set_updated_at
  before update on public.price_alerts
  for each row execute function public.set_updated_at();
comment on trigger price_alerts_set_updated_at on public.price_alerts is
  'Moves updated_at on every change';

-- -----------------------------------------------------------------------------
-- price_alerts: row level security
-- -----------------------------------------------------------------------------
alter table public.price_alerts enable row level security;

drop policy if exists "Users can read their own price alerts" on public.price_alerts;
create policy "Users can read their own price alerts" on public.price_alerts
  for select to authenticated
  using (user_id = (select auth.uid()));
comment on policy "Users can read their own price alerts" on public.price_alerts is
  'A user reads their own alerts, active or not';

drop policy if exists "Users can create their own price alerts" on public.price_alerts;
create policy "Users can create their own price alerts" on public.price_alerts
  for insert to authenticated
  with check (
    user_id = (select auth.uid())
    and (listing_id is null or public.listing_open_for_price_alerts(listing_id))
  );
comment on policy "Users can create their own price alerts" on public.price_alerts is
  'A user saves alerts of their own: saved searches, and listing alerts on approved listings that are not their own';

drop policy if exists "Users can change their own price alerts" on public.price_alerts;
create policy "Users can change their own price alerts" on public.price_alerts
  for update to authenticated
  using (user_id = (select auth.uid()))
  with check (user_id = (select auth.uid()));
comment on policy "Users can change their own price alerts" on public.price_alerts is
  'A user changes their own alerts (prices, search terms, channels, active; not the listing watched)';

drop policy if exists "Users can delete their own price alerts" on public.price_alerts;
create policy "Users can delete their own price alerts" on public.price_alerts
  for delete to authenticated
  using (user_id = (select auth.uid()));
comment on policy "Users can delete their own price alerts" on public.price_alerts is
  'A user deletes their own alerts (and with them their events)';

drop policy if exists "Admins can read all price alerts" on public.price_alerts;
create policy "Admins can read all price alerts" on public.price_alerts
  for select to authenticated
  using ((select public.is_admin()));
comment on policy "Admins can read all price alerts" on public.price_alerts is
  'Admins read every alert';

-- user_id, id and the stamps are the database's; listing_id is set once.
revoke all on table public.price_alerts from anon, authenticated;
grant select, delete on table public.price_alerts to authenticated;
grant insert (listing_id, target_price, category, max_price, currency, keywords, channels, active)
  on table public.price_alerts to authenticated;
grant update (target_price, category, max_price, currency, keywords, channels, active)
  on table public.price_alerts to authenticated;
grant all on table public.price_alerts to service_role;

-- -----------------------------------------------------------------------------
-- price_alert_runs
-- -----------------------------------------------------------------------------
create table if not exists public.price_alert_runs (
  id uuid primary key default gen_random_uuid(),
  job_run_id uuid references public.job_runs (id) on delete set null,
  status text not null default 'running',
  since timestamptz not null,
  started_at timestamptz not null default now(),
  finished_at timestamptz,
  duration_ms integer,
  match_ms integer,
  delivery_ms integer,
  alerts_scanned integer not null default 0,
  matches integer not null default 0,
  events_created integer not null default 0,
  delivered integer not null default 0,
  failed integer not null default 0,
  suppressed integer not null default 0,
  users_notified integer not null default 0,
  pending_left integer not null default 0,
  constraint price_alert_runs_status_known check (
    status in ('running', 'succeeded', 'partial', 'failed')
  ),
  constraint price_alert_runs_finished_unless_running check (
    (status = 'running') = (finished_at is null)
    and (finished_at is null) = (duration_ms is null)
  ),
  constraint price_alert_runs_counts_not_negative check (
    least(alerts_scanned, matches, events_created, delivered, failed, suppressed,
          users_notified, pending_left, coalesce(duration_ms, 0), coalesce(match_ms, 0),
          coalesce(delivery_ms, 0)) >= 0
  )
);

comment on table public.price_alert_runs is
  'One row per run of run-price-alerts: when, how long, and what it matched and delivered. Admins read it; only the service connection writes';
comment on column public.price_alert_runs.id is 'The run''s id';
comment on column public.price_alert_runs.job_run_id is 'The job_runs row of the same run (the job guard''s)';
comment on column public.price_alert_runs.status is
  'running -> succeeded | partial (matched, but some users could not be told; their events wait for the next run) | failed; a run still running long after started_at crashed';
comment on column public.price_alert_runs.since is
  'Saved searches were matched against listings changed at or after this (price_alerts_since())';
comment on column public.price_alert_runs.started_at is
  'When the run started; the next run''s since is the last matched (succeeded or partial) run''s start minus 10 minutes';
comment on column public.price_alert_runs.finished_at is 'When the run ended; null while running';
comment on column public.price_alert_runs.duration_ms is 'How long the run took, in milliseconds';
comment on column public.price_alert_runs.match_ms is
  'How long matching took (match_price_alerts), in milliseconds; null when it did not finish';
comment on column public.price_alert_runs.delivery_ms is
  'How long delivery took (notices, outbox, reconcile), in milliseconds; null when it did not finish';
comment on column public.price_alert_runs.alerts_scanned is 'Active alerts when the run matched';
comment on column public.price_alert_runs.matches is
  'Alert-listing pairs that matched (new or already told; an alert with two channels counts once)';
comment on column public.price_alert_runs.events_created is 'New price_alert_events rows (one per channel)';
comment on column public.price_alert_runs.delivered is 'Events this run moved to sent (earlier failed e-mails included)';
comment on column public.price_alert_runs.failed is 'Events this run moved to failed';
comment on column public.price_alert_runs.suppressed is 'Events this run moved to suppressed';
comment on column public.price_alert_runs.users_notified is 'Users this run wrote a notice to';
comment on column public.price_alert_runs.pending_left is
  'Events still waiting for delivery when the run ended (beyond the per-run user cap)';
comment on constraint price_alert_runs_status_known on public.price_alert_runs is
  'status is one of running, succeeded, partial, failed';
comment on constraint price_alert_runs_finished_unless_running on public.price_alert_runs is
  'A run has finished_at and duration_ms exactly when it is no longer running';
comment on constraint price_alert_runs_counts_not_negative on public.price_alert_runs is
  'Counts and durations are not negative';

create index if not exists price_alert_runs_started_at_idx
  on public.price_alert_runs (started_at desc)
  where status in ('succeeded', 'partial');
comment on index public.price_alert_runs_started_at_idx is
  'The last run that matched (price_alerts_since())';

create index if not exists price_alert_runs_job_run_id_idx
  on public.price_alert_runs (job_run_id);
comment on index public.price_alert_runs_job_run_id_idx is
  'A job run''s price-alert run (and the set-null when job runs are pruned)';

alter table public.price_alert_runs enable row level security;

drop policy if exists "Admins can read price alert runs" on public.price_alert_runs;
create policy "Admins can read price alert runs" on public.price_alert_runs
  for select to authenticated
  using ((select public.is_admin()));
comment on policy "Admins can read price alert runs" on public.price_alert_runs is
  'Admins read every run''s summary';

revoke all on table public.price_alert_runs from anon, authenticated;
grant select on table public.price_alert_runs to authenticated;
grant all on table public.price_alert_runs to service_role;

-- -----------------------------------------------------------------------------
-- price_alert_events
-- -----------------------------------------------------------------------------
create table if not exists public.price_alert_events (
  id uuid primary key default gen_random_uuid(),
  alert_id uuid not null references public.price_alerts (id) on delete cascade,
  user_id uuid not null references auth.users (id) on delete cascade,
  listing_id uuid not null references public.listings (id) on delete cascade,
  channel text not null,
  price numeric(12, 2) not null,
  currency text not null,
  status text not null default 'pending',
  error_message text,
  email_log_id uuid references public.email_logs (id) on delete set null,
  notification_id uuid references public.notifications (id) on delete set null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  delivered_at timestamptz,
  constraint price_alert_events_once unique (alert_id, listing_id, channel, price),
  constraint price_alert_events_channel_known check (channel in ('email', 'in_app')),
  constraint price_alert_events_status_known check (
    status in ('pending', 'sent', 'failed', 'suppressed')
  ),
  constraint price_alert_events_currency_iso_4217 check (currency ~ '^[A-Z]{3}$'),
  constraint price_alert_events_delivered_when_sent check ((status = 'sent') = (delivered_at is not null)),
  constraint price_alert_events_email_row_on_email check (channel = 'email' or email_log_id is null),
  constraint price_alert_events_notice_on_in_app check (channel = 'in_app' or notification_id is null),
  constraint price_alert_events_error_message_length check (char_length(error_message) <= 1000)
);

comment on table public.price_alert_events is
  'One match of an alert and a listing at a price, per channel; written by run-price-alerts (insert ... on conflict do nothing). Status: pending -> sent | suppressed | failed; failed -> sent (see the migration header). Users read the events of their own alerts; only the service connection writes';
comment on column public.price_alert_events.id is 'The event''s id';
comment on column public.price_alert_events.alert_id is 'The alert that matched';
comment on column public.price_alert_events.user_id is 'The alert''s user (copied from the alert, which never changes owner)';
comment on column public.price_alert_events.listing_id is 'The listing that matched';
comment on column public.price_alert_events.channel is 'email | in_app: how this event is told';
comment on column public.price_alert_events.price is 'The listing''s asking price when it matched, in currency';
comment on column public.price_alert_events.currency is 'The listing''s currency when it matched';
comment on column public.price_alert_events.status is
  'pending | sent | failed | suppressed; changed only along the transitions in the migration header';
comment on column public.price_alert_events.error_message is 'Why the event was suppressed or failed; null otherwise';
comment on column public.price_alert_events.email_log_id is
  'email channel: the e-mail (email_logs) that tells it, once written; its send_status drives this status';
comment on column public.price_alert_events.notification_id is 'in_app channel: the notice that told it';
comment on column public.price_alert_events.created_at is 'When the match was found';
comment on column public.price_alert_events.updated_at is 'Moves on every change (trigger)';
comment on column public.price_alert_events.delivered_at is 'When it was told (status sent)';
comment on constraint price_alert_events_once on public.price_alert_events is
  'One event per alert, listing, channel and price: a rerun inserts nothing, a further price drop is a new event';
comment on constraint price_alert_events_channel_known on public.price_alert_events is
  'channel is email or in_app';
comment on constraint price_alert_events_status_known on public.price_alert_events is
  'status is one of pending, sent, failed, suppressed';
comment on constraint price_alert_events_currency_iso_4217 on public.price_alert_events is
  'A currency is an ISO 4217 code, upper case';
comment on constraint price_alert_events_delivered_when_sent on public.price_alert_events is
  'delivered_at is set exactly when the event is sent';
comment on constraint price_alert_events_email_row_on_email on public.price_alert_events is
  'Only email events have an e-mail row';
comment on constraint price_alert_events_notice_on_in_app on public.price_alert_events is
  'Only in_app events have an in-app notice';
comment on constraint price_alert_events_error_message_length on public.price_alert_events is
  'An error message is at most 1000 characters';

-- The delivery queue: events not handed to a channel yet, by user.
create index if not exists price_alert_events_undelivered_idx
  on public.price_alert_events (user_id, created_at)
  where status = 'pending' and email_log_id is null;
comment on index public.price_alert_events_undelivered_idx is
  'Pending events not yet handed to a channel, by user (the delivery queue)';

-- E-mail events whose e-mail may still change their status (reconcile).
create index if not exists price_alert_events_email_open_idx
  on public.price_alert_events (email_log_id)
  where status in ('pending', 'failed') and email_log_id is not null;
comment on index public.price_alert_events_email_open_idx is
  'E-mail events still pending or failed, by e-mail (reconcile_price_alert_emails)';

create index if not exists price_alert_events_email_log_id_idx
  on public.price_alert_events (email_log_id)
  where email_log_id is not null;
comment on index public.price_alert_events_email_log_id_idx is
  'Events by e-mail (the set-null when an e-mail row is deleted)';

create index if not exists price_alert_events_notification_id_idx
  on public.price_alert_events (notification_id)
  where notification_id is not null;
comment on index public.price_alert_events_notification_id_idx is
  'Events by in-app notice (the set-null when a notice is deleted)';

create index if not exists price_alert_events_listing_id_idx
  on public.price_alert_events (listing_id);
comment on index public.price_alert_events_listing_id_idx is
  'Events by listing (the cascade when a listing is deleted)';

create index if not exists price_alert_events_user_id_created_at_idx
  on public.price_alert_events (user_id, created_at desc);
comment on index public.price_alert_events_user_id_created_at_idx is
  'A user''s events, newest first (their history; the cascade when a user is deleted)';

-- -----------------------------------------------------------------------------
-- guard_price_alert_event(): the status state machine
-- -----------------------------------------------------------------------------
create or replace function public.guard_price_alert_event()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if tg_op = 'INSERT' then
    if new.status <> 'pending' or new.email_log_id is not null
       or new.notification_id is not null or new.delivered_at is not null then
      raise exception 'Cannot record price alert event: a new event starts "pending" and undelivered, not "%"',
        new.status using errcode = 'PT409';
    end if;
    return new;
  end if;

  if (new.id, new.alert_id, new.user_id, new.listing_id, new.channel, new.price, new.currency,
      new.created_at)
     is distinct from
     (old.id, old.alert_id, old.user_id, old.listing_id, old.channel, old.price, old.currency,
      old.created_at)
  then
    raise exception 'Cannot change price alert event "%": what matched is fixed', old.id
      using errcode = 'PT409';
  end if;
  if (old.email_log_id is not null and new.email_log_id is distinct from old.email_log_id)
     or (old.notification_id is not null
         and new.notification_id is distinct from old.notification_id) then
    raise exception 'Cannot change price alert event "%": its e-mail and notice are set once', old.id
      using errcode = 'PT409';
  end if;

  if new.status is distinct from old.status then
    if not (
      (old.status = 'pending' and new.status in ('sent', 'failed', 'suppressed'))
      or (old.status = 'failed' and new.status = 'sent')
    ) then
      raise exception 'Cannot change price alert event "%": "%" cannot become "%"',
        old.id, old.status, new.status using errcode = 'PT409';
    end if;
    if new.status = 'sent' then
      new.delivered_at := coalesce(new.delivered_at, now());
      new.error_message := null;
    end if;
  elsif old.status in ('sent', 'suppressed')
        and (new.error_message, new.delivered_at) is distinct from
            (old.error_message, old.delivered_at) then
    raise exception 'Cannot change price alert event "%": it is % for good', old.id, old.status
      using errcode = 'PT409';
  end if;
  return new;
end
$$;
comment on function public.guard_price_alert_event() is
  'Trigger on price_alert_events: a new event is pending and undelivered; afterwards only pending -> sent | failed | suppressed and failed -> sent (stamping delivered_at), what matched never changes, e-mail and notice are set once (PT409 otherwise)';
revoke execute on function public.guard_price_alert_event() from public, anon, authenticated;

drop trigger if exists price_alert_events_guard on public.price_alert_events;
create trigger price_alert_events_guard
  before insert or update on public.price_alert_events
  for each row execute function public.guard_price_alert_event();
comment on trigger price_alert_events_guard on public.price_alert_events is
  'The event status state machine (guard_price_alert_event; PT409)';

drop trigger if exists price_alert_events_set_updated_at on public.price_alert_events;
create trigger price_alert_events_set_updated_at
  before update on public.price_alert_events
  for each row execute function public.set_updated_at();
comment on trigger price_alert_events_set_updated_at on public.price_alert_events is
  'Moves updated_at on every change';

-- -----------------------------------------------------------------------------
-- price_alert_events: row level security
-- -----------------------------------------------------------------------------
alter table public.price_alert_events enable row level security;

drop policy if exists "Users can read the events of their own price alerts"
  on public.price_alert_events;
create policy "Users can read the events of their own price alerts"
  on public.price_alert_events
  for select to authenticated
  using (user_id = (select auth.uid()));
comment on policy "Users can read the events of their own price alerts"
  on public.price_alert_events is
  'A user reads what their alerts matched and how each was told';

drop policy if exists "Admins can read all price alert events" on public.price_alert_events;
create policy "Admins can read all price alert events" on public.price_alert_events
  for select to authenticated
  using ((select public.is_admin()));
comment on policy "Admins can read all price alert events" on public.price_alert_events is
  'Admins read every event';

revoke all on table public.price_alert_events from anon, authenticated;
grant select on table public.price_alert_events to authenticated;
grant all on table public.price_alert_events to service_role;

-- -----------------------------------------------------------------------------
-- price_alerts_since(): where the incremental saved-search scan starts
-- -----------------------------------------------------------------------------
create or replace function public.price_alerts_since()
returns timestamptz
language plpgsql
stable
set search_path = ''
as $$
declare
  v_last timestamptz;
begin
  select r.started_at into v_last
  from public.price_alert_runs r
  where r.status in ('succeeded', 'partial')
  order by r.started_at desc
  limit 1;
  return coalesce(v_last - interval '10 minutes', now() - interval '24 hours');
end
$$;
comment on function public.price_alerts_since() is
  'The start of the last price-alert run that matched (succeeded or partial) minus 10 minutes (late commits; the event key absorbs the overlap), or now() - 24 hours before the first one: saved searches are matched against listings changed since. Service role only';
revoke execute on function public.price_alerts_since() from public, anon, authenticated;
grant execute on function public.price_alerts_since() to service_role;

-- -----------------------------------------------------------------------------
-- match_price_alerts(): every active alert against the listings, set-based
-- -----------------------------------------------------------------------------
create or replace function public.match_price_alerts(p_since timestamptz)
returns table (alerts_scanned integer, matches integer, events_created integer)
language plpgsql
-- Invoker rights: only the service role may execute it.
set search_path = ''
as $$
begin
  return query
  with listing_matches as (
    -- Listing alerts: every active one, joined to its listing by id.
    select a.id as alert_id, a.user_id, a.channels, l.id as listing_id, l.asking_price,
           l.currency
    from public.price_alerts a
    join public.listings l on l.id = a.listing_id
    where a.active and a.listing_id is not null
      and l.review_status = 'approved'
      and l.asking_price <= a.target_price
      and l.seller_id <> a.user_id
  ),
  changed as (
    -- Approved listings changed since p_since, with their searchable text.
    select l.id, l.seller_id, lower(l.category) as category, l.currency, l.asking_price,
           l.updated_at, lower(l.title) as title, lower(coalesce(l.description, '')) as description
    from public.listings l
    where l.review_status = 'approved' and l.updated_at >= p_since
  ),
  search_matches as (
    -- Saved searches: the changed listings of their category and currency.
    select a.id as alert_id, a.user_id, a.channels, c.id as listing_id, c.asking_price,
           c.currency
    from changed c
    join public.price_alerts a
      on lower(a.category) = c.category and a.currency = c.currency
     and a.active and a.listing_id is null
    where c.asking_price <= a.max_price
      and c.updated_at >= a.created_at
      and c.seller_id <> a.user_id
      and not exists (
        select 1 from unnest(a.keywords) k
        where strpos(c.title, k) = 0 and strpos(c.description, k) = 0
      )
  ),
  matched as (
    select * from listing_matches
    union all
    select * from search_matches
  ),
  inserted as (
    insert into public.price_alert_events (alert_id, user_id, listing_id, channel, price, currency)
    select m.alert_id, m.user_id, m.listing_id, ch.channel, m.asking_price, m.currency
    from matched m
    cross join lateral unnest(m.channels) as ch(channel)
    on conflict on constraint price_alert_events_once do nothing
    returning 1
  )
  select (select count(*) from public.price_alerts a where a.active)::integer,
         (select count(*) from matched)::integer,
         (select count(*) from inserted)::integer;
end
$$;
comment on function public.match_price_alerts(timestamptz) is
  'Matches every active alert in one statement (rules in the migration header): listing alerts against their listing, saved searches against approved listings changed since p_since; inserts one pending event per channel of each match unless it exists. Returns the active alerts, the alert-listing pairs matched and the events created. Service role only';
revoke execute on function public.match_price_alerts(timestamptz) from public, anon, authenticated;
grant execute on function public.match_price_alerts(timestamptz) to service_role;

-- -----------------------------------------------------------------------------
-- reconcile_price_alert_emails(): e-mail events follow their e-mail
-- -----------------------------------------------------------------------------
create or replace function public.reconcile_price_alert_emails()
returns table (delivered integer, failed integer, suppressed integer)
language plpgsql
-- Invoker rights: only the service role may execute it.
set search_path = ''
as $$
begin
  return query
  with moved as (
    update public.price_alert_events e
    set status = s.status,
        delivered_at = case when s.status = 'sent' then coalesce(m.sent_at, now()) end,
        error_message = case when s.status = 'sent' then null else left(m.error_message, 1000) end
    from public.email_logs m
    cross join lateral (
      select case m.send_status
               when 'sent' then 'sent'
               when 'captured' then 'sent'
               when 'failed' then 'failed'
               when 'suppressed' then 'suppressed'
             end as status
    ) s
    where m.id = e.email_log_id
      and e.status in ('pending', 'failed') and e.email_log_id is not null
      and m.send_status in ('sent', 'captured', 'failed', 'suppressed')
      and s.status is distinct from e.status
      -- failed moves on only to sent (a retry that worked)
      and (e.status = 'pending' or s.status = 'sent')
    returning e.status
  )
  select count(*) filter (where moved.status = 'sent')::integer,
         count(*) filter (where moved.status = 'failed')::integer,
         count(*) filter (where moved.status = 'suppressed')::integer
  from moved;
end
$$;
comment on function public.reconcile_price_alert_emails() is
  'Moves every e-mail event still pending or failed along its e-mail''s send_status (sent or captured -> sent, failed -> failed, suppressed -> suppressed; failed only to sent), in one statement; returns how many became sent, failed and suppressed. Service role only';
revoke execute on function public.reconcile_price_alert_emails() from public, anon, authenticated;
grant execute on function public.reconcile_price_alert_emails() to service_role;

-- -----------------------------------------------------------------------------
-- The schedule: every 15 minutes
-- -----------------------------------------------------------------------------
insert into public.job_schedules (function_name, cron, description) values
  ('run-price-alerts', '*/15 * * * *',
   'Every 15 minutes: matches price alerts and saved searches, tells users of new matches')
on conflict (function_name) do nothing;

select public.schedule_jobs();
