-- =============================================================================
-- local/db/platform.sql — what hosted Supabase already provides, for plain PostgreSQL
--
-- Applied to local and test databases only, before the migrations, by the
-- local superuser `supabase_admin` (as hosted). It is safe to run again: every
-- statement is guarded. Never deployed: on hosted Supabase these objects exist
-- already (with more to them than this minimal copy).
--
-- Ownership is modelled on hosted Supabase, so that a migration statement that
-- would fail there fails here too. The migration runner (local/db/migrate.ts)
-- logs in as `postgres` to apply the migrations, as `supabase db push` does.
--   * `postgres` is no superuser: NOSUPERUSER CREATEDB CREATEROLE LOGIN
--     REPLICATION BYPASSRLS (supabase/postgres,
--     migrations/db/migrations/10000000000000_demote-postgres.sql); a member of
--     anon, authenticated and service_role with ADMIN OPTION
--     (20230201083204_grant_auth_roles_to_postgres.sql,
--     20250605172253_grant_with_admin_to_postgres_16_and_above.sql), of
--     pg_monitor, pg_read_all_data and pg_signal_backend
--     (20230306081037_grant_pg_monitor_to_postgres.sql,
--     20240606060239_grant_predefined_roles_to_postgres.sql), and of none of
--     the platform's owner roles (20250421084701_revoke_admin_roles_from_postgres.sql).
--     It owns the database (migrations/db/migrate.sh: alter database postgres
--     owner to postgres), so `public` and what the migrations create are its.
--   * The schemas auth, storage and realtime belong to supabase_admin
--     (init-scripts/00000000000001-auth-schema.sql and
--     00000000000002-storage-schema.sql: create schema … authorization
--     supabase_admin; 20211118015519_create-realtime-schema.sql); `postgres`
--     has USAGE there, not CREATE (20211115181400_update-auth-permissions.sql,
--     20250709135250_grant_storage_schema_to_postgres_with_grant_option.sql,
--     20260506172403_grant_realtime_schema_to_postgres_with_grant_option.sql,
--     20250421084701_revoke_admin_roles_from_postgres.sql).
--   * Their tables belong to the services' roles: auth.* to
--     supabase_auth_admin, storage.* to supabase_storage_admin (the same init
--     scripts), realtime.messages to supabase_realtime_admin (the Realtime
--     service creates it; pg_dump of hosted projects: "Owner:
--     supabase_realtime_admin"). `postgres` has ALL (TRIGGER and REFERENCES
--     included) on auth.users (20211115181400_update-auth-permissions.sql),
--     storage.buckets and storage.objects (with grant option:
--     20250623125453_tmp_grant_storage_tables_to_postgres_with_grant_option.sql)
--     and realtime.messages (pg_dump of hosted projects; the schema-wide grant
--     of 20211122051245_update-realtime-permissions.sql predates the table).
--   * supautils (supabase/supautils, src/supautils.c and src/policy_grants.c;
--     configured in supabase/postgres,
--     ansible/files/postgresql_config/supautils.conf.j2) lets `postgres`
--     CREATE, ALTER and DROP POLICY on the tables its `policy_grants` lists by
--     running those statements as the superuser. COMMENT ON POLICY is covered
--     only from supautils 3.3.0 (commit "permit COMMENT ON POLICY in
--     supautils.policy_grants", July 2026); older projects answer "must be
--     owner of relation …". Here the runner sends exactly those policy
--     statements to supautils_local.run_granted_statement() (below); every
--     other statement runs as `postgres` and meets PostgreSQL's own checks.
--     supautils' drop_trigger_grants is not modelled: hosted's configuration
--     in supabase/postgres does not set it, so DROP TRIGGER on an existing
--     trigger of auth.users counts as owner-only here.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- Who runs this: the superuser, which is not `postgres`.
-- -----------------------------------------------------------------------------
do $$
begin
  if current_user = 'postgres' or not (select rolsuper from pg_roles where rolname = current_user) then
    raise exception 'local/db/platform.sql must run as the local superuser "supabase_admin", not as "%"', current_user
      using hint = 'On hosted Supabase "postgres" is not a superuser, and locally neither: a database '
        'whose superuser is "postgres" was made before the local stack modelled that; '
        'rebuild the local one with `deno task db:reset --yes`.';
  end if;
end
$$;

-- -----------------------------------------------------------------------------
-- Roles. Roles are shared by every database of the server: each change is
-- made only when needed, so concurrent runs on other databases do not collide.
-- -----------------------------------------------------------------------------
do $$
declare
  r text;
begin
  -- The superuser that owns the platform's schemas (the bootstrap superuser of
  -- a local cluster; created only when this runs as another superuser).
  if not exists (select 1 from pg_roles where rolname = 'supabase_admin') then
    create role supabase_admin superuser nologin;
  end if;
  -- The three roles PostgREST and the edge gateway switch into.
  if not exists (select 1 from pg_roles where rolname = 'anon') then
    create role anon nologin noinherit;
  end if;
  if not exists (select 1 from pg_roles where rolname = 'authenticated') then
    create role authenticated nologin noinherit;
  end if;
  if not exists (select 1 from pg_roles where rolname = 'service_role') then
    create role service_role nologin noinherit bypassrls;
  end if;
  -- The services' roles, owners of their tables. On hosted the services log
  -- in as them; locally nothing does.
  foreach r in array array['supabase_auth_admin', 'supabase_storage_admin', 'supabase_realtime_admin'] loop
    if not exists (select 1 from pg_roles where rolname = r) then
      execute format('create role %I nologin noinherit', r);
    end if;
  end loop;
  -- `postgres`: what `supabase db push` and the functions' SUPABASE_DB_URL log in as.
  if not exists (select 1 from pg_roles where rolname = 'postgres') then
    create role postgres login password 'postgres'
      nosuperuser createdb createrole replication bypassrls;
  elsif exists (
    select 1 from pg_roles where rolname = 'postgres'
      and (rolsuper or not rolcanlogin or not rolcreatedb or not rolcreaterole
        or not rolreplication or not rolbypassrls)
  ) then
    alter role postgres nosuperuser login createdb createrole replication bypassrls;
  end if;
  foreach r in array array['anon', 'authenticated', 'service_role'] loop
    if not exists (
      select 1 from pg_auth_members m
      where m.roleid = r::regrole and m.member = 'postgres'::regrole and m.admin_option
    ) then
      execute format('grant %I to postgres with admin option', r);
    end if;
  end loop;
  foreach r in array array['pg_monitor', 'pg_read_all_data', 'pg_signal_backend'] loop
    if not exists (
      select 1 from pg_auth_members m where m.roleid = r::regrole and m.member = 'postgres'::regrole
    ) then
      execute format('grant %I to postgres', r);
    end if;
  end loop;
