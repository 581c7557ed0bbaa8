-- =============================================================================
-- Daily tasks: the orchestrator's once-per-slot-and-day record, and the
-- schedules of the scheduled maintenance jobs
--
-- run-daily-tasks runs its sub-jobs (sponsored activations, sponsored
-- notices, the view fold, the e-mail retry, offer expiry) in process, at
-- most once per (slot, UTC day): the slot is the day itself for the
-- scheduled run, or a label such as "manual". daily_task_runs holds one row
-- per (slot, day), claimed by claim_daily_tasks() before any sub-job runs:
--
--   (no row) ──claim──► running ──► succeeded
--                          │    └──► failed          (a sub-job failed)
--                          └── unfinished past stale_after: taken over
--   succeeded | failed ──claim with force──► running (runs + 1)
--
--   claim finds             force = false          force = true
--   no row                  claimed                claimed
--   running, fresh          already_running        already_running
--   running, stale          claimed (taken over)   claimed (taken over)
--   succeeded | failed      already_ran            claimed
--
-- Each sub-job keeps its own job_runs row and overlap guard; this table only
-- says whether the day's slot has run. The schedule rows below start the
-- orchestrator and the scheduled jobs it also runs on their own cadence
-- (run-price-alerts has its row in the price alerts migration); existing
-- rows (an operator may have changed a cadence) are left as they are.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- daily_task_runs
-- -----------------------------------------------------------------------------
create table if not exists public.daily_task_runs (
  id uuid primary key default gen_random_uuid(),
  slot text not null,
  day date not null,
  status text not null default 'running',
  forced boolean not null default false,
  runs integer not null default 1,
  started_at timestamptz not null default now(),
  stale_after interval not null default interval '30 minutes',
  finished_at timestamptz,
  results jsonb not null default '[]'::jsonb,
  constraint daily_task_runs_slot_day_key unique (slot, day),
  constraint daily_task_runs_status_known check (status in ('running', 'succeeded', 'failed')),
  constraint daily_task_runs_slot_format check (slot ~ '^[A-Za-z0-9_.:-]{1,50}$'),
  constraint daily_task_runs_results_is_array check (jsonb_typeof(results) = 'array')
);

comment on table public.daily_task_runs is
  'run-daily-tasks: one row per (slot, UTC day) — whether that slot ran, how it ended and each sub-job''s result. Written only by the service connection through claim_daily_tasks()';
comment on column public.daily_task_runs.id is 'The run''s id (runId in the answer)';
comment on column public.daily_task_runs.slot is 'The run''s label: the UTC day for the scheduled run, "manual" for a manual one, or another label';
comment on column public.daily_task_runs.day is 'The UTC day the slot ran on';
comment on column public.daily_task_runs.status is 'running | succeeded | failed (at least one sub-job failed)';
comment on column public.daily_task_runs.forced is 'Whether the latest run was forced (force: true) over a finished one';
comment on column public.daily_task_runs.runs is 'How many times the slot ran on the day (1, plus forced reruns and takeovers)';
comment on column public.daily_task_runs.started_at is 'When the latest run started';
comment on column public.daily_task_runs.stale_after is 'After this long an unfinished run is taken over by the next claim';
comment on column public.daily_task_runs.finished_at is 'When the latest run finished (null while running)';
comment on column public.daily_task_runs.results is 'The latest run''s sub-job results: [{ job, status, durationMs, counts | error }]';
comment on constraint daily_task_runs_slot_day_key on public.daily_task_runs is 'One row per slot and UTC day';
comment on constraint daily_task_runs_status_known on public.daily_task_runs is 'status is running, succeeded or failed';
comment on constraint daily_task_runs_slot_format on public.daily_task_runs is
  'A slot is 1 to 50 letters, digits, ''_'', ''.'', '':'' or ''-''';
comment on constraint daily_task_runs_results_is_array on public.daily_task_runs is 'results is a JSON array';

alter table public.daily_task_runs enable row level security;
revoke all on table public.daily_task_runs from anon, authenticated;
grant select on table public.daily_task_runs to authenticated;
grant all on table public.daily_task_runs to service_role;

