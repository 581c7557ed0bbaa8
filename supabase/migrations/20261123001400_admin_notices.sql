-- =============================================================================
-- Admin notices: batched digests for admins, the contact form, and the
-- schedules of the notification jobs
--
-- Admin notices are not pushed (interface §6.2): a digest function collects
-- what arrived since the type's last_sent_at and sends one digest to each
-- admin, then advances last_sent_at and total_sent_count in the same
-- transaction that wrote the digests (its row is locked for it, so two runs
-- at once send one digest; the second finds nothing new).
--
--   type              function                           covers
--   listing_review    send-admin-listing-notification    listings submitted for review
--   contact_messages  send-admin-contact-notification    new contact_messages rows
--
-- cron_schedule drives the scheduler: a trigger mirrors each type into
-- job_schedules (enabled while cron_schedule is set) and reinstalls the
-- pg_cron entries, so an admin who sets or clears a cadence here changes
-- what runs. Without a cadence the digest is sent only when an admin calls
-- the function.
--
-- contact_messages: anyone (anon or signed in) may write one through RLS,
-- within length limits and a rate limit per address; admins read them.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- admin_notification_types
-- -----------------------------------------------------------------------------
create table if not exists public.admin_notification_types (
  type text primary key,
  function_name text not null unique,
  description text not null,
  cron_schedule text,
  last_sent_at timestamptz,
  total_sent_count bigint not null default 0,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint admin_notification_types_function_name_format check (function_name ~ '^[a-z0-9-]+$'),
  constraint admin_notification_types_cron_schedule_format check (
    cron_schedule ~ '^\s*\S+(\s+\S+){4}\s*$'
  ),
  constraint admin_notification_types_total_sent_count_not_negative check (total_sent_count >= 0)
);

comment on table public.admin_notification_types is
  'Batched admin digests: what each covers, its cadence (cron_schedule, mirrored into job_schedules), and how far it got (last_sent_at, total_sent_count). Admins read it and set cron_schedule';
comment on column public.admin_notification_types.type is 'The digest: listing_review or contact_messages';
comment on column public.admin_notification_types.function_name is 'The function that sends it (its job_schedules row)';
comment on column public.admin_notification_types.description is 'What the digest covers';
comment on column public.admin_notification_types.cron_schedule is
  'Cadence (five-field cron, UTC) at which the scheduler sends it; null: only when an admin calls the function';
comment on column public.admin_notification_types.last_sent_at is
  'Time of the newest item the last digest covered; the next digest covers what arrived after it';
comment on column public.admin_notification_types.total_sent_count is 'Digests sent so far (one per admin per run)';
comment on column public.admin_notification_types.created_at is 'When the type was added';
comment on column public.admin_notification_types.updated_at is 'Moves on every change (trigger)';
comment on constraint admin_notification_types_function_name_format
  on public.admin_notification_types is
  'A function name is lower-case letters, digits and hyphens (it names a job_schedules row)';
comment on constraint admin_notification_types_cron_schedule_format
  on public.admin_notification_types is 'A cron schedule has five fields';
comment on constraint admin_notification_types_total_sent_count_not_negative
  on public.admin_notification_types is 'A count is never negative';

drop trigger if exists admin_notification_types_set_updated_at on public.admin_notification_types;
create trigger admin_notification_types_set_updated_at
  before update on public.admin_notification_types
  for each row execute function public.set_updated_at();

alter table public.admin_notification_types enable row level security;

drop policy if exists "Admins can read admin notification types" on public.admin_notification_types;
create policy "Admins can read admin notification types" on public.admin_notification_types
  for select to authenticated
  using ((select public.is_admin()));

drop policy if exists "Admins can set the cadence of admin notifications"
  on public.admin_notification_types;
create policy "Admins can set the cadence of admin notifications"
  on public.admin_notification_types
  for update to authenticated
  using ((select public.is_admin()))
  with check ((select public.is_admin()));

revoke all on table public.admin_notification_types from anon, authenticated;
grant select on table public.admin_notification_types to authenticated;
grant update (cron_schedule) on table public.admin_notification_types to authenticated;
grant all on table public.admin_notification_types to service_role;

-- -----------------------------------------------------------------------------
-- sync_admin_notification_schedule(): cron_schedule -> job_schedules
-- -----------------------------------------------------------------------------
create or replace function public.sync_admin_notification_schedule()
returns trigger
language plpgsql
-- Definer rights: admins change cron_schedule as authenticated, which may
-- not write job_schedules or install pg_cron entries.
security definer
set search_path = ''
as $$
begin
  insert into public.job_schedules (function_name, cron, enabled, description)
  values (
    new.function_name,
    coalesce(new.cron_schedule, '0 * * * *'),
    new.cron_schedule is not null,
    'Admin digest "' || new.type || '" (cadence from admin_notification_types.cron_schedule)'
  )
  on conflict (function_name) do update set
    cron = excluded.cron,
    enabled = excluded.enabled,
    description = excluded.description
  where (job_schedules.cron, job_schedules.enabled)
    is distinct from (excluded.cron, excluded.enabled);
  perform public.schedule_jobs();
  return null;
end
$$;
comment on function public.sync_admin_notification_schedule() is
  'Trigger on admin_notification_types: mirrors the type''s cron_schedule into its job_schedules row (disabled while null) and reinstalls the pg_cron entries';
revoke execute on function public.sync_admin_notification_schedule() from public, anon, authenticated;

drop trigger if exists admin_notification_types_sync_schedule on public.admin_notification_types;
create trigger admin_notification_types_sync_schedule
  after insert or update of cron_schedule, function_name on public.admin_notification_types
  for each row execute function public.sync_admin_notification_schedule();
