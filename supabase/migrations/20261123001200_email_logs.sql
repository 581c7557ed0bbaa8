-- =============================================================================
-- E-mail log: every e-mail the server sends, one row per message
--
-- The one sender (_shared/email/) writes the row before it talks to the
-- provider, so nothing is lost: a message is first `pending` (in the outbox
-- of a transaction, or being sent), then `sent`, `captured` or `failed`.
-- Failed messages are retried with backoff by the e-mail retry sub-job, at
-- most 5 attempts in all, each with the provider idempotency key
-- 'email-log/<id>', so a retry of a message the provider did accept sends
-- nothing twice.
--
-- send_status state machine:
--
--   (insert) ──► pending ──► sent                 provider accepted it
--      │            │  └───► captured             LOCAL_DEV without a key
--      │            └──────► failed ──► pending   claimed by a retry
--      │                       ▲           │
--      │                       └───────────┘      failed again (attempts < 5)
--      └──────────► suppressed                    the recipient opted out
--
--   from      to         when
--   pending   sent       the provider accepted the message
--   pending   captured   local capture mode (no RESEND_API_KEY, LOCAL_DEV)
--   pending   failed     the provider refused or was unreachable
--   failed    pending    a retry claimed the row (attempts < 5, next_attempt_at due)
--   (new)     suppressed the recipient's preference blocks this e-mail type
--
-- next_attempt_at is both the backoff and the claim: a sender claims a row
-- by moving it into the future (one UPDATE ... WHERE next_attempt_at <= now()
-- RETURNING), so two senders never send one row at once; it is null once the
-- row needs nothing more. The body (html, text_body) is kept while the row
-- may still be sent and in captured rows (the local mail viewer shows them);
-- it is cleared once the provider has the message, so sign-in links do not
-- outlive their e-mail here.
-- =============================================================================

create table if not exists public.email_logs (
  id uuid primary key default gen_random_uuid(),
  recipient_email text not null,
  email_type text not null,
  send_status text not null default 'pending',
  error_message text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  user_id uuid references auth.users (id) on delete set null,
  from_address text,
  reply_to text,
  subject text not null,
  html text,
  text_body text,
  idempotency_key text,
  provider_message_id text,
  attempts integer not null default 0,
  next_attempt_at timestamptz,
  last_attempt_at timestamptz,
  sent_at timestamptz,
  constraint email_logs_send_status_known check (
    send_status in ('pending', 'sent', 'failed', 'captured', 'suppressed')
  ),
  constraint email_logs_recipient_email_format check (
    char_length(recipient_email) <= 320 and recipient_email ~ '^[^[:space:]@<>]+@[^[:space:]@<>]+$'
  ),
  constraint email_logs_email_type_format check (email_type ~ '^[a-z0-9_.:-]{1,100}$'),
  constraint email_logs_subject_length check (char_length(subject) between 1 and 300),
  constraint email_logs_attempts_range check (attempts between 0 and 5),
  constraint email_logs_idempotency_key_length check (char_length(idempotency_key) between 1 and 300)
);

comment on table public.email_logs is
  'Every e-mail the server sends, one row per message, written before the provider is called; send_status: pending -> sent | captured | failed; failed -> pending (retry, at most 5 attempts); suppressed when a preference blocks it (see the migration header). Admins read it; only the service connection writes';
comment on column public.email_logs.id is 'Our id of the message; the provider idempotency key is email-log/<id>';
comment on column public.email_logs.recipient_email is 'The address the message goes to';
comment on column public.email_logs.email_type is 'What the message is (welcome, listing_approved, auth_signup, ...; shared/notifications.ts), or the label a send-email caller gave';
comment on column public.email_logs.send_status is 'pending | sent | failed | captured | suppressed (state machine in the migration header)';
comment on column public.email_logs.error_message is 'Why the last attempt failed (the provider''s message), or why the message was suppressed; null once sent';
comment on column public.email_logs.created_at is 'When the message was written';
comment on column public.email_logs.updated_at is 'Moves on every change (trigger)';
comment on column public.email_logs.user_id is 'The user the message is for, when it is for one of ours';
comment on column public.email_logs.from_address is 'The sender address used (EMAIL_FROM)';
comment on column public.email_logs.reply_to is 'The Reply-To address, if any';
comment on column public.email_logs.subject is 'The subject line';
comment on column public.email_logs.html is 'The HTML body while the message may still be sent, and in captured rows; cleared once sent';
comment on column public.email_logs.text_body is 'The plain-text body, kept and cleared with html';
comment on column public.email_logs.idempotency_key is 'The caller''s key: a second send with the same key sends nothing and answers this row';
comment on column public.email_logs.provider_message_id is 'The provider''s id of the accepted message';
comment on column public.email_logs.attempts is 'Delivery attempts made (at most 5)';
comment on column public.email_logs.next_attempt_at is 'When the row may next be claimed by a sender (backoff, or the claim of the sender working on it); null when nothing more will be tried';
comment on column public.email_logs.last_attempt_at is 'When the last attempt started';
comment on column public.email_logs.sent_at is 'When the provider accepted the message (or it was captured)';
comment on constraint email_logs_send_status_known on public.email_logs is
  'send_status is one of pending, sent, failed, captured, suppressed';
comment on constraint email_logs_recipient_email_format on public.email_logs is
  'A bare address: local@domain, no spaces or angle brackets, at most 320 characters';
comment on constraint email_logs_email_type_format on public.email_logs is
  'An e-mail type is 1 to 100 lower-case letters, digits and _ . : -';
comment on constraint email_logs_subject_length on public.email_logs is 'A subject is 1 to 300 characters';
comment on constraint email_logs_attempts_range on public.email_logs is 'At most 5 delivery attempts';
comment on constraint email_logs_idempotency_key_length on public.email_logs is
  'An idempotency key is 1 to 300 characters';

create unique index if not exists email_logs_idempotency_key_key
  on public.email_logs (idempotency_key);
comment on index public.email_logs_idempotency_key_key is
  'One message per idempotency key (keys are optional; nulls do not collide)';

-- The retry sub-job's queue: rows still to be (re)tried, oldest due first.
create index if not exists email_logs_due_idx
  on public.email_logs (next_attempt_at)
  where send_status in ('pending', 'failed') and next_attempt_at is not null;
comment on index public.email_logs_due_idx is
  'Rows the retry sub-job may claim, by when they are due';

create index if not exists email_logs_created_at_idx on public.email_logs (created_at desc);
comment on index public.email_logs_created_at_idx is 'Newest first: the admin view and the local mail viewer';

create index if not exists email_logs_user_id_type_idx
  on public.email_logs (user_id, email_type, created_at desc)
  where user_id is not null;
comment on index public.email_logs_user_id_type_idx is
  'A user''s messages of one type, newest first (the new-listings digest finds each user''s last one)';

drop trigger if exists email_logs_set_updated_at on public.email_logs;
create trigger email_logs_set_updated_at
  before update on public.email_logs
  for each row execute function public.set_updated_at();

alter table public.email_logs enable row level security;

drop policy if exists "Admins can read the e-mail log" on public.email_logs;
create policy "Admins can read the e-mail log" on public.email_logs
  for select to authenticated
  using ((select public.is_admin()));

revoke all on table public.email_logs from anon, authenticated;
grant select on table public.email_logs to authenticated;
grant all on table public.email_logs to service_role;

-- send-email honours the preferences of the user an address belongs to.
create index if not exists profiles_email_lower_idx on public.profiles (lower(email));
comment on index public.profiles_email_lower_idx is
  'Finding the user of an address, case-insensitively (the sender checks that user''s e-mail preferences)';