drop policy if exists "Admins can read daily task runs" on public.daily_task_runs;
create policy "Admins can read daily task runs" on public.daily_task_runs
  for select to authenticated
  using ((select public.is_admin()));
comment on policy "Admins can read daily task runs" on public.daily_task_runs is
  'Admins see which daily slots ran and how; nobody else reads them';

-- -----------------------------------------------------------------------------
-- claim_daily_tasks(): may this (slot, day) run now?
-- -----------------------------------------------------------------------------
create or replace function public.claim_daily_tasks(
  p_slot text,
  p_day date,
  p_force boolean,
  p_stale_after interval default interval '30 minutes'
)
returns table (
  run_id uuid,
  outcome text,
  started_at timestamptz,
  finished_at timestamptz,
  results jsonb
)
language plpgsql
set search_path = ''
as $$
#variable_conflict use_column
declare
  v_row public.daily_task_runs;
begin
  insert into public.daily_task_runs as r (slot, day, stale_after)
  values (p_slot, p_day, p_stale_after)
  on conflict (slot, day) do nothing
  returning * into v_row;
  if found then
    return query select v_row.id, 'claimed'::text, v_row.started_at, v_row.finished_at, v_row.results;
    return;
  end if;

  -- The row exists: decide under its lock, so two claims cannot both win.
  select * into strict v_row from public.daily_task_runs r
  where r.slot = p_slot and r.day = p_day
  for update;

  if v_row.status = 'running' and v_row.started_at + v_row.stale_after > now() then
    return query select v_row.id, 'already_running'::text, v_row.started_at, v_row.finished_at,
      v_row.results;
    return;
  end if;
  if v_row.status <> 'running' and not p_force then
    return query select v_row.id, 'already_ran'::text, v_row.started_at, v_row.finished_at,
      v_row.results;
    return;
  end if;

  update public.daily_task_runs r
  set status = 'running',
      forced = (v_row.status <> 'running'),
      runs = r.runs + 1,
      started_at = now(),
      stale_after = p_stale_after,
      finished_at = null,
      results = '[]'::jsonb
  where r.id = v_row.id
  returning * into v_row;
  return query select v_row.id, 'claimed'::text, v_row.started_at, v_row.finished_at, v_row.results;
end
$$;
comment on function public.claim_daily_tasks(text, date, boolean, interval) is
  'Claims (slot, day) for a run of run-daily-tasks: outcome claimed (a new row, a forced rerun of a finished one, or a takeover of a stale one), already_running or already_ran (with that run''s id, times and results). Service role only';
revoke execute on function public.claim_daily_tasks(text, date, boolean, interval)
  from public, anon, authenticated;
grant execute on function public.claim_daily_tasks(text, date, boolean, interval) to service_role;

-- -----------------------------------------------------------------------------
-- finish_daily_tasks(): how the run ended
-- -----------------------------------------------------------------------------
create or replace function public.finish_daily_tasks(p_run_id uuid, p_status text, p_results jsonb)
returns boolean
language sql
set search_path = ''
as $$
  update public.daily_task_runs
  set status = p_status, finished_at = now(), results = p_results
  where id = p_run_id and status = 'running'
  returning true;
$$;
comment on function public.finish_daily_tasks(uuid, text, jsonb) is
  'Records the end of a run-daily-tasks run (succeeded or failed) with its results; null when the run was no longer running (taken over). Service role only';
revoke execute on function public.finish_daily_tasks(uuid, text, jsonb)
  from public, anon, authenticated;
grant execute on function public.finish_daily_tasks(uuid, text, jsonb) to service_role;

-- -----------------------------------------------------------------------------
-- Schedules (UTC)
-- -----------------------------------------------------------------------------
insert into public.job_schedules (function_name, cron, description) values
  ('run-daily-tasks', '5 0 * * *',
   'Daily 00:05: sponsored activations and notices, view counts, e-mail retry, offer expiry'),
  ('update-views-count', '*/10 * * * *',
   'Every 10 minutes: fold recorded listing views into listings.views_count'),
  ('send-sponsored-notifications', '35 * * * *',
   'Hourly at :35: tell sellers their sponsored placement started or ends within 24 h')
on conflict (function_name) do nothing;

select public.schedule_jobs();
