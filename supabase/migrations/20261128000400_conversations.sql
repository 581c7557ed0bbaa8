-- =============================================================================
-- Conversations: one thread per listing and buyer, between buyer and seller
--
-- A buyer asks the seller questions in a conversation: one per listing and
-- buyer (conversations), plain-text messages that are never edited
-- (messages), read marks per side, and two safety exits — either side may
-- block it (it closes for good), and either may report it to the admins.
--
-- Who may start one: the buyer, on an approved listing that is open, or on
-- an nda listing once the seller approved their access (approval opens the
-- conversation itself: the trigger at the end). start_conversation() answers
-- the same id every time; a deal's page finds it by listing and buyer.
--
-- conversations state (closed_at):
--
--   (start_conversation, access approved) ──► open ──block_conversation──► closed
--
--   open    messages may be sent; read marks move
--   closed  final: no message is accepted (PT409); read marks still move,
--           the thread stays readable, and a report may still be made.
--           Blocked by the seller: the buyer's approved access to the listing
--           is revoked (a pending request declined), and the buyer is told.
--
-- Messages: 1 to 4000 characters after trimming (line breaks kept), no control
-- characters but tab and line feed (22023), never edited or deleted by
-- anyone; sent by a participant of an open conversation through
-- send_message(). Limits per user (client_limits, PT429 beyond):
--   message:per_minute       20 messages a minute
--   message:per_day          300 messages a day
--   conversation:per_day     50 new conversations a day
--   conversation_report:per_day  20 reports a day
--
-- Read marks: mark_conversation_read() moves the caller's mark
-- (buyer_last_read_at or seller_last_read_at) to now. Unread for a
-- participant: the other side's messages after their mark. Messages and marks
-- are stamped with clock_timestamp() under the conversation's row lock, so
-- the order of the stamps is the order of the commits and a message is never
-- taken for read before its reader saw it.
--
-- Who is told:
--   * each new message is pushed to both participants' private topics
--     user:<id> (a message addressed to a person is a critical change), as
--     are a new conversation and its closing; nobody else's topic;
--   * the recipient has one in-app notice per conversation with unread
--     messages (type conversations, dedupe key conversation:<id>): a new
--     message rewrites it (and marks it unread, created_at = now), reading
--     the conversation marks it read;
--   * and an e-mail when a message is still unread 15 minutes after it was
--     sent, at most one per conversation and recipient an hour: the notice
--     queue (conversation_unread), timed by conversation_email_due();
--   * a report alerts every admin once (in-app and e-mail, type
--     admin_alerts; one report per conversation and reporter).
--
-- Who reads: the two participants and admins read a conversation and its
-- messages; nobody else, whatever id they guess (RLS; the RPCs answer PT404
-- for a conversation the caller may not read). Reports: the reporter and
-- admins. Nobody writes these tables directly.
--
-- Lock order: the listing (for share to start a conversation, for no key
-- update to block, which may revoke access and so change the listing's
-- access_buyers), the access request, the conversation.
--
-- SQLSTATEs: 42501 not allowed (403), PT404 unknown or not the caller's
-- (404), PT409 closed or not in a state for it (409), 22023 a bad argument
-- (400), PT429 over a limit (429).
-- =============================================================================

-- -----------------------------------------------------------------------------
-- Limits
-- -----------------------------------------------------------------------------
insert into public.client_limits (name, max_hits, window_seconds, description) values
  ('message:per_minute', 20, 60, 'Messages a user sends, per minute (key message:per_minute:<user id>)'),
  ('message:per_day', 300, 86400, 'Messages a user sends, per day (key message:per_day:<user id>)'),
  ('conversation:per_day', 50, 86400,
   'Conversations a buyer starts, per day (key conversation:per_day:<user id>)'),
  ('conversation_report:per_day', 20, 86400,
   'Conversations a user reports, per day (key conversation_report:per_day:<user id>)')
on conflict (name) do nothing;

-- -----------------------------------------------------------------------------
-- conversations
-- -----------------------------------------------------------------------------
create table if not exists public.conversations (
  id uuid primary key default gen_random_uuid(),
  listing_id uuid not null,
  buyer_id uuid not null references auth.users (id) on delete cascade,
  seller_id uuid not null references auth.users (id) on delete cascade,
  created_at timestamptz not null default now(),
  last_message_at timestamptz,
  buyer_last_read_at timestamptz,
  seller_last_read_at timestamptz,
  closed_at timestamptz,
  closed_by uuid references auth.users (id) on delete set null,
  close_reason text,
  constraint conversations_listing_seller_fkey
    foreign key (listing_id, seller_id) references public.listings (id, seller_id) on delete cascade,
  constraint conversations_listing_buyer_key unique (listing_id, buyer_id),
  constraint conversations_not_own check (buyer_id <> seller_id),
  constraint conversations_close_reason_length check (char_length(close_reason) <= 500),
  constraint conversations_closed_by_when_closed check (closed_at is not null or closed_by is null)
);

