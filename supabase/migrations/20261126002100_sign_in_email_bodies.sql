-- =============================================================================
-- Sign-in e-mail bodies: kept where admins cannot read them
--
-- Sign-in e-mails (email_type auth_*: sign-up confirmation, invite, magic
-- link, recovery, e-mail change, reauthentication) carry credentials — a
-- verify link that signs its holder in, a one-time code. email_logs kept the
-- body of every message while it could still be sent and in captured rows,
-- and admins read email_logs, so an admin could read another user's magic
-- link or recovery link (of a failed message on hosted, of every message
-- locally). Now:
--
--   * a sign-in e-mail's email_logs row never holds its body (the check
--     constraint email_logs_sign_in_body_apart); admins still read the rest of
--     the row: recipient, type, status, error, times;
--   * the body lives in email_sign_in_bodies, which only the service
--     connection reads (RLS on, no policy, no grant to clients), written in
--     the statement that writes the row (_shared/email/log.ts);
--   * it is kept while the message may still be sent (pending) and in
--     captured rows (local development: the mail viewer at /_local/mail shows
--     the link, reading it on the service connection), and deleted with the
--     attempt that sends the message, or that fails it for good (sign-in
--     e-mails are never retried: Auth failed the sign-in, its link is dead).
--
-- Not storing the body at all was the alternative; the sender reads the body
-- from the row it claims, and local development needs the captured links,
-- so the body is kept apart instead.
--
-- Existing rows: the bodies of pending and captured sign-in rows move to the
-- new table; every other sign-in body (failed, sent) is deleted. Then the
-- constraint is added.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- email_sign_in_bodies
-- -----------------------------------------------------------------------------
create table if not exists public.email_sign_in_bodies (
  email_log_id uuid primary key references public.email_logs (id) on delete cascade,
  html text,
  text_body text,
  created_at timestamptz not null default now()
);

comment on table public.email_sign_in_bodies is
  'The body of a sign-in e-mail (email_logs.email_type auth_*: links and one-time codes are credentials), kept apart from email_logs, which admins read: while the message may still be sent and in captured rows (the local mail viewer); deleted once sent or failed for good. Service connection only';
comment on column public.email_sign_in_bodies.email_log_id is 'The email_logs row the body belongs to';
comment on column public.email_sign_in_bodies.html is 'The HTML body';
comment on column public.email_sign_in_bodies.text_body is 'The plain-text body';
comment on column public.email_sign_in_bodies.created_at is 'When the body was written';

-- No client access, admins included: RLS on without policies, and no grants
-- to clients. The service connection reads and writes it (service_role
-- bypasses RLS).
alter table public.email_sign_in_bodies enable row level security;
revoke all on table public.email_sign_in_bodies from public, anon, authenticated;
grant all on table public.email_sign_in_bodies to service_role;

-- -----------------------------------------------------------------------------
-- Existing rows: move what may still be needed, delete the rest
-- -----------------------------------------------------------------------------
insert into public.email_sign_in_bodies (email_log_id, html, text_body)
select l.id, l.html, l.text_body
from public.email_logs l
where starts_with(l.email_type, 'auth_')
  and l.send_status in ('pending', 'captured')
  and (l.html is not null or l.text_body is not null)
on conflict (email_log_id) do nothing;

update public.email_logs
set html = null, text_body = null
where starts_with(email_type, 'auth_')
  and (html is not null or text_body is not null);

-- -----------------------------------------------------------------------------
-- email_logs_sign_in_body_apart
-- -----------------------------------------------------------------------------
do $$
begin
  if not exists (
    select 1 from pg_constraint
    where conrelid = 'public.email_logs'::regclass
      and conname = 'email_logs_sign_in_body_apart'
  ) then
    alter table public.email_logs
      add constraint email_logs_sign_in_body_apart
      check (not starts_with(email_type, 'auth_') or (html is null and text_body is null));
  end if;
end
$$;
comment on constraint email_logs_sign_in_body_apart on public.email_logs is
  'A sign-in e-mail (auth_*) has no body here: its links and codes are credentials, kept in email_sign_in_bodies, which admins cannot read';

comment on column public.email_logs.html is
  'The HTML body while the message may still be sent, and in captured rows; cleared once sent. Always null for sign-in e-mails (auth_*): their body is in email_sign_in_bodies';
comment on column public.email_logs.text_body is
  'The plain-text body, kept and cleared with html (null for sign-in e-mails, as html)';
