-- =============================================================================
-- Job schedules: when each scheduled function runs
--
-- One row per scheduled function. Hosted: pg_cron runs each enabled row,
-- POSTing to the function through pg_net with the scheduler token read from
-- Vault (secrets "project_url" and "scheduler_token"); schedule_jobs() (re)
-- installs the cron entries and is called at the end of this migration and
-- by every migration that adds a row. Local: `deno task start` reads the same
-- table and runs it with croner, so both environments follow one schedule.
-- =============================================================================

create table if not exists public.job_schedules (
  function_name text primary key,
  cron text not null,
  body jsonb not null default '{}'::jsonb,
  enabled boolean not null default true,
  description text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
comment on table public.job_schedules is
  'Cadence of each scheduled function (cron syntax, UTC); run by pg_cron on hosted, croner locally';

alter table public.job_schedules enable row level security;
revoke all on public.job_schedules from anon, authenticated;

drop policy if exists "Admins can read job schedules" on public.job_schedules;
create policy "Admins can read job schedules" on public.job_schedules
  for select to authenticated
  using ((select public.is_admin()));

drop trigger if exists job_schedules_set_updated_at on public.job_schedules;
create trigger job_schedules_set_updated_at
  before update on public.job_schedules
  for each row execute function public.set_updated_at();

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
  if not exists (select 1 from pg_extension where extname = 'pg_cron')
     or not exists (select 1 from pg_extension where extname = 'pg_net') then
    return 0;
  end if;
  for job in select * from public.job_schedules loop
    if job.enabled then
      execute format(
        'select cron.schedule(%L, %L, %L)',
        'fn:' || job.function_name,
        job.cron,
        format(
          $cmd$select net.http_post(
            url := (select decrypted_secret from vault.decrypted_secrets where name = 'project_url')
                   || '/functions/v1/%s',
            headers := jsonb_build_object(
              'Content-Type', 'application/json',
              'Authorization', 'Bearer ' || (select decrypted_secret from vault.decrypted_secrets
                                             where name = 'scheduler_token')),
            body := %L::jsonb,
            timeout_milliseconds := 60000)$cmd$,
          job.function_name, job.body::text)
      );
      installed := installed + 1;
    else
      execute format(
        'select cron.unschedule(jobid) from cron.job where jobname = %L',
        'fn:' || job.function_name
      );
    end if;
  end loop;
  return installed;
end
$$;
comment on function public.schedule_jobs() is
  'Installs a pg_cron entry per enabled job_schedules row (hosted); returns how many; no-op without pg_cron/pg_net';
revoke execute on function public.schedule_jobs() from public, anon, authenticated;

select public.schedule_jobs();
