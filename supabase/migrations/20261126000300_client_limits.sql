-- =============================================================================
-- Client limits: the contact form and the view counts resist a bot
--
-- Until now the contact form was limited per sender only (5 an hour per
-- account, or per address TYPED by a visitor: a bot types a new one each
-- time), and record_listing_view() counted one view per viewer, listing and
-- hour, where a visitor names itself (a bot rotates its ids). Both are now
-- also limited by the caller's network address, and the contact form by a
-- global ceiling that no rotation gets around:
--
--   client_limits row     default   limits                                key (take_rate_limit)
--   contact:sender        5/3600    messages per account, or per typed    contact:<user id | address>
--                                   address for a visitor
--   contact:client        10/3600   messages per client network           contact:client:<network>
--   contact:ceiling       100/3600  all contact messages together         contact:ceiling
--   listing_view:client   300/3600  record_listing_view() calls per       listing_view:client:<network>
--                                   client network, visitors and
--                                   anonymous sessions only
--
-- Over a limit the statement fails with SQLSTATE PT429 (PostgREST answers
-- HTTP 429; supabase-js error.code "PT429") and a message that says when to
-- try again. Only client requests (anon, authenticated) are limited; the
-- service connection is not.
--
-- The client address is request_client_address(): cf-connecting-ip, else
-- x-real-ip, else the first entry of x-forwarded-for, from the request
-- headers PostgREST passes to SQL; the first that parses as an IP address
-- counts. A client's network is its IPv4 address, or the /64 of its IPv6
-- address (one subscriber's allocation: counting single IPv6 addresses
-- would let a bot rotate through 2^64 of them). Without a usable address
-- (no headers: the service connection, local calls) the per-client limits
-- do not apply. Forwarded headers can be forged by a client that reaches
-- PostgREST through a proxy that passes them on; the global ceiling is what
-- holds then.
--
-- Limits are read at every call from client_limits; an operator changes one
-- with `update public.client_limits set max_hits = ... where name = ...`
-- (takes effect at the next request; a running window keeps its start).
--
-- The ceiling. The accepted message that takes the last slot of the
-- ceiling's window (take_rate_limit answers remaining 0) records the hit in
-- contact_ceiling_hits and writes one in-app admin_alerts notice to every
-- admin (notify_admins_in_app(); an admin who switched admin_alerts in-app
-- off gets none), in its own transaction. It must be that message: there
-- are no autonomous transactions, so anything a refused insert wrote is
-- rolled back with it. The hourly contact digest mentions a hit that
-- happened since the previous digest (send-admin-contact-notification).
-- =============================================================================

-- -----------------------------------------------------------------------------
-- request_client_address(): the caller's network address
-- -----------------------------------------------------------------------------
create or replace function public.request_client_address()
returns text
-- PL/pgSQL: the casts of client input are caught (an exception block).
language plpgsql
stable
-- Invoker rights: it reads the caller's own request headers.
set search_path = ''
as $$
declare
  v_setting text := nullif(current_setting('request.headers', true), '');
  v_headers jsonb;
  v_candidate text;
  v_address inet;
begin
  if v_setting is null then
    return null;
  end if;
  begin
    v_headers := v_setting::jsonb;
  exception when invalid_text_representation then
    return null;
  end;
  if jsonb_typeof(v_headers) <> 'object' then
    return null;
  end if;
  -- In order of trust; a header that does not hold an address is skipped.
  foreach v_candidate in array array[
    v_headers ->> 'cf-connecting-ip',
    v_headers ->> 'x-real-ip',
    split_part(v_headers ->> 'x-forwarded-for', ',', 1)
  ] loop
    v_candidate := btrim(v_candidate, E' \t');
    continue when v_candidate is null or v_candidate = '' or v_candidate like '%/%';
    begin
      v_address := v_candidate::inet;
    exception when invalid_text_representation then
      continue;
    end;
    -- An IPv4 address mapped into IPv6 (::ffff:a.b.c.d) is that IPv4
    -- address: its /64 would lump every IPv4 client together.
    if family(v_address) = 6 and v_address << '::ffff:0:0/96'::inet then
      v_address := '0.0.0.0'::inet + (v_address - '::ffff:0:0'::inet);
    end if;
    -- host(): the canonical text (lower-case, shortest IPv6 form).
    return host(v_address);
  end loop;
  return null;
