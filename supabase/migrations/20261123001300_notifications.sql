-- =============================================================================
-- In-app notifications and notification preferences
--
-- notifications: one row per notice a user sees in the app. The service
-- connection inserts them (the notifications module, _shared/notifications/);
-- each insert is broadcast on the user's private topic 'user:<id>' (the
-- realtime migration's pattern), so the app shows it live. A user reads
-- their own notices and may change only read_at (mark read or unread).
-- dedupe_key makes a notice idempotent: a second insert with the same
-- (user_id, dedupe_key) writes nothing.
--
-- notification_preferences: a user's choice per notification type and
-- channel. No row means the type's defaults (shared/notifications.ts:
-- everything on except the new-listings digest, which is opt-in). Every
-- sender reads it; a blocked e-mail is logged as `suppressed`, a blocked
-- in-app notice is not written.
--
-- Notification types (the same list as shared/notifications.ts):
--   account, listing_review, new_listings, payments, messages, admin_digest
-- =============================================================================

-- -----------------------------------------------------------------------------
-- notifications
-- -----------------------------------------------------------------------------
create table if not exists public.notifications (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null references auth.users (id) on delete cascade,
  type text not null,
  title text not null,
  body text not null,
  link text,
  data jsonb not null default '{}'::jsonb,
  read_at timestamptz,
  created_at timestamptz not null default now(),
  dedupe_key text,
  constraint notifications_type_known check (
    type in ('account', 'listing_review', 'new_listings', 'payments', 'messages', 'admin_digest')
  ),
  constraint notifications_title_length check (char_length(title) between 1 and 200),
  constraint notifications_body_length check (char_length(body) between 1 and 5000),
  constraint notifications_link_format check (
    char_length(link) <= 2048 and (link ~ '^/([^/]|$)' or link ~ '^https?://[^[:space:]]+$')
  ),
  constraint notifications_data_is_object check (jsonb_typeof(data) = 'object'),
  constraint notifications_dedupe_key_length check (char_length(dedupe_key) between 1 and 300)
);

comment on table public.notifications is
  'In-app notices, one row per notice per user; inserted by the service connection and broadcast to user:<user_id>; users read their own and set read_at only';
comment on column public.notifications.id is 'The notice''s id';
comment on column public.notifications.user_id is 'Who the notice is for';
comment on column public.notifications.type is 'The notification type (shared/notifications.ts), which the user''s preferences switch';
comment on column public.notifications.title is 'One line shown in the list';
comment on column public.notifications.body is 'The text of the notice (plain text)';
comment on column public.notifications.link is 'Where the notice leads: a frontend path (/listings/...) or an http(s) address';
comment on column public.notifications.data is 'Structured details for the frontend (ids, amounts); a JSON object';
comment on column public.notifications.read_at is 'When the user read it; null while unread. The only column users may change';
comment on column public.notifications.created_at is 'When the notice was written';
comment on column public.notifications.dedupe_key is 'Makes the notice idempotent: one notice per (user_id, dedupe_key)';
comment on constraint notifications_type_known on public.notifications is
  'type is a notification type of shared/notifications.ts';
comment on constraint notifications_title_length on public.notifications is 'A title is 1 to 200 characters';
comment on constraint notifications_body_length on public.notifications is 'A body is 1 to 5000 characters';
comment on constraint notifications_link_format on public.notifications is
  'A link is a path starting with a single / or an http(s) address, at most 2048 characters';
comment on constraint notifications_data_is_object on public.notifications is 'data is a JSON object';
comment on constraint notifications_dedupe_key_length on public.notifications is
  'A dedupe key is 1 to 300 characters';

create unique index if not exists notifications_user_id_dedupe_key_key
  on public.notifications (user_id, dedupe_key);
comment on index public.notifications_user_id_dedupe_key_key is
  'One notice per user and dedupe key (keys are optional; nulls do not collide)';

create index if not exists notifications_user_id_created_at_idx
  on public.notifications (user_id, created_at desc);
comment on index public.notifications_user_id_created_at_idx is 'A user''s notices, newest first';

create index if not exists notifications_unread_idx
  on public.notifications (user_id)
  where read_at is null;
comment on index public.notifications_unread_idx is 'Counting a user''s unread notices';

alter table public.notifications enable row level security;

drop policy if exists "Users can read their own notifications" on public.notifications;
create policy "Users can read their own notifications" on public.notifications
  for select to authenticated
  using (user_id = (select auth.uid()));

