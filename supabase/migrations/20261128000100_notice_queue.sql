-- =============================================================================
-- The notice queue: what a change made in SQL owes a user, delivered once
--
-- Buyers and sellers now change things straight from the frontend through
-- RPCs (an access request, a decision on it, a message, a report), with no
-- edge function in the path to write the notices and e-mails those changes
-- owe someone. Each such RPC queues what it owes here, in its own
-- transaction, so the debt exists exactly when the change does:
--
--   1. queue_notice(kind, user, subject, due_at) inserts one pending row:
--      notice <kind> about <subject> (a request, a conversation, a report)
--      to <user>, not before <due_at>;
--   2. send-queued-notices, started with no body every minute by its
--      job_schedules row (pg_cron on hosted, the local scheduler locally),
--      claims due pending rows with FOR UPDATE SKIP LOCKED and, per row and
--      in one transaction, reads the subject as it is now, writes the
--      in-app notice and the e-mail's email_logs row through the
--      notifications module (preferences honoured, dedupe keys per row) and
--      moves the row to sent, or to dropped when there is nothing left to
--      tell (a request withdrawn before its seller heard of it, messages read
--      before their e-mail was due), or back to pending with a later due_at
--      (the e-mail of messages that are not yet 15 minutes old). The e-mail
--      goes out after the commit (the request's outbox), and the e-mail
--      retry finds it if the process dies first.
--
-- Once: a notice's dedupe key and its e-mail's idempotency key name what it
-- tells (<kind>:<request or report id>; conversation_unread:<row id>, as a
-- conversation is told about more than once), and the row becomes sent in
-- the transaction that writes them, so a row left pending by a run that died
-- is taken by the next run, which writes nothing twice. Two runs at once
-- claim different rows (skip locked); the job guard keeps them apart anyway.
--
-- Coalescing: at most one pending row per (kind, user, subject) — a unique
-- index — so a second change that owes the same notice before the first was
-- delivered adds nothing (ten messages in a minute are one e-mail).
--
-- notice_queue.status:
--
--   (queue_notice) ──► pending ──► sent      the notice was written (its e-mail
--                        │  ▲                 may still be suppressed by the
--                        │  └── later         user's preference: that is the
--                        │      (not due yet) sender's decision, logged there)
--                        ├────► dropped   nothing left to tell (outcome says why)
--                        └────► failed    5 attempts could not write it
--
--   from     to        when
--   pending  pending   the subject is not ready (due_at moves later)
--   pending  sent      a run wrote the notice
--   pending  dropped   a run found nothing left to tell
--   pending  failed    the 5th failed attempt (an operator resets it to
--                      pending with attempts = 0 after fixing the cause)
--
-- Kinds (shared/notice_kinds.ts is the contract; a test keeps the list equal
-- to the check constraint):
--   listing_access_requested  to a listing's seller: a buyer asks for access
--   listing_access_approved   to the buyer: the seller let them in
--   listing_access_declined   to the buyer: the seller said no
--   listing_access_revoked    to the buyer: the seller took access back
--   listing_access_expired    to the buyer: 14 days passed without an answer
--   conversation_unread       to a participant: messages unread for 15 minutes
--   conversation_reported     to each admin: a participant reported a conversation
--
-- Why a queue rather than a database webhook: see the new-user welcomes
-- migration (pg_net sends once, without retry, and does not exist locally).
-- The welcome queue predates this one and keeps its own table.
--
-- Also here: the two notification types these notices answer to.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- Notification types: listing_access and conversations
-- -----------------------------------------------------------------------------
-- shared/notifications.ts is the contract; a test keeps the SQL lists equal.
--   listing_access  access requests to a seller's confidential listings, and
--                   the decisions on a buyer's requests; on by default
--   conversations   messages from the other side of a conversation; on by
--                   default (one in-app notice per conversation, updated; an
--                   e-mail when a message is unread for 15 minutes)
alter table public.notifications
  drop constraint if exists notifications_type_known;
alter table public.notifications
  add constraint notifications_type_known check (
    type in ('account', 'listing_review', 'new_listings', 'payments', 'messages', 'admin_digest',
             'price_alerts', 'sponsored', 'handover', 'admin_alerts', 'listing_access',
             'conversations')
  );
comment on constraint notifications_type_known on public.notifications is
  'A notification is of a known type (shared/notifications.ts)';

alter table public.notification_preferences
  drop constraint if exists notification_preferences_type_known;
alter table public.notification_preferences
  add constraint notification_preferences_type_known check (
    type in ('account', 'listing_review', 'new_listings', 'payments', 'messages', 'admin_digest',
             'price_alerts', 'sponsored', 'handover', 'admin_alerts', 'listing_access',
             'conversations')
  );
comment on constraint notification_preferences_type_known on public.notification_preferences is
  'A preference is for a known notification type (shared/notifications.ts)';

-- -----------------------------------------------------------------------------
-- notice_queue
-- -----------------------------------------------------------------------------
create table if not exists public.notice_queue (
  id uuid primary key default gen_random_uuid(),
  kind text not null,
  user_id uuid not null references auth.users (id) on delete cascade,
  subject_id uuid not null,
  due_at timestamptz not null default now(),
  status text not null default 'pending',
  attempts integer not null default 0,
  last_error text,
  outcome text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  done_at timestamptz,
  constraint notice_queue_kind_known check (
    kind in ('listing_access_requested', 'listing_access_approved', 'listing_access_declined',
             'listing_access_revoked', 'listing_access_expired', 'conversation_unread',
             'conversation_reported')
  ),
  constraint notice_queue_status_known check (status in ('pending', 'sent', 'dropped', 'failed')),
  constraint notice_queue_attempts_range check (attempts between 0 and 5),
  constraint notice_queue_done_at_set check ((status = 'pending') = (done_at is null)),
  constraint notice_queue_last_error_length check (char_length(last_error) <= 1000),
  constraint notice_queue_outcome_length check (char_length(outcome) <= 200)
);

comment on table public.notice_queue is
  'Notices that changes made in SQL owe a user (an access request to its seller, a decision to its buyer, unread messages, a report to the admins), queued in the transaction of the change and written once by send-queued-notices every minute (state machine in the notice queue migration header). Admins read it; only the service connection writes';
comment on column public.notice_queue.id is
  'The row''s id (part of the dedupe key of a conversation_unread e-mail, which is told more than once per conversation)';
comment on column public.notice_queue.kind is 'What to tell (shared/notice_kinds.ts)';
comment on column public.notice_queue.user_id is 'Who is told';
comment on column public.notice_queue.subject_id is
  'What it is about: a listing access request, a conversation or a conversation report, by kind';
comment on column public.notice_queue.due_at is 'Not written before this time';
comment on column public.notice_queue.status is
  'pending | sent (the notice was written) | dropped (nothing left to tell) | failed (5 attempts failed)';
comment on column public.notice_queue.attempts is
  'Attempts that failed to write the notice (at most 5; the 5th makes the row failed)';
comment on column public.notice_queue.last_error is 'Why the last failed attempt failed';
comment on column public.notice_queue.outcome is
  'Why the row was dropped (e.g. "read", "closed", "request withdrawn"), or what was written';
comment on column public.notice_queue.created_at is 'When the change that owes the notice was made';
comment on column public.notice_queue.updated_at is 'Moves on every change (trigger)';
comment on column public.notice_queue.done_at is 'When the row was sent, dropped or failed; null while pending';
comment on constraint notice_queue_kind_known on public.notice_queue is
  'kind is one of shared/notice_kinds.ts';
comment on constraint notice_queue_status_known on public.notice_queue is
  'status is pending, sent, dropped or failed';
comment on constraint notice_queue_attempts_range on public.notice_queue is
  'At most 5 failed attempts';
comment on constraint notice_queue_done_at_set on public.notice_queue is
  'done_at is set exactly when the row is no longer pending';
comment on constraint notice_queue_last_error_length on public.notice_queue is
  'An error message is at most 1000 characters';
comment on constraint notice_queue_outcome_length on public.notice_queue is
  'An outcome is at most 200 characters';
comment on constraint notice_queue_pkey on public.notice_queue is 'One row per queued notice';
comment on index public.notice_queue_pkey is 'One row per queued notice';

-- Coalescing: a change that owes a notice already pending adds nothing.
create unique index if not exists notice_queue_one_pending
  on public.notice_queue (kind, user_id, subject_id)
  where status = 'pending';
comment on index public.notice_queue_one_pending is
  'At most one pending notice of a kind per user and subject: a second change before delivery adds nothing';

-- The drain: due pending rows, oldest first.
create index if not exists notice_queue_pending_due_at_idx
  on public.notice_queue (due_at)
  where status = 'pending';
comment on index public.notice_queue_pending_due_at_idx is
  'Pending notices by due time (the drain takes the due ones, oldest first)';

-- The e-mail cadence of a conversation: the last notice sent to a user about it.
create index if not exists notice_queue_sent_subject_idx
  on public.notice_queue (subject_id, user_id, kind, done_at desc)
  where status = 'sent';
comment on index public.notice_queue_sent_subject_idx is
  'The last notice of a kind sent to a user about a subject (a conversation''s e-mail cadence)';

-- Pruning and the admins' view: rows by when they were done.
create index if not exists notice_queue_done_at_idx
  on public.notice_queue (done_at)
  where status <> 'pending';
comment on index public.notice_queue_done_at_idx is
  'Finished rows by when they finished';

drop trigger if exists notice_queue_set_updated_at on public.notice_queue;
create trigger notice_queue_set_updated_at
  before update on public.notice_queue
  for each row execute function public.set_updated_at();
comment on trigger notice_queue_set_updated_at on public.notice_queue is
  'Moves updated_at on every change';

alter table public.notice_queue enable row level security;

drop policy if exists "Admins can read the notice queue" on public.notice_queue;
create policy "Admins can read the notice queue" on public.notice_queue
  for select to authenticated
  using ((select public.is_admin()));
comment on policy "Admins can read the notice queue" on public.notice_queue is
  'Admins see what is owed to whom and what failed; nobody else reads the queue';

revoke all on table public.notice_queue from public, anon, authenticated;
grant select on table public.notice_queue to authenticated;
grant all on table public.notice_queue to service_role;

-- -----------------------------------------------------------------------------
-- queue_notice(): owe a user a notice
-- -----------------------------------------------------------------------------
create or replace function public.queue_notice(
  p_kind text,
  p_user uuid,
  p_subject uuid,
  p_due_at timestamptz default now()
)
returns void
language plpgsql
volatile
-- Invoker rights: only service_role and the owner (the security definer
-- RPCs that queue notices) may call it; both may write notice_queue.
set search_path = ''
as $$
begin
  if p_user is null or p_subject is null then
    raise exception 'Cannot queue notice "%": it needs a user and a subject', p_kind
      using errcode = '22023';
  end if;
  insert into public.notice_queue (kind, user_id, subject_id, due_at)
  values (p_kind, p_user, p_subject, coalesce(p_due_at, now()))
  on conflict (kind, user_id, subject_id) where status = 'pending' do nothing;
end
$$;
comment on function public.queue_notice(text, uuid, uuid, timestamptz) is
  'Queues notice p_kind about p_subject to p_user, due at p_due_at (default now), in the caller''s transaction; nothing when the same notice is already pending. send-queued-notices writes it. Service role and definer functions only';
revoke execute on function public.queue_notice(text, uuid, uuid, timestamptz)
  from public, anon, authenticated;
grant execute on function public.queue_notice(text, uuid, uuid, timestamptz) to service_role;

-- -----------------------------------------------------------------------------
-- prune_notice_queue(): forget what was told long ago
-- -----------------------------------------------------------------------------
create or replace function public.prune_notice_queue(p_older_than interval default '30 days')
returns integer
language plpgsql
volatile
-- Invoker rights: only the service role may execute it.
set search_path = ''
as $$
declare
  v_pruned integer;
begin
  if p_older_than is null or p_older_than < interval '2 hours' then
    raise exception 'Cannot prune the notice queue: keep at least 2 hours (the e-mail cadence of a conversation reads the last hour), not %',
      coalesce(p_older_than::text, 'null') using errcode = '22023';
  end if;
  delete from public.notice_queue q
  where q.status in ('sent', 'dropped') and q.done_at < now() - p_older_than;
  get diagnostics v_pruned = row_count;
  return v_pruned;
end
$$;
comment on function public.prune_notice_queue(interval) is
  'Deletes sent and dropped notice_queue rows finished more than p_older_than ago (default 30 days, at least 2 hours: the conversation e-mail cadence reads the last hour); failed rows stay for an operator. Answers how many. The daily housekeeping runs it; service role only';
revoke execute on function public.prune_notice_queue(interval) from public, anon, authenticated;
grant execute on function public.prune_notice_queue(interval) to service_role;

-- -----------------------------------------------------------------------------
-- The schedule: every minute
-- -----------------------------------------------------------------------------
insert into public.job_schedules (function_name, cron, description) values
  ('send-queued-notices', '* * * * *',
   'Every minute: write the notices and e-mails that access requests, decisions, messages and reports owe, once each')
on conflict (function_name) do nothing;

select public.schedule_jobs();