end
$$;
comment on function public.request_client_address() is
  'The caller''s network address from the request headers PostgREST sets (request.headers): cf-connecting-ip (set by Cloudflare, which fronts hosted Supabase and overwrites what a client sends), else x-real-ip, else the first entry of x-forwarded-for; trimmed; the first that parses as a single IP address counts, in canonical form (an IPv4-mapped IPv6 address as IPv4); null without headers (the service connection, local calls) or without a usable address. Forwarded headers can be forged by a client that talks to PostgREST through a proxy that passes them on, which is why the per-client limits are backed by a global ceiling';
-- Callable by everyone: it tells the caller only its own address.
revoke execute on function public.request_client_address() from public;
grant execute on function public.request_client_address() to anon, authenticated, service_role;

-- -----------------------------------------------------------------------------
-- client_network(): what a per-client limit counts
-- -----------------------------------------------------------------------------
create or replace function public.client_network(p_address text)
returns text
language plpgsql
immutable
-- Invoker rights: a pure function of its argument.
set search_path = ''
as $$
declare
  v_address inet := p_address::inet;
begin
  if family(v_address) = 6 then
    return network(set_masklen(v_address, 64))::text;
  end if;
  return host(v_address);
end
$$;
comment on function public.client_network(text) is
  'The unit a per-client limit counts for address p_address (as request_client_address() answers it): an IPv4 address itself, the /64 network of an IPv6 address (e.g. 2001:db8:1:2::/64), the allocation of one subscriber';
revoke execute on function public.client_network(text) from public, anon, authenticated;
grant execute on function public.client_network(text) to service_role;

-- -----------------------------------------------------------------------------
-- client_limits: the limits, one row each
-- -----------------------------------------------------------------------------
create table if not exists public.client_limits (
  name text primary key,
  max_hits integer not null,
  window_seconds integer not null,
  description text not null,
  updated_at timestamptz not null default now(),
  constraint client_limits_name_format check (name ~ '^[a-z_]+:[a-z_]+$'),
  constraint client_limits_max_hits_positive check (max_hits >= 1),
  constraint client_limits_window_seconds_range check (window_seconds between 1 and 604800)
);

comment on table public.client_limits is
  'Rate limits of client requests (contact form, listing views): at most max_hits per window_seconds, read at every request. Admins read it; only the service connection writes. An operator changes a limit with: update public.client_limits set max_hits = 20 where name = ''contact:client''';
comment on column public.client_limits.name is
  'The limit: contact:sender, contact:client, contact:ceiling or listing_view:client';
comment on column public.client_limits.max_hits is 'Requests allowed per window (at least 1)';
comment on column public.client_limits.window_seconds is
  'Length of the fixed window in seconds (1 to 604800); it starts with the first request counted';
comment on column public.client_limits.description is 'What the limit counts, and by which key';
comment on column public.client_limits.updated_at is 'When the limit last changed (trigger)';
comment on constraint client_limits_name_format on public.client_limits is
  'A name is <feature>:<scope> in lower-case letters and _';
comment on constraint client_limits_max_hits_positive on public.client_limits is
  'A limit allows at least one request';
comment on constraint client_limits_window_seconds_range on public.client_limits is
  'A window lasts 1 second to 7 days';
comment on constraint client_limits_pkey on public.client_limits is 'One row per limit';
comment on index public.client_limits_pkey is 'One row per limit';

drop trigger if exists client_limits_set_updated_at on public.client_limits;
create trigger client_limits_set_updated_at
  before update on public.client_limits
  for each row execute function public.set_updated_at();
comment on trigger client_limits_set_updated_at on public.client_limits is
  'Moves updated_at on every change';

alter table public.client_limits enable row level security;

drop policy if exists "Admins can read client limits" on public.client_limits;
create policy "Admins can read client limits" on public.client_limits
  for select to authenticated
  using ((select public.is_admin()));
comment on policy "Admins can read client limits" on public.client_limits is
  'Admins see the limits in force; changing one is the service connection''s (an operator)';