comment on table public.conversations is
  'One conversation per listing and buyer, between the buyer and the listing''s seller: open until a participant blocks it (closed_at, final). The participants and admins read it; every change goes through start_conversation, send_message, mark_conversation_read and block_conversation (see the conversations migration header)';
comment on column public.conversations.id is 'The conversation''s id';
comment on column public.conversations.listing_id is 'The listing it is about';
comment on column public.conversations.buyer_id is 'The buyer, who started it (or whose access approval opened it)';
comment on column public.conversations.seller_id is 'The listing''s seller';
comment on column public.conversations.created_at is 'When it was started';
comment on column public.conversations.last_message_at is 'When the newest message was sent; null before the first';
comment on column public.conversations.buyer_last_read_at is
  'The buyer''s read mark: the seller''s messages after it are unread for the buyer';
comment on column public.conversations.seller_last_read_at is
  'The seller''s read mark: the buyer''s messages after it are unread for the seller';
comment on column public.conversations.closed_at is 'When a participant blocked it (null while open); final';
comment on column public.conversations.closed_by is 'Who blocked it';
comment on column public.conversations.close_reason is 'Why, as the participant who blocked it said (at most 500 characters)';
comment on constraint conversations_listing_seller_fkey on public.conversations is
  'The conversation''s seller is its listing''s seller';
comment on constraint conversations_listing_buyer_key on public.conversations is
  'One conversation per listing and buyer';
comment on index public.conversations_listing_buyer_key is
  'One conversation per listing and buyer (how a deal''s page finds it)';
comment on constraint conversations_not_own on public.conversations is
  'A seller does not converse with themself';
comment on constraint conversations_close_reason_length on public.conversations is
  'A close reason is at most 500 characters';
comment on constraint conversations_closed_by_when_closed on public.conversations is
  'Only a closed conversation names who closed it';
comment on constraint conversations_pkey on public.conversations is 'One row per conversation';
comment on index public.conversations_pkey is 'One row per conversation';
comment on constraint conversations_buyer_id_fkey on public.conversations is 'The buyer is a user';
comment on constraint conversations_seller_id_fkey on public.conversations is 'The seller is a user';
comment on constraint conversations_closed_by_fkey on public.conversations is
  'Who closed it is a user (kept null if they are deleted)';

create index if not exists conversations_buyer_last_message_idx
  on public.conversations (buyer_id, last_message_at desc nulls last);
comment on index public.conversations_buyer_last_message_idx is
  'A buyer''s conversations, most recently active first';
create index if not exists conversations_seller_last_message_idx
  on public.conversations (seller_id, last_message_at desc nulls last);
comment on index public.conversations_seller_last_message_idx is
  'A seller''s conversations, most recently active first';

-- -----------------------------------------------------------------------------
-- messages
-- -----------------------------------------------------------------------------
create table if not exists public.messages (
  id uuid primary key default gen_random_uuid(),
  conversation_id uuid not null references public.conversations (id) on delete cascade,
  sender_id uuid not null references auth.users (id) on delete cascade,
  body text not null,
  created_at timestamptz not null default clock_timestamp(),
  constraint messages_body_length check (char_length(body) between 1 and 4000)
);

comment on table public.messages is
  'Plain-text messages of a conversation, never edited or deleted; sent through send_message() by a participant of an open conversation. The participants and admins read them';
comment on column public.messages.id is 'The message''s id';
comment on column public.messages.conversation_id is 'The conversation it belongs to';
comment on column public.messages.sender_id is 'Who sent it: the conversation''s buyer or seller';
comment on column public.messages.body is
  'The text: 1 to 4000 characters, trimmed, line breaks as \n, no other control characters but tab';
comment on column public.messages.created_at is
  'When it was sent (clock time under the conversation''s lock: the order of the messages)';
comment on constraint messages_body_length on public.messages is 'A message is 1 to 4000 characters';
comment on constraint messages_pkey on public.messages is 'One row per message';
comment on index public.messages_pkey is 'One row per message';
comment on constraint messages_conversation_id_fkey on public.messages is
  'A message belongs to a conversation';
comment on constraint messages_sender_id_fkey on public.messages is 'The sender is a user';

create index if not exists messages_conversation_created_at_idx
  on public.messages (conversation_id, created_at desc);
comment on index public.messages_conversation_created_at_idx is
  'A conversation''s messages, newest first (the thread, unread counts)';

create or replace function public.guard_message()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  raise exception 'Cannot % message "%": messages are never edited or deleted', lower(tg_op), old.id
    using errcode = 'PT409';
