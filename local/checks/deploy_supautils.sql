-- =============================================================================
-- local/checks/deploy_supautils.sql — supautils' policy_grants for any client
--
-- Applied by `deno task check:deploy` (local/checks/check_deploy.ts) only, after
-- local/db/platform.sql, to the throwaway database the Supabase CLI pushes to.
-- Never deployed, never part of the local stack or the test template.
--
-- On hosted Supabase the supautils extension lets `postgres` CREATE, ALTER
-- (not RENAME) and DROP POLICY on the tables its `policy_grants` lists, by
-- running those statements as the superuser (see local/db/platform.sql and
-- local/db/platform_ownership.ts for the sources). Our migration runner models
-- that itself (supautils_local.run_granted_statement()); `supabase db push`
-- knows nothing of it. Here event triggers model it for whatever client logs
-- in as `postgres`: for the duration of one CREATE/ALTER/DROP POLICY statement,
-- `postgres` is made a member of the roles owning the listed tables, and the
-- statement is refused ("must be owner of table …", 42501) when it turns out
-- to act on a platform table that is not listed, or to rename a policy. The
-- membership is revoked when the statement ends; a failing statement rolls it
-- back with its transaction. Every other statement meets PostgreSQL's own
-- ownership checks, as on hosted.
--
-- Run as the local superuser. `supautils_local.policy_grant_tables` is filled
-- by check_deploy.ts from POLICY_GRANT_TABLES (local/db/platform_ownership.ts).
-- =============================================================================

create table if not exists supautils_local.policy_grant_tables (table_name text primary key);
comment on table supautils_local.policy_grant_tables is
  'supautils.policy_grants for postgres, as schema.table (filled from local/db/platform_ownership.ts)';
revoke all on table supautils_local.policy_grant_tables from public;

-- The owners of the listed tables that `postgres` is not a member of.
create or replace function supautils_local.policy_grant_owners() returns text[]
language sql stable
as $$
  select coalesce(array_agg(distinct c.relowner::regrole::text), '{}')
  from supautils_local.policy_grant_tables t
  join pg_catalog.pg_class c on c.oid = pg_catalog.to_regclass(t.table_name)
  where not pg_catalog.pg_has_role('postgres', c.relowner, 'USAGE')
$$;

-- Policies on the listed tables, by oid, with their names (to see a rename).
create or replace function supautils_local.granted_policy_names() returns jsonb
language sql stable
as $$
  select coalesce(jsonb_object_agg(p.oid::text, p.polname), '{}')
  from pg_catalog.pg_policy p
  join supautils_local.policy_grant_tables t on pg_catalog.to_regclass(t.table_name) = p.polrelid
$$;

create or replace function supautils_local.policy_grant_start() returns event_trigger
language plpgsql
security definer
set search_path = pg_catalog
as $$
declare
  r text;
  lent text[];
begin
  if session_user <> 'postgres' then
    return;
  end if;
  lent := supautils_local.policy_grant_owners();
  foreach r in array lent loop
    execute format('grant %I to postgres', r);
  end loop;
  perform set_config('supautils_local.lent', array_to_string(lent, ','), true);
  perform set_config('supautils_local.policies', supautils_local.granted_policy_names()::text, true);
end
$$;

-- Refuses (42501) a policy statement on a platform table that is not listed.
create or replace function supautils_local.refuse_unlisted(p_table regclass) returns void
language plpgsql
security definer
set search_path = pg_catalog
as $$
declare
  lent text[] := string_to_array(nullif(current_setting('supautils_local.lent', true), ''), ',');
begin
  if (select relowner::regrole::text from pg_class where oid = p_table) = any (coalesce(lent, '{}'))
    and not exists (
      select 1 from supautils_local.policy_grant_tables t where to_regclass(t.table_name) = p_table
    )
  then
    raise exception 'must be owner of table %', (select relname from pg_class where oid = p_table)
      using errcode = '42501';
  end if;
end
$$;

create or replace function supautils_local.policy_grant_drop() returns event_trigger
language plpgsql
security definer
set search_path = pg_catalog
as $$
declare
  d record;
begin
  if session_user <> 'postgres' then
    return;
  end if;
  for d in select * from pg_event_trigger_dropped_objects() where object_type = 'policy' loop
    perform supautils_local.refuse_unlisted(
      to_regclass(format('%I.%I', d.address_names[1], d.address_names[2]))
    );
  end loop;
end
$$;

create or replace function supautils_local.policy_grant_end() returns event_trigger
language plpgsql
security definer
set search_path = pg_catalog
as $$
declare
  c record;
  r text;
  before jsonb := coalesce(nullif(current_setting('supautils_local.policies', true), ''), '{}')::jsonb;
  rel regclass;
begin
  if session_user <> 'postgres' then
    return;
  end if;
  for c in select * from pg_event_trigger_ddl_commands() where object_type = 'policy' loop
    select polrelid into rel from pg_policy where oid = c.objid;
    perform supautils_local.refuse_unlisted(rel);
    if before ? c.objid::text
      and before ->> c.objid::text <> (select polname from pg_policy where oid = c.objid)
    then
      -- supautils leaves RENAME to PostgreSQL, which wants the owner.
      raise exception 'must be owner of table %', (select relname from pg_class where oid = rel)
        using errcode = '42501';
    end if;
  end loop;
  foreach r in array coalesce(
    string_to_array(nullif(current_setting('supautils_local.lent', true), ''), ','), '{}'
  ) loop
    execute format('revoke %I from postgres', r);
  end loop;
  perform set_config('supautils_local.lent', '', true);
end
$$;

drop event trigger if exists supautils_local_policy_grant_start;
create event trigger supautils_local_policy_grant_start on ddl_command_start
  when tag in ('CREATE POLICY', 'ALTER POLICY', 'DROP POLICY')
  execute function supautils_local.policy_grant_start();
drop event trigger if exists supautils_local_policy_grant_drop;
create event trigger supautils_local_policy_grant_drop on sql_drop
  when tag in ('DROP POLICY')
  execute function supautils_local.policy_grant_drop();
drop event trigger if exists supautils_local_policy_grant_end;
create event trigger supautils_local_policy_grant_end on ddl_command_end
  when tag in ('CREATE POLICY', 'ALTER POLICY', 'DROP POLICY')
  execute function supautils_local.policy_grant_end();