revoke all on table public.client_limits from public, anon, authenticated;
grant select on table public.client_limits to authenticated;
grant all on table public.client_limits to service_role;

insert into public.client_limits (name, max_hits, window_seconds, description) values
  ('contact:sender', 5, 3600,
   'Contact messages per signed-in account, or per typed address for a visitor (key contact:<user id | address>)'),
  ('contact:client', 10, 3600,
   'Contact messages per client network (key contact:client:<network>)'),
  ('contact:ceiling', 100, 3600,
   'All contact messages from clients together (key contact:ceiling); reaching it alerts the admins'),
  ('listing_view:client', 300, 3600,
   'record_listing_view() calls per client network by visitors and anonymous sessions (key listing_view:client:<network>)')
on conflict (name) do nothing;

-- -----------------------------------------------------------------------------
-- take_client_limit(): count a request against a client_limits row
-- -----------------------------------------------------------------------------
create or replace function public.take_client_limit(p_name text, p_key text)
returns table (
  allowed boolean,
  remaining integer,
  retry_after_seconds integer,
  max_hits integer,
  window_seconds integer,
  window_started_at timestamptz
)
language plpgsql
volatile
-- Invoker rights: only service_role and the owner (the security definer
-- triggers and functions below) may call it; both may write rate_limits.
set search_path = ''
as $$
declare
  v_limit public.client_limits%rowtype;
begin
  select * into v_limit from public.client_limits l where l.name = p_name;
  if not found then
    raise exception 'Cannot take client limit "%": public.client_limits has no row for it (apply the migrations)',
      p_name using errcode = '55000';
  end if;
  select r.allowed, r.remaining, r.retry_after_seconds
  into allowed, remaining, retry_after_seconds
  from public.take_rate_limit(p_key, v_limit.max_hits, v_limit.window_seconds) r;
  max_hits := v_limit.max_hits;
  window_seconds := v_limit.window_seconds;
  -- The row take_rate_limit() just wrote (and this transaction holds locked).
  select r.window_started_at into window_started_at
  from public.rate_limits r where r.key = p_key;
  return next;
end
$$;
comment on function public.take_client_limit(text, text) is
  'Counts a request against key p_key under the client_limits row p_name (take_rate_limit with its max_hits and window_seconds) and answers allowed, remaining, retry_after_seconds, the limit and the window''s start; 55000 when the row is missing. Service role only';
revoke execute on function public.take_client_limit(text, text) from public, anon, authenticated;
grant execute on function public.take_client_limit(text, text) to service_role;

-- -----------------------------------------------------------------------------
-- notify_admins_in_app(): one in-app notice to every admin
-- -----------------------------------------------------------------------------
create or replace function public.notify_admins_in_app(
  p_type text,
  p_title text,
  p_body text,
  p_link text,
  p_data jsonb,
  p_key text
)
returns integer
language plpgsql
volatile
-- Invoker rights: only service_role and the owner may call it; both may
-- write notifications.
set search_path = ''
as $$
declare
  v_written integer;
begin
  if p_key is null then
    raise exception 'Cannot notify the admins: a dedupe key is required' using errcode = '22023';
  end if;
  -- No preference row: the type's default, which is on for every type but
  -- the opt-in new-listings digest (shared/notifications.ts).
  insert into public.notifications (user_id, type, title, body, link, data, dedupe_key)
  select r.user_id, p_type, p_title, p_body, p_link, coalesce(p_data, '{}'::jsonb), p_key
  from public.user_roles r
  left join public.notification_preferences p
    on p.user_id = r.user_id and p.type = p_type
  where r.role = 'admin'
    and coalesce(p.in_app, p_type <> 'new_listings')
  on conflict (user_id, dedupe_key) do nothing;
  get diagnostics v_written = row_count;
  return v_written;
end
$$;
comment on function public.notify_admins_in_app(text, text, text, text, jsonb, text) is
  'Writes one in-app notice of type p_type to every admin whose in-app preference for it is on (no preference row: the type''s default), idempotent per (admin, p_key): a second call with the same key writes nothing. Answers how many notices it wrote. No e-mail. Service role only';
revoke execute on function public.notify_admins_in_app(text, text, text, text, jsonb, text)
  from public, anon, authenticated;