comment on trigger admin_notification_types_sync_schedule on public.admin_notification_types is
  'Keeps job_schedules (and so pg_cron and the local scheduler) in step with cron_schedule';

insert into public.admin_notification_types (type, function_name, description, cron_schedule)
values
  ('listing_review', 'send-admin-listing-notification',
   'Listings submitted for review since the last digest', '5 * * * *'),
  ('contact_messages', 'send-admin-contact-notification',
   'Messages sent through the contact form since the last digest', '10 * * * *')
on conflict (type) do nothing;

-- -----------------------------------------------------------------------------
-- contact_messages
-- -----------------------------------------------------------------------------
create table if not exists public.contact_messages (
  id uuid primary key default gen_random_uuid(),
  user_id uuid default auth.uid() references auth.users (id) on delete set null,
  name text not null,
  email text not null,
  subject text,
  message text not null,
  created_at timestamptz not null default now(),
  constraint contact_messages_name_length check (char_length(btrim(name, E' \t\r\n')) between 1 and 200),
  constraint contact_messages_email_format check (
    char_length(email) <= 320 and email ~ '^[^[:space:]@<>]+@[^[:space:]@<>]+\.[^[:space:]@<>]+$'
  ),
  constraint contact_messages_subject_length check (char_length(subject) <= 200),
  constraint contact_messages_message_length check (char_length(btrim(message, E' \t\r\n')) between 1 and 5000)
);

comment on table public.contact_messages is
  'Messages sent through the contact form; anyone may insert (length and rate limited), admins read; the contact digest tells admins about new ones';
comment on column public.contact_messages.id is 'The message''s id';
comment on column public.contact_messages.user_id is 'The signed-in sender, or null for a visitor';
comment on column public.contact_messages.name is 'The sender''s name as typed (1 to 200 characters)';
comment on column public.contact_messages.email is 'Where to answer';
comment on column public.contact_messages.subject is 'Optional subject (at most 200 characters)';
comment on column public.contact_messages.message is 'The message (1 to 5000 characters)';
comment on column public.contact_messages.created_at is 'When it was sent; the contact digest covers rows after last_sent_at';
comment on constraint contact_messages_name_length on public.contact_messages is
  'A name is 1 to 200 characters (not only white space)';
comment on constraint contact_messages_email_format on public.contact_messages is
  'An address looks like local@domain.tld, at most 320 characters';
comment on constraint contact_messages_subject_length on public.contact_messages is
  'A subject is at most 200 characters';
comment on constraint contact_messages_message_length on public.contact_messages is
  'A message is 1 to 5000 characters (not only white space)';

create index if not exists contact_messages_created_at_idx
  on public.contact_messages (created_at);
comment on index public.contact_messages_created_at_idx is 'The contact digest: rows after last_sent_at';

-- -----------------------------------------------------------------------------
-- contact_messages_rate_limit(): at most 5 messages an hour per address
-- -----------------------------------------------------------------------------
create or replace function public.contact_messages_rate_limit()
returns trigger
language plpgsql
-- Definer rights: take_rate_limit() is for service_role, and the writer is
-- anon or authenticated.
security definer
set search_path = ''
as $$
declare
  v_allowed boolean;
  v_retry integer;
begin
  -- The service connection is not limited; a row without an address is
  -- refused by its not-null constraint after this trigger.
  if not public.is_client_request() or new.email is null then
    return new;
  end if;
  -- A signed-in sender is counted by account, a visitor by the address typed.
  select r.allowed, r.retry_after_seconds into v_allowed, v_retry
  from public.take_rate_limit(
    'contact:' || coalesce(auth.uid()::text, lower(btrim(new.email))), 5, 3600
  ) r;
  if not v_allowed then
    raise exception 'Cannot send the message: too many messages; try again in % seconds', v_retry
      using errcode = 'PT429';
  end if;
  return new;
end
$$;
comment on function public.contact_messages_rate_limit() is
  'Trigger on contact_messages: a client may send at most 5 messages an hour per account (or per address for visitors); PT429 beyond (PostgREST answers 429)';
revoke execute on function public.contact_messages_rate_limit() from public, anon, authenticated;

drop trigger if exists contact_messages_rate_limit on public.contact_messages;
create trigger contact_messages_rate_limit
  before insert on public.contact_messages
  for each row execute function public.contact_messages_rate_limit();
comment on trigger contact_messages_rate_limit on public.contact_messages is
  'Limits how often one sender may write to the contact form';

alter table public.contact_messages enable row level security;

drop policy if exists "Anyone can send a contact message" on public.contact_messages;
create policy "Anyone can send a contact message" on public.contact_messages
  for insert to anon, authenticated
  with check (user_id is null or user_id = (select auth.uid()));

drop policy if exists "Admins can read contact messages" on public.contact_messages;
create policy "Admins can read contact messages" on public.contact_messages
  for select to authenticated
  using ((select public.is_admin()));

revoke all on table public.contact_messages from anon, authenticated;
grant insert (name, email, subject, message) on table public.contact_messages
  to anon, authenticated;
grant select on table public.contact_messages to authenticated;
grant all on table public.contact_messages to service_role;

-- -----------------------------------------------------------------------------
-- The new-listings digest runs daily
-- -----------------------------------------------------------------------------
insert into public.job_schedules (function_name, cron, description) values
  ('send-listing-notifications', '0 8 * * *',
   'Daily 08:00: digest of listings approved since each user''s last digest, to users who opted in')
on conflict (function_name) do nothing;

select public.schedule_jobs();
