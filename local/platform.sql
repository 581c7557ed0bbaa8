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

-- -----------------------------------------------------------------------------
-- storage: the buckets and objects tables of Supabase Storage and its path
-- helpers, as hosted Supabase defines them (a minimal copy: the columns, the
-- unique keys and the grants; no search functions, no prefixes). The local
-- Storage API (local/storage/) writes rows here; migrations create buckets
-- and add policies. RLS is on with no policy, as hosted: only service_role
-- (bypassrls) and the superuser see anything until a migration adds policies.
-- -----------------------------------------------------------------------------
create table if not exists storage.buckets (
  id text primary key,
  name text not null,
  owner uuid,
  owner_id text,
  public boolean not null default false,
  file_size_limit bigint,
  allowed_mime_types text[],
  created_at timestamptz default now(),
  updated_at timestamptz default now()
);
create unique index if not exists bname on storage.buckets (name);
alter table storage.buckets enable row level security;
comment on table storage.buckets is
  'Local stand-in for Supabase Storage''s buckets (one row per bucket; created by migrations)';
comment on column storage.buckets.id is 'The bucket''s id, used in URLs and storage.objects.bucket_id';
comment on column storage.buckets.name is 'The bucket''s name (unique; equal to id when made by the API)';
comment on column storage.buckets.owner is 'Deprecated by Supabase: the creating user''s id as uuid';
comment on column storage.buckets.owner_id is 'The id of the user who created the bucket, if any';
comment on column storage.buckets.public is
  'Whether anyone may read its objects without a token (false: RLS on storage.objects decides)';
comment on column storage.buckets.file_size_limit is
  'Largest object accepted, in bytes (null: the server''s global limit)';
comment on column storage.buckets.allowed_mime_types is
  'Content types accepted, e.g. image/png or image/* (null or empty: any)';
comment on column storage.buckets.created_at is 'When the bucket was created';
comment on column storage.buckets.updated_at is 'When the bucket was last changed';
comment on index storage.bname is 'Bucket names are unique';

create table if not exists storage.objects (
  id uuid primary key default gen_random_uuid(),
  bucket_id text references storage.buckets (id),
  name text,
  owner uuid,
  owner_id text,
  created_at timestamptz default now(),
  updated_at timestamptz default now(),
  last_accessed_at timestamptz default now(),
  metadata jsonb,
  user_metadata jsonb,
  version text,
  path_tokens text[] generated always as (string_to_array(name, '/')) stored
);
create unique index if not exists bucketid_objname on storage.objects (bucket_id, name);
alter table storage.objects enable row level security;
comment on table storage.objects is
  'Local stand-in for Supabase Storage''s objects: one row per stored file; the bytes are on disk (local/storage/)';
comment on column storage.objects.id is 'The object''s id (the Id of an upload''s answer)';
comment on column storage.objects.bucket_id is 'The bucket holding the object';
comment on column storage.objects.name is 'The object''s path inside its bucket, e.g. folder/file.pdf';
comment on column storage.objects.owner is 'Deprecated by Supabase: the uploader''s id as uuid';
comment on column storage.objects.owner_id is 'The id of the user who uploaded the object (null: the service role)';
comment on column storage.objects.created_at is 'When the object was first uploaded';
comment on column storage.objects.updated_at is 'When the object was last replaced';
comment on column storage.objects.last_accessed_at is 'Kept for compatibility; not maintained locally';
comment on column storage.objects.metadata is
  'What Storage recorded: eTag, size, mimetype, cacheControl, lastModified, contentLength, httpStatusCode';
comment on column storage.objects.user_metadata is 'Metadata the uploader attached (x-metadata / metadata field)';
comment on column storage.objects.version is 'A new id on every upload of the name';
comment on column storage.objects.path_tokens is 'The name split on "/" (generated)';
comment on index storage.bucketid_objname is 'One object per name in a bucket';

create or replace function storage.foldername(name text) returns text[]
language plpgsql
immutable
as $$
declare
  _parts text[];
begin
  select string_to_array(name, '/') into _parts;
  return _parts[1 : array_length(_parts, 1) - 1];
end
$$;
comment on function storage.foldername(text) is
  'The folders of an object name: foldername(''a/b/c.pdf'') = {a,b} (as hosted Supabase)';

create or replace function storage.filename(name text) returns text
language plpgsql
immutable
as $$
declare
  _parts text[];
begin
  select string_to_array(name, '/') into _parts;
  return _parts[array_length(_parts, 1)];
end
$$;
comment on function storage.filename(text) is
  'The last segment of an object name: filename(''a/b/c.pdf'') = c.pdf (as hosted Supabase)';

create or replace function storage.extension(name text) returns text
language plpgsql
immutable
as $$
declare
  _parts text[];
  _filename text;
begin
  select string_to_array(name, '/') into _parts;
  select _parts[array_length(_parts, 1)] into _filename;
  return reverse(split_part(reverse(_filename), '.', 1));
end
$$;
comment on function storage.extension(text) is
  'The text after the last dot of an object''s file name: extension(''a/b/c.pdf'') = pdf (as hosted Supabase)';

grant usage on schema storage to anon, authenticated, service_role;
grant all on table storage.buckets, storage.objects to anon, authenticated, service_role;
grant execute on function storage.foldername(text), storage.filename(text), storage.extension(text)
  to anon, authenticated, service_role;