grant execute on function public.notify_admins_in_app(text, text, text, text, jsonb, text)
  to service_role;

-- -----------------------------------------------------------------------------
-- contact_ceiling_hits: when the contact form reached its ceiling
-- -----------------------------------------------------------------------------
create table if not exists public.contact_ceiling_hits (
  window_started_at timestamptz primary key,
  ceiling integer not null,
  reached_at timestamptz not null default now(),
  window_ends_at timestamptz not null,
  constraint contact_ceiling_hits_ceiling_positive check (ceiling >= 1),
  constraint contact_ceiling_hits_window_order check (window_started_at < window_ends_at)
);

comment on table public.contact_ceiling_hits is
  'One row per window in which the contact form reached its ceiling (client_limits contact:ceiling), written by the message that reached it; the contact digest mentions the hits since the previous digest. Admins read it';
comment on column public.contact_ceiling_hits.window_started_at is 'Start of the ceiling''s window';
comment on column public.contact_ceiling_hits.ceiling is 'The ceiling then in force (messages per window)';
comment on column public.contact_ceiling_hits.reached_at is
  'When the last accepted message was sent (its created_at)';
comment on column public.contact_ceiling_hits.window_ends_at is
  'End of the window: messages were refused until then';
comment on constraint contact_ceiling_hits_ceiling_positive on public.contact_ceiling_hits is
  'A ceiling is at least 1';
comment on constraint contact_ceiling_hits_window_order on public.contact_ceiling_hits is
  'A window ends after it starts';
comment on constraint contact_ceiling_hits_pkey on public.contact_ceiling_hits is
  'One hit per window';
comment on index public.contact_ceiling_hits_pkey is 'One hit per window';

create index if not exists contact_ceiling_hits_reached_at_idx
  on public.contact_ceiling_hits (reached_at);
comment on index public.contact_ceiling_hits_reached_at_idx is
  'The contact digest: hits since the previous digest';

alter table public.contact_ceiling_hits enable row level security;

drop policy if exists "Admins can read contact ceiling hits" on public.contact_ceiling_hits;
create policy "Admins can read contact ceiling hits" on public.contact_ceiling_hits
  for select to authenticated
  using ((select public.is_admin()));
comment on policy "Admins can read contact ceiling hits" on public.contact_ceiling_hits is
  'Admins see when the contact form was full; rows are written by contact_messages_rate_limit()';

revoke all on table public.contact_ceiling_hits from public, anon, authenticated;
grant select on table public.contact_ceiling_hits to authenticated;
grant all on table public.contact_ceiling_hits to service_role;

