-- =============================================================================
-- local/platform.sql — what hosted Supabase already provides, for plain PostgreSQL
--
-- Applied to local and test databases only, before the migrations. It is safe
-- to run again: every statement is guarded. Never deployed: on hosted Supabase
-- these objects exist already (with more to them than this minimal copy).
-- =============================================================================

-- -----------------------------------------------------------------------------
-- Roles: the three roles PostgREST and the edge gateway switch into.
-- -----------------------------------------------------------------------------
do $$
begin
  if not exists (select 1 from pg_roles where rolname = 'anon') then
    create role anon nologin noinherit;
  end if;
  if not exists (select 1 from pg_roles where rolname = 'authenticated') then
    create role authenticated nologin noinherit;
  end if;
  if not exists (select 1 from pg_roles where rolname = 'service_role') then
    create role service_role nologin noinherit bypassrls;
  end if;
end
$$;

-- -----------------------------------------------------------------------------
-- Schemas
-- -----------------------------------------------------------------------------
create schema if not exists extensions;
create schema if not exists auth;
create schema if not exists realtime;
create schema if not exists storage;

grant usage on schema public, extensions to anon, authenticated, service_role;
grant usage on schema auth, realtime to anon, authenticated, service_role;

-- Supabase's default privileges: table access is granted broadly and RLS
-- decides row by row.
alter default privileges in schema public
  grant all on tables to anon, authenticated, service_role;
alter default privileges in schema public
  grant all on sequences to anon, authenticated, service_role;
alter default privileges in schema public
  grant execute on functions to anon, authenticated, service_role;

-- -----------------------------------------------------------------------------
-- auth: users and the JWT helpers that read request.jwt.claims
-- -----------------------------------------------------------------------------
create table if not exists auth.users (
  id uuid primary key default gen_random_uuid(),
  email text unique,
  encrypted_password text,
  email_confirmed_at timestamptz,
  raw_app_meta_data jsonb not null default '{}'::jsonb,
  raw_user_meta_data jsonb not null default '{}'::jsonb,
  role text not null default 'authenticated',
  aud text not null default 'authenticated',
  last_sign_in_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
comment on table auth.users is
  'Local stand-in for Supabase Auth''s users table (only the columns this project reads)';

create or replace function auth.jwt() returns jsonb
language sql stable
as $$
  select coalesce(
    nullif(current_setting('request.jwt.claims', true), ''),
    '{}'
  )::jsonb
$$;
comment on function auth.jwt() is 'The claims of the request''s JWT, as Supabase sets them';

create or replace function auth.uid() returns uuid
language sql stable
as $$
  select nullif(auth.jwt() ->> 'sub', '')::uuid
$$;
comment on function auth.uid() is 'The signed-in user''s id (the JWT''s sub), or null';

create or replace function auth.role() returns text
language sql stable
as $$
  select nullif(auth.jwt() ->> 'role', '')
$$;
comment on function auth.role() is 'The JWT''s role claim (anon, authenticated, service_role)';

grant execute on function auth.jwt(), auth.uid(), auth.role()
  to anon, authenticated, service_role;

-- -----------------------------------------------------------------------------
-- realtime: a minimal messages table and the broadcast helpers, so tests can
-- assert what the database published.
-- -----------------------------------------------------------------------------
create table if not exists realtime.messages (
  id bigint generated always as identity primary key,
  topic text not null,
  extension text not null default 'broadcast',
  event text,
  payload jsonb,
  private boolean not null default true,
  inserted_at timestamptz not null default now()
);
alter table realtime.messages enable row level security;
grant select, insert on realtime.messages to authenticated, service_role;
comment on table realtime.messages is
  'Local stand-in for Supabase Realtime''s broadcast messages';

create or replace function realtime.send(
  payload jsonb, event text, topic text, private boolean default true
) returns void
-- PL/pgSQL, as hosted Supabase's is: its plan is cached, where a SQL function
-- with SET is planned again on every call (every broadcast).
language plpgsql
security definer
set search_path = ''
as $$
begin
  insert into realtime.messages (topic, event, payload, private)
  values (send.topic, send.event, send.payload, send.private);
end
$$;
comment on function realtime.send(jsonb, text, text, boolean) is
  'Publishes a broadcast message to a topic (local stand-in)';

create or replace function realtime.broadcast_changes(
  topic_name text, event_name text, operation text, table_name text,
  table_schema text, new record, old record, level text default 'ROW'
) returns void
language plpgsql
security definer
set search_path = ''
as $$
begin
  perform realtime.send(
    jsonb_build_object(
      'operation', operation,
      'table', table_name,
      'schema', table_schema,
      'record', case when new is null then null else to_jsonb(new) end,
      'old_record', case when old is null then null else to_jsonb(old) end
    ),
    event_name, topic_name, true
  );
end
$$;
comment on function realtime.broadcast_changes(text, text, text, text, text, record, record, text) is
  'Publishes a row change to a private topic (local stand-in)';

create or replace function realtime.topic() returns text
language sql stable
as $$
  select nullif(current_setting('realtime.topic', true), '')
$$;
comment on function realtime.topic() is
  'The topic a Realtime client subscribes to, for policies on realtime.messages (local stand-in)';
grant execute on function realtime.topic() to anon, authenticated, service_role;

-- -----------------------------------------------------------------------------
-- Publication used by Postgres Changes
-- -----------------------------------------------------------------------------
do $$
begin
  if not exists (select 1 from pg_publication where pubname = 'supabase_realtime') then
    create publication supabase_realtime;
  end if;
end
$$;