end
$$;

-- -----------------------------------------------------------------------------
-- The database is `postgres`'s (as hosted's database postgres): `public`
-- (owned by pg_database_owner) and what the migrations create are its.
-- -----------------------------------------------------------------------------
do $$
begin
  if (select datdba from pg_database where datname = current_database()) <> 'postgres'::regrole then
    execute format('alter database %I owner to postgres', current_database());
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
alter schema extensions owner to postgres;
alter schema auth owner to supabase_admin;
alter schema storage owner to supabase_admin;
alter schema realtime owner to supabase_admin;

grant usage on schema public, extensions to anon, authenticated, service_role;
grant usage on schema auth, realtime to anon, authenticated, service_role;
grant all on schema auth to supabase_auth_admin;
grant all on schema storage to supabase_storage_admin;
grant all on schema realtime to supabase_realtime_admin;
grant usage on schema auth to postgres;
grant usage on schema storage, realtime to postgres with grant option;
revoke create on schema auth, storage, realtime from postgres;

-- Supabase's default privileges: table access is granted broadly and RLS
-- decides row by row. They are the creator's: `postgres` creates what the
-- migrations make (supabase_admin what this file makes).
alter default privileges for role postgres, supabase_admin in schema public
  grant all on tables to anon, authenticated, service_role;
alter default privileges for role postgres, supabase_admin in schema public
  grant all on sequences to anon, authenticated, service_role;
alter default privileges for role postgres, supabase_admin in schema public
  grant execute on functions to anon, authenticated, service_role;

-- The Supabase CLI's tracking schema is `postgres`'s on hosted (db push makes
-- it); one a superuser made before is handed over.
do $$
begin
  if exists (select 1 from pg_namespace where nspname = 'supabase_migrations') then
    alter schema supabase_migrations owner to postgres;
    if to_regclass('supabase_migrations.schema_migrations') is not null then
      alter table supabase_migrations.schema_migrations owner to postgres;
    end if;
  end if;
end
$$;

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
  is_anonymous boolean not null default false,
  last_sign_in_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
comment on table auth.users is
  'Local stand-in for Supabase Auth''s users table (only the columns this project reads)';
-- Added after the stand-in was first made: a local database created before
-- gets it here (create table if not exists leaves an existing table as is).
alter table auth.users add column if not exists is_anonymous boolean not null default false;
comment on column auth.users.is_anonymous is
  'An anonymous sign-in: a session without an account (hosted Auth sets it; the new-user welcome skips these)';

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

