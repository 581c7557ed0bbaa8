-- =============================================================================
-- Schedule commands: the pg_cron command of a job, built from quoted literals
--
-- schedule_jobs() (job schedules migration) built each pg_cron command by
-- pasting job_schedules.function_name into SQL text with %s, so a function
-- name such as  x'); drop table y; --  would have become part of the SQL
-- that pg_cron runs as its owner, every time the job fires. Now:
--   * job_schedule_command() builds the command text, quoting every value
--     it puts in with %L: the URL path '/functions/v1/<name>' is one string
--     literal appended to the project URL, and the body is a string literal
--     cast to jsonb. It is a function of its own so tests can check the text
--     without pg_cron;
--   * schedule_jobs() calls cron.schedule() and cron.unschedule() with
--     values, not with SQL built from them;
--   * job_schedules_function_name_format keeps function names to lower-case
--     letters, digits and hyphens (the edge functions' folder names), so a
--     name cannot carry SQL, a path or a query string in the first place.
-- The migration ends by calling schedule_jobs(), which reinstalls every
-- enabled job with the new command text (hosted; a no-op without pg_cron).
-- =============================================================================

-- -----------------------------------------------------------------------------
-- job_schedules_function_name_format
-- -----------------------------------------------------------------------------
do $$
begin
  if not exists (
    select 1 from pg_constraint
    where conrelid = 'public.job_schedules'::regclass
      and conname = 'job_schedules_function_name_format'
  ) then
    alter table public.job_schedules
      add constraint job_schedules_function_name_format
      check (function_name ~ '^[a-z0-9-]+$');
  end if;
end
$$;
comment on constraint job_schedules_function_name_format on public.job_schedules is
  'A function name is lower-case letters, digits and hyphens, as an edge function''s folder: it becomes part of the URL pg_cron posts to';

-- -----------------------------------------------------------------------------
-- job_schedule_command(): the SQL pg_cron runs for one job
-- -----------------------------------------------------------------------------
create or replace function public.job_schedule_command(p_function_name text, p_body jsonb)
returns text
language plpgsql
-- Stable, not immutable: format() is stable. The text only names the Vault
-- secrets; they are read when pg_cron runs the command, not here.
stable
set search_path = ''
as $$
begin
  if p_function_name is null or p_function_name !~ '^[a-z0-9-]+$' then
    raise exception 'Cannot build the schedule command: function name "%" is not lower-case letters, digits and hyphens',
      p_function_name using errcode = '22023';
  end if;
  if p_body is null then
    raise exception 'Cannot build the schedule command of "%": the body is null', p_function_name
      using errcode = '22023';
  end if;
  -- Every value goes in through %L, as a quoted literal; nothing is pasted
  -- into the SQL as it stands.
  return format(
    $cmd$select net.http_post(
  url := (select decrypted_secret from vault.decrypted_secrets where name = 'project_url')
         || %L,
  headers := jsonb_build_object(
    'Content-Type', 'application/json',
    'Authorization', 'Bearer ' || (select decrypted_secret from vault.decrypted_secrets
                                   where name = 'scheduler_token')),
  body := %L::jsonb,
  timeout_milliseconds := 60000)$cmd$,
    '/functions/v1/' || p_function_name,
    p_body::text
  );
end
$$;
comment on function public.job_schedule_command(text, jsonb) is
  'The SQL pg_cron runs for a scheduled function: a pg_net POST to <project_url>/functions/v1/<p_function_name> with the scheduler token from Vault and p_body, every value a quoted literal; 22023 for a malformed name or a null body';
revoke execute on function public.job_schedule_command(text, jsonb) from public, anon, authenticated;
grant execute on function public.job_schedule_command(text, jsonb) to service_role;

-- -----------------------------------------------------------------------------
-- schedule_jobs(): mirror job_schedules into pg_cron (hosted only)
-- -----------------------------------------------------------------------------
create or replace function public.schedule_jobs() returns integer
language plpgsql
set search_path = ''
as $$
declare
  job record;
  installed integer := 0;
begin
  -- Without pg_cron and pg_net (local, tests) there is nothing to install.
  -- (The cron.* calls below are planned only when reached, so the function
  -- is created and runs without pg_cron.)
  if not exists (select 1 from pg_extension where extname = 'pg_cron')
     or not exists (select 1 from pg_extension where extname = 'pg_net') then
    return 0;
  end if;
  for job in
    select s.function_name, s.cron, s.body, s.enabled
    from public.job_schedules s
    order by s.function_name
  loop
    if job.enabled then
      -- Called with values: the job name, cron expression and command are
      -- arguments, never SQL text. cron.schedule() with an existing name
      -- replaces that job.
      perform cron.schedule(
        'fn:' || job.function_name,
        job.cron,
        public.job_schedule_command(job.function_name, job.body)
      );
      installed := installed + 1;
    else
      perform cron.unschedule(j.jobid)
      from cron.job j
      where j.jobname = 'fn:' || job.function_name;
    end if;
  end loop;
  return installed;
end
$$;
comment on function public.schedule_jobs() is
  'Installs a pg_cron entry per enabled job_schedules row (command from job_schedule_command()) and removes those of disabled rows (hosted); returns how many it installed; no-op without pg_cron/pg_net';
revoke execute on function public.schedule_jobs() from public, anon, authenticated;

select public.schedule_jobs();
