-- =============================================================================
-- The contact form's held queue: past the ceiling, messages wait for an admin
--
-- Until now the contact form's global ceiling (client_limits contact:ceiling,
-- 100 an hour) refused every message once full: ten client networks at their
-- own limit (contact:client, 10 an hour) locked the form for every visitor.
-- Now nothing a visitor sends is lost: past the ceiling a message is
-- ACCEPTED as held, and an admin releases it (it then counts as received and
-- goes into the next contact digest) or discards it (spam). The per-sender
-- (contact:sender) and per-network (contact:client) limits still refuse with
-- PT429 as before: they only hit the abuser.
--
-- contact_messages.review_status:
--
--   (client insert) ──► received                 within every limit
--   (client insert) ──► held ──► released        an admin lets it through
--                          └───► discarded       an admin throws it away
--   (service insert) ─► received (or as written)
--
--   status     meaning                                     in the contact digest
--   received   accepted within the ceiling                 listed, at created_at
--   held       arrived past the ceiling; waits for review  counted only ("N held")
--   released   held, then let through by an admin          listed, at reviewed_at
--   discarded  held, then thrown away by an admin          never
--
--   from      to         who / how
--   (new)     received   a client insert within contact:ceiling; any insert
--                        on the service connection (not limited)
--   (new)     held       a client insert past contact:ceiling (the trigger
--                        contact_messages_rate_limit); PT429 still when past
--                        contact:sender or contact:client
--   held      released   review_contact_messages(ids, 'release') by an admin
--   held      discarded  review_contact_messages(ids, 'discard') by an admin
--
-- released and discarded are final; received never moves. Any other move is
-- refused with PT409 and the message's status as hint (received, released
-- or discarded): releasing a discarded message, discarding twice, a second
-- admin releasing what the first just released. review_contact_messages()
-- takes 1 to 100 ids (22023 otherwise: the per-call limit), all or nothing:
-- one unknown id (PT404) or one wrong move refuses the whole call and writes
-- nothing. Its caller must be an admin (is_admin(), 42501 otherwise; an
-- anonymous session gets assert_signed_in()'s 42501 first). It locks the
-- rows in id order, so two admins at once make one move each message (the
-- second waits, then finds it moved: PT409).
--
-- Why a column and not a held table: a message has one life, from the form
-- to an answer, and every reader (admins through RLS, the digest, the
-- frontend's inbox) already reads contact_messages. A held table would move
-- rows between tables on release and give two places to read and secure;
-- the column keeps one row, one id, one policy. The sender never saw the
-- table (only admins read it) and may write only name, email, subject and
-- message (column grants), so a sender can neither see nor mark nor change
-- a held message; nobody but review_contact_messages() (and the service
-- connection) writes the review columns.
--
-- The digest. contact_messages.received_at (generated) is when a message
-- entered the admins' inbox: created_at when received, reviewed_at when
-- released, null otherwise. send-admin-contact-notification lists the rows
-- with received_at after its cursor (so a released message comes once, in
-- the first digest after its release, however old it is) and counts the
-- held ones: all that wait, and those that arrived since the last digest (a
-- digest goes out for new held messages alone too). A release stamps
-- reviewed_at with the clock after taking a share lock on the digest's
-- admin_notification_types row, which each digest holds for update while it
-- reads: a release is either seen by the digest running now or stamped
-- after its cursor, never missed.
--
-- The admins are told once per window, as before: the message that takes
-- the ceiling's last slot records the hit (contact_ceiling_hits) and writes
-- the one admin_alerts notice of the window, which now says that further
-- messages are held for review until the window ends and how many already
-- wait; the hourly digest counts them. No notice type or kind is added.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- contact_messages: the review columns
-- -----------------------------------------------------------------------------
alter table public.contact_messages
  add column if not exists review_status text not null default 'received';
alter table public.contact_messages
  add column if not exists reviewed_at timestamptz;
alter table public.contact_messages
  add column if not exists reviewed_by uuid;
alter table public.contact_messages
  add column if not exists received_at timestamptz generated always as (
    case review_status
      when 'received' then created_at
      when 'released' then reviewed_at
    end
  ) stored;

comment on column public.contact_messages.review_status is
  'received (accepted within the ceiling), held (arrived past client_limits contact:ceiling; waits for an admin), released (held, then let through by review_contact_messages) or discarded (held, then thrown away as spam). Only review_contact_messages() and the service connection write it';
comment on column public.contact_messages.reviewed_at is
  'When an admin released or discarded the held message; null while received or held';
comment on column public.contact_messages.reviewed_by is
  'The admin who released or discarded it (null on the service connection, or once that account is deleted)';
comment on column public.contact_messages.received_at is
  'When the message entered the admins'' inbox (generated): created_at when received, reviewed_at when released, null while held or when discarded. The contact digest covers rows after its last_sent_at by this column';

alter table public.contact_messages
  drop constraint if exists contact_messages_review_status_known;
alter table public.contact_messages
  add constraint contact_messages_review_status_known check (
    review_status in ('received', 'held', 'released', 'discarded')
  );
comment on constraint contact_messages_review_status_known on public.contact_messages is
  'A message is received, held, released or discarded';

alter table public.contact_messages
  drop constraint if exists contact_messages_reviewed_when_decided;
alter table public.contact_messages
  add constraint contact_messages_reviewed_when_decided check (
    (reviewed_at is not null) = (review_status in ('released', 'discarded'))
    and (reviewed_by is null or reviewed_at is not null)
  );
comment on constraint contact_messages_reviewed_when_decided on public.contact_messages is
  'A released or discarded message has reviewed_at, a received or held one has neither reviewed_at nor reviewed_by';

alter table public.contact_messages
  drop constraint if exists contact_messages_reviewed_by_fkey;
alter table public.contact_messages
  add constraint contact_messages_reviewed_by_fkey
  foreign key (reviewed_by) references auth.users (id) on delete set null;
comment on constraint contact_messages_reviewed_by_fkey on public.contact_messages is
  'The reviewing admin is a user; deleting the account keeps the decision';

create index if not exists contact_messages_received_at_idx
  on public.contact_messages (received_at) where received_at is not null;
comment on index public.contact_messages_received_at_idx is
  'The contact digest: messages that entered the inbox after last_sent_at';

create index if not exists contact_messages_held_idx
  on public.contact_messages (created_at) where review_status = 'held';
comment on index public.contact_messages_held_idx is
  'The held queue: messages waiting for review, oldest first (the admins'' review page, the digest''s count)';

comment on table public.contact_messages is
  'Messages sent through the contact form; anyone may insert (length and rate limited; past the global ceiling a message is held for review), admins read and review them (review_contact_messages); the contact digest tells admins about received and released ones and counts the held';

-- -----------------------------------------------------------------------------
-- contact_messages_rate_limit(): per sender, per network; past the ceiling, held
-- -----------------------------------------------------------------------------
create or replace function public.contact_messages_rate_limit()
returns trigger
language plpgsql
-- Definer rights: take_client_limit(), notify_admins_in_app() and the hits
-- table are the service's, and the writer is anon or authenticated.
security definer
set search_path = ''
as $$
declare
  v_address text;
  v_take record;
  v_window_ends_at timestamptz;
  v_waiting integer;
begin
  -- The service connection is not limited and writes the review columns as
  -- it likes; a row without an address is refused by its not-null
  -- constraint after this trigger.
  if not public.is_client_request() or new.email is null then
    return new;
  end if;
  -- A client's message is never born reviewed (its column grants keep it
  -- from writing these anyway).
  new.review_status := 'received';
  new.reviewed_at := null;
  new.reviewed_by := null;

  -- Per sender: a signed-in sender is counted by account, a visitor by the
  -- address typed.
  select * into v_take from public.take_client_limit(
    'contact:sender', 'contact:' || coalesce(auth.uid()::text, lower(btrim(new.email)))
  );
  if not v_take.allowed then
    raise exception 'Cannot send the message: too many messages; try again in % seconds',
      v_take.retry_after_seconds using errcode = 'PT429';
  end if;

  -- Per client network, when the request says where it comes from.
  v_address := public.request_client_address();
  if v_address is not null then
    select * into v_take from public.take_client_limit(
      'contact:client', 'contact:client:' || public.client_network(v_address)
    );
    if not v_take.allowed then
      raise exception 'Cannot send the message: too many messages from your network; try again in % seconds',
        v_take.retry_after_seconds using errcode = 'PT429';
    end if;
  end if;

  -- All messages together. Past the ceiling the message is accepted, held
  -- for an admin's review: the form stays open to every visitor.
  select * into v_take from public.take_client_limit('contact:ceiling', 'contact:ceiling');
  if not v_take.allowed then
    new.review_status := 'held';
    return new;
  end if;
  if v_take.remaining = 0 then
    -- This message takes the last slot: record the hit and tell the admins
    -- once for the window (the held messages that follow write nothing).
    v_window_ends_at := v_take.window_started_at + make_interval(secs => v_take.window_seconds);
    insert into public.contact_ceiling_hits (window_started_at, ceiling, reached_at, window_ends_at)
    values (v_take.window_started_at, v_take.max_hits, now(), v_window_ends_at)
    on conflict (window_started_at) do nothing;
    select count(*)::integer into v_waiting
    from public.contact_messages m where m.review_status = 'held';
    perform public.notify_admins_in_app(
      'admin_alerts',
      case when v_take.window_seconds = 3600
        then 'Contact form: hourly ceiling reached'
        else 'Contact form: ceiling reached'
      end,
      format(
        '%s messages were accepted through the contact form since %s, its ceiling (client_limits contact:ceiling); more are held for admin review until %s UTC (%s already %s review).',
        v_take.max_hits,
        to_char(v_take.window_started_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI "UTC"'),
        to_char(v_window_ends_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI'),
        v_waiting,
        case when v_waiting = 1 then 'awaits' else 'await' end
      ),
      '/admin/messages',
      jsonb_build_object(
        'limit', 'contact:ceiling',
        'ceiling', v_take.max_hits,
        'windowSeconds', v_take.window_seconds,
        'windowStartedAt', to_char(v_take.window_started_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
        'windowEndsAt', to_char(v_window_ends_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
        'held', v_waiting
      ),
      'contact_ceiling:' ||
        to_char(v_take.window_started_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
    );
  end if;
  return new;
end
$$;
comment on function public.contact_messages_rate_limit() is
  'Trigger on contact_messages, client requests only: per sender (client_limits contact:sender, by account or typed address) and per client network when known (contact:client), PT429 beyond either (PostgREST answers 429); then all messages together (contact:ceiling): beyond it the message is accepted with review_status held, for an admin to release or discard (review_contact_messages). The message that reaches the ceiling records it in contact_ceiling_hits and alerts every admin in-app once for the window (admin_alerts: further messages are held, and how many wait)';
revoke execute on function public.contact_messages_rate_limit() from public, anon, authenticated;

comment on trigger contact_messages_rate_limit on public.contact_messages is
  'Limits how often one sender and one client network may write to the contact form; past the global ceiling a message is held for review';

-- -----------------------------------------------------------------------------
-- review_contact_messages(): an admin releases or discards held messages
-- -----------------------------------------------------------------------------
create or replace function public.review_contact_messages(p_messages uuid[], p_action text)
returns setof public.contact_messages
language plpgsql
volatile
-- Definer rights: clients may not write contact_messages' review columns;
-- the caller is checked first (an admin).
security definer
set search_path = ''
as $$
declare
  v_verb text;
  v_status text;
  v_ids uuid[];
  v_row public.contact_messages;
  v_found integer := 0;
  v_now timestamptz;
begin
  perform public.assert_signed_in('review contact messages');
  if not public.is_admin() then
    raise exception 'Cannot review contact messages: only an admin may' using errcode = '42501';
  end if;
  if p_action is null or p_action not in ('release', 'discard') then
    raise exception 'Cannot review contact messages: the action is release or discard, not %',
      coalesce('"' || left(p_action, 40) || '"', 'null') using errcode = '22023';
  end if;
  v_verb := p_action || ' the messages';
  v_status := case p_action when 'release' then 'released' else 'discarded' end;
  select array_agg(distinct m) into v_ids from unnest(p_messages) m;
  if p_messages is null or array_position(p_messages, null) is not null
    or coalesce(cardinality(v_ids), 0) not between 1 and 100
  then
    raise exception 'Cannot %: name 1 to 100 messages by id (no nulls), not %',
      v_verb, coalesce(cardinality(p_messages), 0) using errcode = '22023';
  end if;

  -- A release reaches the digest at its stamp: wait for a digest that is
  -- reading now, so the stamp falls after its cursor (see the header).
  perform 1 from public.admin_notification_types t
  where t.type = 'contact_messages'
  for share;

  -- In id order, so two calls at once queue on the same first row.
  for v_row in
    select * from public.contact_messages m
    where m.id = any (v_ids)
    order by m.id
    for update
  loop
    v_found := v_found + 1;
    if v_row.review_status <> 'held' then
      raise exception 'Cannot %: message "%" %', v_verb, v_row.id,
        case v_row.review_status
          when 'received' then 'was never held'
          else 'was ' || v_row.review_status || ' already'
        end
        using errcode = 'PT409', hint = v_row.review_status;
    end if;
  end loop;
  if v_found < cardinality(v_ids) then
    raise exception 'Cannot %: message "%" does not exist', v_verb, (
      select i from unnest(v_ids) i
      where not exists (select 1 from public.contact_messages m where m.id = i)
      order by i limit 1
    ) using errcode = 'PT404';
  end if;

  v_now := clock_timestamp();
  return query
  update public.contact_messages m
  set review_status = v_status, reviewed_at = v_now, reviewed_by = auth.uid()
  where m.id = any (v_ids)
  returning m.*;
end
$$;
comment on function public.review_contact_messages(uuid[], text) is
  'An admin moves held contact messages p_messages (1 to 100 distinct ids; 22023 otherwise) with p_action release (review_status released: the next contact digest lists them) or discard (discarded: spam, never listed); all or nothing. 42501 for anyone but an admin; PT404 for an unknown id; PT409 with hint received, released or discarded (the message''s status) when one is not held. Answers the moved rows. supabase.rpc("review_contact_messages", { p_messages: [id], p_action: "release" })';
revoke execute on function public.review_contact_messages(uuid[], text) from public, anon;
grant execute on function public.review_contact_messages(uuid[], text) to authenticated;
