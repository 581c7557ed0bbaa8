-- =============================================================================
-- New-user welcomes: every sign-up is welcomed once, with no manual call
--
-- A row in auth.users, however it got there (a sign-up through Supabase Auth,
-- an admin's invite, an insert in SQL), gets the welcome e-mail and in-app
-- notice, and every admin an in-app "New user" notice, within a minute and
-- exactly once. How:
--
--   1. queue_new_user_welcome(), an after-insert trigger on auth.users, writes
--      one new_user_welcomes row per user (the user id is its key: a second
--      insert of the row writes nothing). It runs inside the transaction that
--      creates the user, so the row exists exactly when the user does.
--   2. send-new-user-notification, started with no body every minute by the
--      job_schedules row below (pg_cron on hosted, the local scheduler
--      locally), drains the queue: it claims pending rows with
--      FOR UPDATE SKIP LOCKED and, per user and in the same transaction,
--      writes the notices, the welcome's email_logs row (the outbox) and
--      the row's move to `welcomed`. A run that dies before its commit leaves
--      the rows pending for the next run; one that dies after it leaves the
--      e-mail pending and due, and the next run delivers it. The e-mail's
--      idempotency key (welcome:<user>) and the notices' dedupe keys make a
--      second write a no-op in any case, and the provider key
--      email-log/<id> makes a second delivery attempt send nothing twice.
--   3. A call naming the user (`{ userId }`, the documented manual call) runs
--      the same code and moves the row to `welcomed` as well; it locks the
--      row first, as the drain does, so the two never write one user at once.
--
-- Why not a database webhook (pg_net from the trigger): its request is
-- queued by the inserting transaction but sent later by a background worker,
-- once, with no retry when the function is down or times out (the response
-- lands in net._http_response and nobody reads it), and pg_net does not exist
-- in the local stack or the tests. The queue is durable, transactional,
-- retried every minute, observable (admins read it; job_runs has each run),
-- and runs the same way locally and on hosted.
--
-- Who is queued:
--   * every inserted user except anonymous sign-ins (is_anonymous): they are
--     sessions without an account (supabase/config.toml keeps them off);
--   * users without an e-mail address (a phone sign-up) too: they get the
--     in-app welcome, and the admins' notice says "A user without an address";
--   * nobody who existed before this migration: nothing is backfilled, so
--     existing users get no welcome when it lands (a manual call still welcomes
--     one, once).
--
-- new_user_welcomes.status:
--
--   (insert by the trigger) ──► pending ──► welcomed   notices and e-mail written
--                                  │
--                                  └──────► failed     5 attempts could not write them
--
--   from      to         when
--   pending   welcomed   a drain run or a { userId } call wrote the welcome
--   pending   failed     the 5th attempt failed (an operator resets it to
--                        pending with attempts = 0 after fixing the cause)
--   failed    welcomed   a { userId } call wrote the welcome
--
-- The trigger is security definer (owned by the migration role): Supabase
-- Auth inserts users as supabase_auth_admin, which has no rights on public.
-- Hosted Supabase grants postgres TRIGGER on auth.users but not ownership, so
-- the trigger is created with CREATE OR REPLACE (DROP TRIGGER needs the
-- owner) and carries no COMMENT ON TRIGGER (that too needs the owner).
-- =============================================================================

-- -----------------------------------------------------------------------------
-- new_user_welcomes
-- -----------------------------------------------------------------------------
create table if not exists public.new_user_welcomes (
  user_id uuid primary key references auth.users (id) on delete cascade,
  status text not null default 'pending',
  attempts integer not null default 0,
  last_error text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  welcomed_at timestamptz,
  constraint new_user_welcomes_status_known check (status in ('pending', 'welcomed', 'failed')),
  constraint new_user_welcomes_attempts_range check (attempts between 0 and 5),
  constraint new_user_welcomes_welcomed_at_set check ((status = 'welcomed') = (welcomed_at is not null)),
  constraint new_user_welcomes_last_error_length check (char_length(last_error) <= 1000)
);

comment on table public.new_user_welcomes is
  'One row per user who signed up since the queue exists (written by the trigger on auth.users); send-new-user-notification drains the pending ones every minute: welcome e-mail and in-app notice to the user, an in-app notice to each admin, exactly once (state machine in the migration header). Admins read it; only the service connection writes';
comment on column public.new_user_welcomes.user_id is 'The new user (one row per user)';
comment on column public.new_user_welcomes.status is
  'pending (waiting for the drain) | welcomed | failed (5 attempts could not write the welcome)';
comment on column public.new_user_welcomes.attempts is
  'Attempts that failed to write the welcome (at most 5; the 5th makes the row failed)';
comment on column public.new_user_welcomes.last_error is 'Why the last failed attempt failed';
comment on column public.new_user_welcomes.created_at is 'When the user was inserted (queued)';
comment on column public.new_user_welcomes.updated_at is 'Moves on every change (trigger)';
comment on column public.new_user_welcomes.welcomed_at is
  'When the welcome was written (its e-mail is then delivered from email_logs); null until then';
comment on constraint new_user_welcomes_status_known on public.new_user_welcomes is
  'status is pending, welcomed or failed';
comment on constraint new_user_welcomes_attempts_range on public.new_user_welcomes is
  'At most 5 failed attempts';
comment on constraint new_user_welcomes_welcomed_at_set on public.new_user_welcomes is
  'welcomed_at is set exactly when the row is welcomed';
comment on constraint new_user_welcomes_last_error_length on public.new_user_welcomes is
  'An error message is at most 1000 characters';

-- The drain's queue: pending rows, oldest first.
create index if not exists new_user_welcomes_pending_idx
  on public.new_user_welcomes (created_at)
  where status = 'pending';
comment on index public.new_user_welcomes_pending_idx is
  'Pending welcomes by sign-up time (the drain takes the oldest first)';

drop trigger if exists new_user_welcomes_set_updated_at on public.new_user_welcomes;
create trigger new_user_welcomes_set_updated_at
  before update on public.new_user_welcomes
  for each row execute function public.set_updated_at();
comment on trigger new_user_welcomes_set_updated_at on public.new_user_welcomes is
  'Moves updated_at on every change';

alter table public.new_user_welcomes enable row level security;

drop policy if exists "Admins can read the new-user welcome queue" on public.new_user_welcomes;
create policy "Admins can read the new-user welcome queue" on public.new_user_welcomes
  for select to authenticated
  using ((select public.is_admin()));
comment on policy "Admins can read the new-user welcome queue" on public.new_user_welcomes is
  'Admins see who is waiting for a welcome and which welcomes failed; nobody else reads the queue';

revoke all on table public.new_user_welcomes from public, anon, authenticated;
grant select on table public.new_user_welcomes to authenticated;
grant all on table public.new_user_welcomes to service_role;

-- -----------------------------------------------------------------------------
-- queue_new_user_welcome(): the trigger on auth.users
-- -----------------------------------------------------------------------------
create or replace function public.queue_new_user_welcome() returns trigger
language plpgsql
-- Definer rights: runs inside Supabase Auth's insert, whose role
-- (supabase_auth_admin) may not write public.new_user_welcomes.
security definer
set search_path = ''
as $$
begin
  insert into public.new_user_welcomes (user_id)
  values (new.id)
  on conflict (user_id) do nothing;
  return null;
end
$$;
comment on function public.queue_new_user_welcome() is
  'Trigger on auth.users (after insert, not for anonymous sign-ins): queues the new user''s welcome in new_user_welcomes, once per user';
revoke execute on function public.queue_new_user_welcome() from public, anon, authenticated;

-- CREATE OR REPLACE, not DROP + CREATE: dropping a trigger on auth.users needs
-- its owner, which the migration role is not on hosted Supabase.
create or replace trigger on_auth_user_created_queue_welcome
  after insert on auth.users
  for each row
  when (not new.is_anonymous)
  execute function public.queue_new_user_welcome();

-- -----------------------------------------------------------------------------
-- Schedule (UTC): every minute
-- -----------------------------------------------------------------------------
insert into public.job_schedules (function_name, cron, description) values
  ('send-new-user-notification', '* * * * *',
   'Every minute: welcome new users (e-mail and in-app) and tell the admins, once per user')
on conflict (function_name) do nothing;

select public.schedule_jobs();