-- -----------------------------------------------------------------------------
-- contact_messages_rate_limit(): per sender, per client network, and a ceiling
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
begin
  -- The service connection is not limited; a row without an address is
  -- refused by its not-null constraint after this trigger.
  if not public.is_client_request() or new.email is null then
    return new;
  end if;

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

  -- All messages together. Refused messages roll back their count, so the
  -- window holds exactly the accepted ones.
  select * into v_take from public.take_client_limit('contact:ceiling', 'contact:ceiling');
  if not v_take.allowed then
    raise exception 'Cannot send the message: the contact form takes no more messages for now; try again in % seconds',
      v_take.retry_after_seconds using errcode = 'PT429';
  end if;
  if v_take.remaining = 0 then
    -- This message takes the last slot: record the hit and tell the admins
    -- now, in this transaction (a refused message could not: its writes are
    -- rolled back with it).
    v_window_ends_at := v_take.window_started_at + make_interval(secs => v_take.window_seconds);
    insert into public.contact_ceiling_hits (window_started_at, ceiling, reached_at, window_ends_at)
    values (v_take.window_started_at, v_take.max_hits, now(), v_window_ends_at)
    on conflict (window_started_at) do nothing;
    perform public.notify_admins_in_app(
      'admin_alerts',
      case when v_take.window_seconds = 3600
        then 'Contact form: hourly ceiling reached'
        else 'Contact form: ceiling reached'
      end,
      format(
        '%s messages were accepted through the contact form since %s, its ceiling (client_limits contact:ceiling); more are refused until %s.',
        v_take.max_hits,
        to_char(v_take.window_started_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI "UTC"'),
        to_char(v_window_ends_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI "UTC"')
      ),
      '/admin/messages',
      jsonb_build_object(
        'limit', 'contact:ceiling',
        'ceiling', v_take.max_hits,
        'windowSeconds', v_take.window_seconds,
        'windowStartedAt', to_char(v_take.window_started_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
        'windowEndsAt', to_char(v_window_ends_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
      ),
      'contact_ceiling:' ||
        to_char(v_take.window_started_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
    );
  end if;
  return new;
end
$$;
comment on function public.contact_messages_rate_limit() is
  'Trigger on contact_messages, client requests only: per sender (client_limits contact:sender, by account or typed address), per client network when known (contact:client), then all messages together (contact:ceiling); PT429 beyond any (PostgREST answers 429). The message that reaches the ceiling records it in contact_ceiling_hits and alerts every admin in-app (admin_alerts)';
revoke execute on function public.contact_messages_rate_limit() from public, anon, authenticated;

comment on trigger contact_messages_rate_limit on public.contact_messages is
  'Limits how often one sender and one client network may write to the contact form, and how many messages it takes in all';

-- -----------------------------------------------------------------------------
-- record_listing_view(): visitors limited per client network
-- -----------------------------------------------------------------------------
create or replace function public.record_listing_view(p_listing uuid, p_viewer text default null)
returns boolean
language plpgsql
-- Definer rights: viewers may neither insert into listing_views nor read an
-- unpublished listing, nor count against a client limit themselves. The
-- viewer key is built here from auth.uid() (never from the client when
-- signed in), and the answer tells nothing more than the public listing
-- page does.
security definer
set search_path = ''
as $$
declare
  v_uid uuid := auth.uid();
  v_key text;
  v_seller uuid;
  v_address text;
  v_take record;
begin
  if p_viewer is not null and p_viewer !~ '^[A-Za-z0-9_-]{8,64}$' then
    raise exception 'Cannot record view: anonymous id "%" is not 8 to 64 letters, digits, "_" or "-"',
      left(p_viewer, 80) using errcode = '22023';
  end if;
  if v_uid is not null then
    v_key := 'u:' || v_uid::text;
  elsif p_viewer is null then
    raise exception 'Cannot record view: an anonymous viewer must send its anonymous id as p_viewer'
      using errcode = '22023';
  else
    v_key := 'a:' || p_viewer;
  end if;

  -- A visitor, or an anonymous session (a uid without an account), is
  -- limited per client network: its ids cost a bot nothing. Signed-in users
  -- are deduped by account already.
  if public.is_client_request()
    and (v_uid is null or coalesce(auth.jwt() -> 'is_anonymous' = 'true'::jsonb, false))
  then
    v_address := public.request_client_address();
    if v_address is not null then
      select * into v_take from public.take_client_limit(
        'listing_view:client', 'listing_view:client:' || public.client_network(v_address)
      );
      if not v_take.allowed then
        raise exception 'Cannot record view: too many views from your network; try again in % seconds',
          v_take.retry_after_seconds using errcode = 'PT429';
      end if;
    end if;
  end if;

  select l.seller_id into v_seller
  from public.listings l
  where l.id = p_listing and l.review_status = 'approved';
  if not found or v_seller = v_uid then
    return false;
  end if;

  insert into public.listing_views (listing_id, viewer_key, viewed_hour)
  values (p_listing, v_key, date_trunc('hour', now(), 'UTC'))
  on conflict on constraint listing_views_one_per_viewer_hour do nothing;
  return found;
end
$$;
comment on function public.record_listing_view(uuid, text) is
  'Records a view of an approved listing by the caller (signed-in user, else the anonymous id p_viewer; 22023 when p_viewer is missing for anon or malformed) and answers whether it counted: false for a repeat within the UTC hour, the seller''s own view, or a listing that is unknown or not approved. Visitors and anonymous sessions are limited per client network (client_limits listing_view:client, every call counts): PT429 beyond (PostgREST answers 429). supabase.rpc("record_listing_view", { p_listing, p_viewer })';
revoke execute on function public.record_listing_view(uuid, text) from public, anon, authenticated;
grant execute on function public.record_listing_view(uuid, text) to anon, authenticated, service_role;