-- Supabase Auth's: `postgres` may read and write the rows, reference them and
-- add triggers (ALL), but not alter, comment on or drop anything.
alter table auth.users owner to supabase_auth_admin;
alter function auth.jwt() owner to supabase_auth_admin;
alter function auth.uid() owner to supabase_auth_admin;
alter function auth.role() owner to supabase_auth_admin;
grant all on table auth.users to postgres;

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
comment on table realtime.messages is
  'Local stand-in for Supabase Realtime''s broadcast messages';
-- The Realtime service's table (hosted grants as in its pg_dump): `postgres`
-- may use it and add policies (supautils), not alter it.
alter table realtime.messages owner to supabase_realtime_admin;
grant all on table realtime.messages to postgres;
grant select, insert, update on table realtime.messages to anon, authenticated, service_role;

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
alter function realtime.topic() owner to supabase_realtime_admin;

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
-- Made by hosted's init scripts while `postgres` was still their superuser:
-- it is `postgres`'s, so migrations may add tables to it.
alter publication supabase_realtime owner to postgres;

-- -----------------------------------------------------------------------------
-- storage: the buckets and objects tables of Supabase Storage and its path
-- helpers, as hosted Supabase defines them (a minimal copy: the columns, the
-- unique keys and the grants; no search functions, no prefixes). The local
-- Storage API (local/storage/) writes rows here; migrations create buckets
-- and add policies. RLS is on with no policy, as hosted: only the bypassrls
-- roles (service_role, postgres) and the superuser see anything until a
-- migration adds policies.
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

-- Supabase Storage's: `postgres` may use the tables and grant on them, and add
-- policies (supautils), not alter or comment on them.
alter table storage.buckets owner to supabase_storage_admin;
alter table storage.objects owner to supabase_storage_admin;
alter function storage.foldername(text) owner to supabase_storage_admin;
alter function storage.filename(text) owner to supabase_storage_admin;
alter function storage.extension(text) owner to supabase_storage_admin;
grant all on table storage.buckets, storage.objects to postgres with grant option;

-- -----------------------------------------------------------------------------
-- supautils' policy_grants, modelled. supautils runs CREATE, ALTER and DROP
-- POLICY on the tables it lists for `postgres` as the superuser, inside the
-- session of `postgres`. PostgreSQL cannot be told that without the
-- extension, so the migration runner (local/db/migrate.ts, which logs in as
-- `postgres`) finds exactly those statements in a file, records their text
-- here over its superuser connection, and in the file's transaction has each
-- run by run_granted_statement(), which executes only a recorded text, once,
-- as this function's owner (the superuser), with the session's search path as
-- supautils does. Everything else in the file runs as `postgres`. `postgres`
-- may call the function but cannot record a text: a migration cannot reach
-- the superuser through it. Local only; hosted has no such schema.
-- -----------------------------------------------------------------------------
create schema if not exists supautils_local;
comment on schema supautils_local is
  'Local stand-in for supautils'' policy_grants (local/db/migrate.ts); hosted Supabase has no such schema';
revoke all on schema supautils_local from public;
grant usage on schema supautils_local to postgres;

create table if not exists supautils_local.granted_statements (
  run_id text not null,
  statement text not null
);
comment on table supautils_local.granted_statements is
  'Policy statements the migration runner found in the file it applies, each runnable once as the superuser by run_granted_statement()';
comment on column supautils_local.granted_statements.run_id is 'The migration run that recorded the statement';
comment on column supautils_local.granted_statements.statement is
  'The exact text of a CREATE, ALTER or DROP POLICY on a table of supautils.policy_grants';
revoke all on table supautils_local.granted_statements from public;

-- No SET search_path: the statement resolves its names as the session does
-- (as under supautils); the function's own names and operators are fully
-- qualified, so no object of the caller's can stand in for them.
create or replace function supautils_local.run_granted_statement(p_run_id text, p_statement text)
returns void
language plpgsql
security definer
as $$
begin
  delete from supautils_local.granted_statements g
  where g.ctid operator(pg_catalog.=) (
    select s.ctid from supautils_local.granted_statements s
    where s.run_id operator(pg_catalog.=) p_run_id
      and s.statement operator(pg_catalog.=) p_statement
    limit 1
    for update
  );
  if not found then
    raise exception 'This statement was not granted by the migration runner (local supautils stand-in)'
      using errcode = '42501';
  end if;
  execute p_statement;
end
$$;
comment on function supautils_local.run_granted_statement(text, text) is
  'Runs, once and as the superuser, a policy statement the migration runner recorded (local stand-in for supautils.policy_grants)';
revoke all on function supautils_local.run_granted_statement(text, text) from public;
grant execute on function supautils_local.run_granted_statement(text, text) to postgres;