end
$$;
comment on function public.guard_message() is
  'Trigger on messages: refuses every update and delete (PT409): a message stands as sent';
revoke execute on function public.guard_message() from public, anon, authenticated;

drop trigger if exists messages_never_change on public.messages;
create trigger messages_never_change
  before update or delete on public.messages
  for each row execute function public.guard_message();
comment on trigger messages_never_change on public.messages is
  'Messages are never edited or deleted (a deleted conversation takes its messages with it)';

-- -----------------------------------------------------------------------------
-- conversation_reports
-- -----------------------------------------------------------------------------
create table if not exists public.conversation_reports (
  id uuid primary key default gen_random_uuid(),
  conversation_id uuid not null references public.conversations (id) on delete cascade,
  reporter_id uuid not null references auth.users (id) on delete cascade,
  reason text not null,
  created_at timestamptz not null default now(),
  constraint conversation_reports_once unique (conversation_id, reporter_id),
  constraint conversation_reports_reason_length check (char_length(reason) between 1 and 2000)
);

comment on table public.conversation_reports is
  'A participant''s report of a conversation to the admins (abuse, fraud, off-platform payment requests), at most one per conversation and reporter; every admin is told once. The reporter and admins read it';
comment on column public.conversation_reports.id is 'The report''s id';
comment on column public.conversation_reports.conversation_id is 'The reported conversation';
comment on column public.conversation_reports.reporter_id is 'The participant who reported it';
comment on column public.conversation_reports.reason is 'What the reporter says is wrong (1 to 2000 characters)';
comment on column public.conversation_reports.created_at is 'When it was reported';
comment on constraint conversation_reports_once on public.conversation_reports is
  'One report per conversation and reporter: reporting again answers the first';
comment on index public.conversation_reports_once is
  'One report per conversation and reporter';
comment on constraint conversation_reports_reason_length on public.conversation_reports is
  'A reason is 1 to 2000 characters';
comment on constraint conversation_reports_pkey on public.conversation_reports is 'One row per report';
comment on index public.conversation_reports_pkey is 'One row per report';
comment on constraint conversation_reports_conversation_id_fkey on public.conversation_reports is
  'A report is about a conversation';
comment on constraint conversation_reports_reporter_id_fkey on public.conversation_reports is
  'The reporter is a user';

create index if not exists conversation_reports_created_at_idx
  on public.conversation_reports (created_at desc);
comment on index public.conversation_reports_created_at_idx is 'Reports, newest first (the admins'' list)';

-- -----------------------------------------------------------------------------
-- Row level security
-- -----------------------------------------------------------------------------
alter table public.conversations enable row level security;
alter table public.messages enable row level security;
alter table public.conversation_reports enable row level security;

drop policy if exists "Participants can read their conversations, admins all"
  on public.conversations;
create policy "Participants can read their conversations, admins all" on public.conversations
  for select to authenticated
  using (
    buyer_id = (select auth.uid())
    or seller_id = (select auth.uid())
    or (select public.is_admin())
  );
comment on policy "Participants can read their conversations, admins all" on public.conversations is
  'The buyer and the seller read their conversation; admins read all; nobody else';

drop policy if exists "Participants can read their messages, admins all" on public.messages;
create policy "Participants can read their messages, admins all" on public.messages
  for select to authenticated
  using (
    exists (
      select 1 from public.conversations c
      where c.id = messages.conversation_id
        and (c.buyer_id = (select auth.uid()) or c.seller_id = (select auth.uid()))
    )
    or (select public.is_admin())
  );
comment on policy "Participants can read their messages, admins all" on public.messages is
  'The two participants of a conversation read its messages; admins read all; nobody else';

drop policy if exists "Reporters can read their reports, admins all" on public.conversation_reports;
create policy "Reporters can read their reports, admins all" on public.conversation_reports
  for select to authenticated
  using (reporter_id = (select auth.uid()) or (select public.is_admin()));
comment on policy "Reporters can read their reports, admins all" on public.conversation_reports is
  'The reporter reads their own reports; admins read all; the reported side does not';

revoke all on table public.conversations from public, anon, authenticated;
revoke all on table public.messages from public, anon, authenticated;
revoke all on table public.conversation_reports from public, anon, authenticated;
grant select on table public.conversations to authenticated;
grant select on table public.messages to authenticated;
grant select on table public.conversation_reports to authenticated;
grant all on table public.conversations to service_role;
grant all on table public.messages to service_role;
grant all on table public.conversation_reports to service_role;