drop policy if exists "Users can mark their own notifications read" on public.notifications;
create policy "Users can mark their own notifications read" on public.notifications
  for update to authenticated
  using (user_id = (select auth.uid()))
  with check (user_id = (select auth.uid()));

-- Users change read_at and nothing else; inserts are the service's.
revoke all on table public.notifications from anon, authenticated;
grant select on table public.notifications to authenticated;
grant update (read_at) on table public.notifications to authenticated;
grant all on table public.notifications to service_role;

-- -----------------------------------------------------------------------------
-- broadcast_notification(): each new notice, live to its user
-- -----------------------------------------------------------------------------
create or replace function public.broadcast_notification()
returns trigger
language plpgsql
-- Definer rights: the writer (the service connection, or a job's role) may
-- not insert into realtime.messages itself.
security definer
set search_path = ''
as $$
begin
  perform realtime.broadcast_changes(
    'user:' || new.user_id::text,
    tg_op,
    tg_op,
    tg_table_name,
    tg_table_schema,
    new,
    old
  );
  return null;
end
$$;
comment on function public.broadcast_notification() is
  'Trigger on notifications: broadcasts each new notice to the private topic user:<user_id>';
revoke execute on function public.broadcast_notification() from public, anon, authenticated;

drop trigger if exists notifications_broadcast_insert on public.notifications;
create trigger notifications_broadcast_insert
  after insert on public.notifications
  for each row execute function public.broadcast_notification();
comment on trigger notifications_broadcast_insert on public.notifications is
  'Pushes every new notice to its user (Realtime, private topic user:<user_id>)';

-- -----------------------------------------------------------------------------
-- notification_preferences
-- -----------------------------------------------------------------------------
create table if not exists public.notification_preferences (
  user_id uuid not null default auth.uid() references auth.users (id) on delete cascade,
  type text not null,
  email boolean not null,
  in_app boolean not null,
  updated_at timestamptz not null default now(),
  primary key (user_id, type),
  constraint notification_preferences_type_known check (
    type in ('account', 'listing_review', 'new_listings', 'payments', 'messages', 'admin_digest')
  )
);

comment on table public.notification_preferences is
  'A user''s choice per notification type: e-mail and in-app on or off. No row: the type''s defaults (shared/notifications.ts). Users manage their own';
comment on column public.notification_preferences.user_id is 'Whose choice it is';
comment on column public.notification_preferences.type is 'The notification type';
comment on column public.notification_preferences.email is 'Whether e-mails of this type are sent';
comment on column public.notification_preferences.in_app is 'Whether in-app notices of this type are written';
comment on column public.notification_preferences.updated_at is 'When the choice last changed';
comment on constraint notification_preferences_type_known on public.notification_preferences is
  'type is a notification type of shared/notifications.ts';

drop trigger if exists notification_preferences_set_updated_at on public.notification_preferences;
create trigger notification_preferences_set_updated_at
  before update on public.notification_preferences
  for each row execute function public.set_updated_at();

-- The new-listings digest finds its recipients here.
create index if not exists notification_preferences_type_opted_in_idx
  on public.notification_preferences (type, user_id)
  where email or in_app;
comment on index public.notification_preferences_type_opted_in_idx is
  'Users who switched a channel on for a type (the opt-in digest''s recipients)';

alter table public.notification_preferences enable row level security;

drop policy if exists "Users can read their own notification preferences"
  on public.notification_preferences;
create policy "Users can read their own notification preferences"
  on public.notification_preferences
  for select to authenticated
  using (user_id = (select auth.uid()));

drop policy if exists "Users can set their own notification preferences"
  on public.notification_preferences;
create policy "Users can set their own notification preferences"
  on public.notification_preferences
  for insert to authenticated
  with check (user_id = (select auth.uid()));

drop policy if exists "Users can change their own notification preferences"
  on public.notification_preferences;
create policy "Users can change their own notification preferences"
  on public.notification_preferences
  for update to authenticated
  using (user_id = (select auth.uid()))
  with check (user_id = (select auth.uid()));

drop policy if exists "Users can reset their own notification preferences"
  on public.notification_preferences;
create policy "Users can reset their own notification preferences"
  on public.notification_preferences
  for delete to authenticated
  using (user_id = (select auth.uid()));

revoke all on table public.notification_preferences from anon, authenticated;
grant select, delete on table public.notification_preferences to authenticated;
grant insert (user_id, type, email, in_app) on table public.notification_preferences
  to authenticated;
grant update (email, in_app) on table public.notification_preferences to authenticated;
grant all on table public.notification_preferences to service_role;