-- -----------------------------------------------------------------------------
-- Realtime: messages, new conversations and their closing, to both participants
-- -----------------------------------------------------------------------------
create or replace function public.broadcast_conversation_change()
returns trigger
language plpgsql
-- Definer rights: the RPCs run as the client, which may not insert into
-- realtime.messages.
security definer
set search_path = ''
as $$
declare
  v_buyer uuid;
  v_seller uuid;
begin
  if tg_table_name = 'messages' then
    select c.buyer_id, c.seller_id into v_buyer, v_seller
    from public.conversations c where c.id = new.conversation_id;
  else
    v_buyer := new.buyer_id;
    v_seller := new.seller_id;
  end if;
  perform realtime.broadcast_changes(
    'user:' || v_buyer::text, tg_op, tg_op, tg_table_name, tg_table_schema, new, old
  );
  perform realtime.broadcast_changes(
    'user:' || v_seller::text, tg_op, tg_op, tg_table_name, tg_table_schema, new, old
  );
  return null;
end
$$;
comment on function public.broadcast_conversation_change() is
  'Trigger on messages and conversations: broadcasts a new message, a new conversation or its closing to the buyer''s and the seller''s private topics user:<id>, and to nobody else';
revoke execute on function public.broadcast_conversation_change() from public, anon, authenticated;

drop trigger if exists messages_broadcast_insert on public.messages;
create trigger messages_broadcast_insert
  after insert on public.messages
  for each row execute function public.broadcast_conversation_change();
comment on trigger messages_broadcast_insert on public.messages is
  'Pushes each new message to both participants';

drop trigger if exists conversations_broadcast_insert on public.conversations;
create trigger conversations_broadcast_insert
  after insert on public.conversations
  for each row execute function public.broadcast_conversation_change();
comment on trigger conversations_broadcast_insert on public.conversations is
  'Pushes a new conversation to both participants';

drop trigger if exists conversations_broadcast_closed on public.conversations;
create trigger conversations_broadcast_closed
  after update on public.conversations
  for each row
  when (old.closed_at is distinct from new.closed_at)
  execute function public.broadcast_conversation_change();
comment on trigger conversations_broadcast_closed on public.conversations is
  'Pushes the closing of a conversation to both participants (read marks and activity are not pushed)';

-- -----------------------------------------------------------------------------
-- open_conversation(): the conversation of a listing and buyer, created once
-- -----------------------------------------------------------------------------
create or replace function public.open_conversation(p_listing uuid, p_buyer uuid, p_seller uuid)
returns table (id uuid, created boolean)
language plpgsql
-- Invoker rights: only the owner (definer RPCs and triggers) and service_role.
set search_path = ''
as $$
begin
  insert into public.conversations as c (listing_id, buyer_id, seller_id)
  values (p_listing, p_buyer, p_seller)
  on conflict (listing_id, buyer_id) do nothing
  returning c.id into id;
  created := id is not null;
  if not created then
    select c.id into id from public.conversations c
    where c.listing_id = p_listing and c.buyer_id = p_buyer;
  end if;
  return next;
end
$$;
comment on function public.open_conversation(uuid, uuid, uuid) is
  'Internal: the id of the conversation of listing p_listing and buyer p_buyer, and whether this call created it (with seller p_seller); concurrent calls create one. Service role and definer functions only';
revoke execute on function public.open_conversation(uuid, uuid, uuid) from public, anon, authenticated;
grant execute on function public.open_conversation(uuid, uuid, uuid) to service_role;

-- Approval opens the conversation.
create or replace function public.open_conversation_on_access()
returns trigger
language plpgsql
-- Definer rights: the seller's decision runs as the client, which may not
-- insert conversations.
security definer
set search_path = ''
as $$
begin
  perform 1 from public.open_conversation(new.listing_id, new.buyer_id, new.seller_id);
  return null;
end
$$;
comment on function public.open_conversation_on_access() is
  'Trigger on listing_access_requests: an approved request opens the conversation of its listing and buyer (once)';
revoke execute on function public.open_conversation_on_access() from public, anon, authenticated;

drop trigger if exists listing_access_requests_open_conversation on public.listing_access_requests;
create trigger listing_access_requests_open_conversation
  after update on public.listing_access_requests
  for each row
  when (old.status = 'pending' and new.status = 'approved')
  execute function public.open_conversation_on_access();
comment on trigger listing_access_requests_open_conversation on public.listing_access_requests is
  'Approval opens the conversation between the buyer and the seller';

-- -----------------------------------------------------------------------------
-- lock_conversation(): the shared first steps of every conversation RPC
-- -----------------------------------------------------------------------------
create or replace function public.lock_conversation(
  p_conversation uuid,
  p_action text,
  p_participants_only boolean
)
returns public.conversations
language plpgsql
-- Invoker rights: only the owner (the definer RPCs below) and service_role.
set search_path = ''
as $$
declare
  v_uid uuid := auth.uid();
  v_client boolean := public.is_client_request();
  v_conversation public.conversations;
begin
  perform public.assert_signed_in(p_action);
  select * into v_conversation from public.conversations c where c.id = p_conversation for update;
  if not found
     or (v_client and v_uid is distinct from v_conversation.buyer_id
         and v_uid is distinct from v_conversation.seller_id and not public.is_admin()) then
    raise exception 'Cannot %: conversation "%" does not exist', p_action, p_conversation
      using errcode = 'PT404';
  end if;
  if v_client and p_participants_only
     and v_uid is distinct from v_conversation.buyer_id
     and v_uid is distinct from v_conversation.seller_id then
    raise exception 'Cannot %: only the buyer and the seller of conversation "%" may', p_action,
      p_conversation using errcode = '42501';
  end if;
  return v_conversation;
end
$$;
comment on function public.lock_conversation(uuid, text, boolean) is
  'Internal: refuses an anonymous caller (42501), locks the conversation (for update) and answers it; PT404 when it does not exist or the caller may not read it; 42501 for an admin when p_participants_only. Any caller on the service connection';
revoke execute on function public.lock_conversation(uuid, text, boolean)
  from public, anon, authenticated;
grant execute on function public.lock_conversation(uuid, text, boolean) to service_role;

-- -----------------------------------------------------------------------------
-- conversation_email_due(): the e-mail cadence
-- -----------------------------------------------------------------------------
create or replace function public.conversation_email_due(p_conversation uuid, p_user uuid)
returns table (due_at timestamptz, since timestamptz)
language plpgsql
stable
-- Invoker rights: only the owner (send_message) and service_role (the
-- notice queue's job) call it.
set search_path = ''
as $$
declare
  v_conversation public.conversations;
  v_last_sent timestamptz;
  v_oldest timestamptz;
begin
  select * into v_conversation from public.conversations c where c.id = p_conversation;
  select max(q.done_at) into v_last_sent
  from public.notice_queue q
  where q.subject_id = p_conversation and q.user_id = p_user
    and q.kind = 'conversation_unread' and q.status = 'sent';
  -- The user's messages to be told start after the later of their read mark
  -- and their last e-mail: the other side's, neither read nor e-mailed.
  since := greatest(
    case p_user
      when v_conversation.buyer_id then v_conversation.buyer_last_read_at
      when v_conversation.seller_id then v_conversation.seller_last_read_at
    end,
    v_last_sent
  );
  if v_conversation.id is null or v_conversation.closed_at is not null then
    return next;
    return;
  end if;
  select min(m.created_at) into v_oldest
  from public.messages m
  where m.conversation_id = p_conversation and m.sender_id <> p_user
    and (since is null or m.created_at > since);
  if v_oldest is not null then
    due_at := greatest(v_oldest + interval '15 minutes', v_last_sent + interval '1 hour');
  end if;
  return next;
end
$$;
comment on function public.conversation_email_due(uuid, uuid) is
  'One row: due_at, when participant p_user may be e-mailed about unread messages of conversation p_conversation (15 minutes after the oldest message of the other side after since, and at least an hour after the last such e-mail; null when there is none or the conversation is closed or gone), and since, the later of the user''s read mark and their last unread-messages e-mail (null for neither: every message counts): the other side''s messages after it are the ones an e-mail tells. Service role only';
revoke execute on function public.conversation_email_due(uuid, uuid) from public, anon, authenticated;
grant execute on function public.conversation_email_due(uuid, uuid) to service_role;

-- -----------------------------------------------------------------------------
-- refresh_conversation_notice(): the one in-app notice of a conversation
-- -----------------------------------------------------------------------------
create or replace function public.refresh_conversation_notice(p_conversation uuid, p_user uuid)
returns void
language plpgsql
volatile
-- Invoker rights: only the owner (the definer RPCs) and service_role call
-- it; both may write notifications.
set search_path = ''
as $$
declare
  v_conversation public.conversations;
  v_read timestamptz;
  v_unread integer;
  v_latest public.messages;
  v_title text;
  v_from text;
  v_key text := 'conversation:' || p_conversation::text;
begin
  select * into v_conversation from public.conversations c where c.id = p_conversation;
  if not found then
    return;
  end if;
  v_read := case p_user
    when v_conversation.buyer_id then v_conversation.buyer_last_read_at
    when v_conversation.seller_id then v_conversation.seller_last_read_at
  end;
  select count(*)::integer into v_unread
  from public.messages m
  where m.conversation_id = p_conversation and m.sender_id <> p_user
    and m.created_at > coalesce(v_read, '-infinity'::timestamptz);
  if v_unread = 0 then
    update public.notifications set read_at = now()
    where user_id = p_user and dedupe_key = v_key and read_at is null;
    return;
  end if;
  -- No preference row: on (shared/notifications.ts, conversations.inApp).
  if not coalesce((
    select p.in_app from public.notification_preferences p
    where p.user_id = p_user and p.type = 'conversations'
  ), true) then
    return;
  end if;
  select * into v_latest from public.messages m
  where m.conversation_id = p_conversation and m.sender_id <> p_user
  order by m.created_at desc limit 1;
  select l.title into v_title from public.listings l where l.id = v_conversation.listing_id;
  v_from := case when p_user = v_conversation.seller_id then 'The buyer' else 'The seller' end;
  insert into public.notifications (user_id, type, title, body, link, data, dedupe_key)
  values (
    p_user,
    'conversations',
    'New message about ' || left(coalesce(v_title, 'a listing'), 150),
    v_from || ' wrote: "' || left(v_latest.body, 300) || case when char_length(v_latest.body) > 300 then '…' else '' end || '"'
      || case when v_unread > 1 then format(' (%s unread messages)', v_unread) else '' end,
    '/conversations/' || p_conversation::text,
    jsonb_build_object(
      'conversationId', p_conversation,
      'listingId', v_conversation.listing_id,
      'unread', v_unread,
      'lastMessageId', v_latest.id
    ),
    v_key
  )
  on conflict (user_id, dedupe_key) do update set
    title = excluded.title,
    body = excluded.body,
    data = excluded.data,
    read_at = null,
    created_at = now();
end
$$;
comment on function public.refresh_conversation_notice(uuid, uuid) is
  'Brings participant p_user''s one in-app notice of conversation p_conversation (type conversations, dedupe key conversation:<id>) up to date: rewritten and unread (created_at = now) while they have unread messages and their in-app preference is on, marked read once they have none. Service role and definer functions only';
revoke execute on function public.refresh_conversation_notice(uuid, uuid) from public, anon, authenticated;
grant execute on function public.refresh_conversation_notice(uuid, uuid) to service_role;

-- -----------------------------------------------------------------------------
-- start_conversation(): the buyer's thread with the seller
-- -----------------------------------------------------------------------------
create or replace function public.start_conversation(p_listing uuid)
returns uuid
language plpgsql
-- Definer rights: a buyer may neither read another seller's listing nor
-- insert conversations; the caller is checked first.
security definer
set search_path = ''
as $$
declare
  v_uid uuid := auth.uid();
  v_listing record;
  v_id uuid;
  v_created boolean;
begin
  perform public.assert_signed_in('start a conversation');
  if v_uid is null then
    raise exception 'Cannot start a conversation: only a signed-in buyer may' using errcode = '42501';
  end if;

  -- The same conversation every time, whatever became of the listing since.
  select c.id into v_id from public.conversations c
  where c.listing_id = p_listing and c.buyer_id = v_uid;
  if found then
    return v_id;
  end if;

  select l.id, l.seller_id, l.review_status, l.access_mode into v_listing
  from public.listings l where l.id = p_listing
  for share;
  if not found or (v_listing.review_status <> 'approved' and v_listing.seller_id <> v_uid) then
    raise exception 'Cannot start a conversation on listing "%": it does not exist', p_listing
      using errcode = 'PT404';
  end if;
  if v_listing.seller_id = v_uid then
    raise exception 'Cannot start a conversation on listing "%": it is your own listing; buyers start conversations',
      p_listing using errcode = '42501';
  end if;
  if v_listing.access_mode = 'nda' and not public.has_listing_access(p_listing, v_uid) then
    raise exception 'Cannot start a conversation on listing "%": it is confidential, and the seller has not approved your access',
      p_listing using errcode = '42501',
        hint = 'Accept the NDA and ask for access first: supabase.rpc("request_listing_access"); approval opens the conversation';
  end if;

  select o.id, o.created into v_id, v_created
  from public.open_conversation(p_listing, v_uid, v_listing.seller_id) o;
  -- Only a conversation this call created counts against the limit.
  if v_created then
    perform public.take_user_limit('conversation:per_day', 'start a conversation');
  end if;
  return v_id;
end
$$;
comment on function public.start_conversation(uuid) is
  'The buyer''s conversation with the seller of listing p_listing: the same id every time (created on the first call). Allowed to a signed-in buyer (not the seller: 42501) on an approved open listing, or on an nda listing with approved access (42501 otherwise, with a hint); PT404 for an unknown listing or one not on sale (the buyer has no conversation on it yet). PT429 beyond client_limits conversation:per_day. supabase.rpc("start_conversation", { p_listing })';
revoke execute on function public.start_conversation(uuid) from public, anon;
grant execute on function public.start_conversation(uuid) to authenticated, service_role;

-- -----------------------------------------------------------------------------
-- send_message(): a participant writes to the other
-- -----------------------------------------------------------------------------
create or replace function public.send_message(p_conversation uuid, p_body text)
returns uuid
language plpgsql
-- Definer rights: participants may not insert messages or move the other
-- side's notice; the caller is checked first (lock_conversation).
security definer
set search_path = ''
as $$
declare
  v_uid uuid := auth.uid();
  v_conversation public.conversations;
  v_body text;
  v_sender uuid;
  v_recipient uuid;
  v_message uuid;
  v_at timestamptz;
begin
  v_conversation := public.lock_conversation(p_conversation, 'send the message', true);
  if v_uid is null then
    raise exception 'Cannot send the message: a message needs a sender' using errcode = '42501';
  end if;
  if v_conversation.closed_at is not null then
    raise exception 'Cannot send the message: conversation "%" was closed on %', p_conversation,
      to_char(v_conversation.closed_at at time zone 'UTC', 'YYYY-MM-DD') using errcode = 'PT409';
  end if;
  v_body := public.clean_user_text(p_body, 'the message', 4000, true);
  perform public.take_user_limit('message:per_minute', 'send the message');
  perform public.take_user_limit('message:per_day', 'send the message');

  v_sender := v_uid;
  v_recipient := case when v_sender = v_conversation.buyer_id
    then v_conversation.seller_id else v_conversation.buyer_id end;
  -- Stamped under the conversation's lock: stamps follow the commit order.
  v_at := clock_timestamp();
  insert into public.messages (conversation_id, sender_id, body, created_at)
  values (p_conversation, v_sender, v_body, v_at)
  returning id into v_message;
  update public.conversations c set
    last_message_at = v_at,
    buyer_last_read_at = case when v_sender = c.buyer_id then v_at else c.buyer_last_read_at end,
    seller_last_read_at = case when v_sender = c.seller_id then v_at else c.seller_last_read_at end
  where c.id = p_conversation;

  perform public.refresh_conversation_notice(p_conversation, v_recipient);
  perform public.refresh_conversation_notice(p_conversation, v_sender);
  perform public.queue_notice(
    'conversation_unread', v_recipient, p_conversation,
    (select d.due_at from public.conversation_email_due(p_conversation, v_recipient) d)
  );
  return v_message;
end
$$;
comment on function public.send_message(uuid, text) is
  'A participant of an open conversation (PT404 for a conversation the caller may not read, 42501 for an admin, PT409 when closed) sends p_body: 1 to 4000 characters after trimming, no control characters but tab and line feed (22023). Pushed to both participants; the recipient''s in-app notice is updated and an e-mail is queued for when it is still unread after 15 minutes (at most one per conversation an hour). PT429 beyond client_limits message:per_minute or message:per_day. Answers the message''s id. supabase.rpc("send_message", { p_conversation, p_body })';
revoke execute on function public.send_message(uuid, text) from public, anon;
grant execute on function public.send_message(uuid, text) to authenticated, service_role;

-- -----------------------------------------------------------------------------
-- mark_conversation_read(): the caller has read everything so far
-- -----------------------------------------------------------------------------
create or replace function public.mark_conversation_read(p_conversation uuid)
returns timestamptz
language plpgsql
-- Definer rights: participants may not update conversations; the caller is
-- checked first and moves only their own mark.
security definer
set search_path = ''
as $$
declare
  v_uid uuid := auth.uid();
  v_conversation public.conversations;
  v_at timestamptz;
begin
  v_conversation := public.lock_conversation(p_conversation, 'mark the conversation read', true);
  if v_uid is null then
    raise exception 'Cannot mark the conversation read: it has no reader on the service connection'
      using errcode = '42501';
  end if;
  v_at := clock_timestamp();
  update public.conversations c set
    buyer_last_read_at = case when v_uid = c.buyer_id then v_at else c.buyer_last_read_at end,
    seller_last_read_at = case when v_uid = c.seller_id then v_at else c.seller_last_read_at end
  where c.id = p_conversation;
  perform public.refresh_conversation_notice(p_conversation, v_uid);
  return v_at;
end
$$;
comment on function public.mark_conversation_read(uuid) is
  'Moves the calling participant''s read mark of the conversation to now (PT404 for a conversation the caller may not read, 42501 for an admin) and marks its in-app notice read; answers the new mark. Allowed on a closed conversation too. supabase.rpc("mark_conversation_read", { p_conversation })';
revoke execute on function public.mark_conversation_read(uuid) from public, anon;
grant execute on function public.mark_conversation_read(uuid) to authenticated, service_role;

-- -----------------------------------------------------------------------------
-- block_conversation(): either participant closes it for good
-- -----------------------------------------------------------------------------
create or replace function public.block_conversation(p_conversation uuid, p_reason text default null)
returns void
language plpgsql
-- Definer rights: participants may not update conversations or requests;
-- the caller is checked first (lock_conversation).
security definer
set search_path = ''
as $$
declare
  v_uid uuid := auth.uid();
  v_listing uuid;
  v_conversation public.conversations;
  v_reason text;
  v_request record;
begin
  perform public.assert_signed_in('block the conversation');
  -- The lock order: the listing, its requests, then the conversation.
  -- listing_id never changes, so it may be read before the locks.
  select c.listing_id into v_listing from public.conversations c where c.id = p_conversation;
  if found then
    perform 1 from public.listings l where l.id = v_listing for no key update;
    perform 1 from public.listing_access_requests r
    where r.listing_id = v_listing
      and r.buyer_id = (select c.buyer_id from public.conversations c where c.id = p_conversation)
      and r.status in ('pending', 'approved')
    for update;
  end if;
  v_conversation := public.lock_conversation(p_conversation, 'block the conversation', true);
  if v_conversation.closed_at is not null then
    raise exception 'Cannot block the conversation: conversation "%" was closed on %', p_conversation,
      to_char(v_conversation.closed_at at time zone 'UTC', 'YYYY-MM-DD') using errcode = 'PT409';
  end if;
  v_reason := public.clean_user_text(p_reason, 'the reason', 500, false);
  update public.conversations
  set closed_at = now(), closed_by = v_uid, close_reason = v_reason
  where id = p_conversation;

  -- A seller's block ends the buyer's access to the listing, through the
  -- seller's own moves (the buyer is told by each). A pending request past
  -- its expiry is left to the expiry sweep.
  if v_uid = v_conversation.seller_id then
    for v_request in
      select r.id, r.status from public.listing_access_requests r
      where r.listing_id = v_conversation.listing_id and r.buyer_id = v_conversation.buyer_id
        and (r.status = 'approved' or (r.status = 'pending' and r.expires_at > now()))
    loop
      if v_request.status = 'approved' then
        perform public.revoke_listing_access(v_request.id, 'The seller blocked the conversation');
      else
        perform public.decide_listing_access(
          v_request.id, false, 'The seller blocked the conversation'
        );
      end if;
    end loop;
  end if;
end
$$;
comment on function public.block_conversation(uuid, text) is
  'Either participant (PT404 for a conversation the caller may not read, 42501 for an admin) closes an open conversation for good (PT409 when already closed), with an optional reason (at most 500 characters, 22023). When the seller blocks, the buyer''s approved access to the listing is revoked (a pending request declined) and the buyer is told. Pushed to both. supabase.rpc("block_conversation", { p_conversation, p_reason })';
revoke execute on function public.block_conversation(uuid, text) from public, anon;
grant execute on function public.block_conversation(uuid, text) to authenticated, service_role;

-- -----------------------------------------------------------------------------
-- report_conversation(): a participant alerts the admins
-- -----------------------------------------------------------------------------
create or replace function public.report_conversation(p_conversation uuid, p_reason text)
returns uuid
language plpgsql
-- Definer rights: participants may not write reports or the notice queue;
-- the caller is checked first (lock_conversation).
security definer
set search_path = ''
as $$
declare
  v_uid uuid := auth.uid();
  v_conversation public.conversations;
  v_reason text;
  v_id uuid;
begin
  v_conversation := public.lock_conversation(p_conversation, 'report the conversation', true);
  if v_uid is null then
    raise exception 'Cannot report the conversation: a report needs a reporter' using errcode = '42501';
  end if;
  select r.id into v_id from public.conversation_reports r
  where r.conversation_id = p_conversation and r.reporter_id = v_uid;
  if found then
    return v_id;
  end if;
  v_reason := public.clean_user_text(p_reason, 'the reason', 2000, true);
  perform public.take_user_limit('conversation_report:per_day', 'report the conversation');
  insert into public.conversation_reports (conversation_id, reporter_id, reason)
  values (p_conversation, v_uid, v_reason)
  returning id into v_id;
  perform public.queue_notice('conversation_reported', r.user_id, v_id)
  from public.user_roles r
  where r.role = 'admin';
  return v_id;
end
$$;
comment on function public.report_conversation(uuid, text) is
  'A participant (PT404 for a conversation the caller may not read, 42501 for an admin) reports the conversation to the admins with a reason (1 to 2000 characters, 22023): every admin is told once, in-app and by e-mail. Reporting it again answers the first report''s id and tells nobody again. PT429 beyond client_limits conversation_report:per_day. supabase.rpc("report_conversation", { p_conversation, p_reason })';
revoke execute on function public.report_conversation(uuid, text) from public, anon;
grant execute on function public.report_conversation(uuid, text) to authenticated, service_role;
