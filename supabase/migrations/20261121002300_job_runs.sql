-- =============================================================================
-- Job runs: one row per run of a scheduled job, and the overlap guard
--
-- A job starts by inserting a 'running' row. The unique partial index on
-- (job_name) where finished_at is null admits one unfinished run per job, so
-- a second, overlapping start inserts nothing and is refused (409). A run
-- whose row is older than its stale_after is taken over: the next start marks
-- it 'abandoned' and inserts its own (a crashed isolate never finishes its
-- row). The guard is a row, not a session lock, so it works behind the
-- transaction pooler. The finished row keeps the run's counts and failures.
--
--   running ──► succeeded   every item done
--           ──► partial     finished, some items failed (listed in failures)
--           ──► failed      the run itself failed (error_code)
--           ──► abandoned   taken over after stale_after by a later start
--
-- job_cursors keeps where incremental jobs (sync-invoices) resume.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- job_runs
-- -----------------------------------------------------------------------------
create table if not exists public.job_runs (
  id uuid primary key default gen_random_uuid(),
  job_name text not null,
  status text not null default 'running',
  started_at timestamptz not null default now(),
  stale_after interval not null default interval '15 minutes',
  finished_at timestamptz,
  scanned integer not null default 0,
  changed integer not null default 0,
  failed integer not null default 0,
  failures jsonb not null default '[]'::jsonb,
  result jsonb,
  error_code text,
  constraint job_runs_status_known check (
    status in ('running', 'succeeded', 'partial', 'failed', 'abandoned')
  ),
  constraint job_runs_finished_unless_running check ((status = 'running') = (finished_at is null))
);

comment on table public.job_runs is
  'One row per run of a scheduled job: the overlap guard (one unfinished run per job) and the run''s counts and failures. Written only by the service connection';
comment on column public.job_runs.id is 'The run''s id (runId in job answers)';
comment on column public.job_runs.started_at is 'When the run started';
comment on column public.job_runs.finished_at is 'When the run ended; null while running (the guard''s unique index)';
comment on column public.job_runs.job_name is 'The function name, e.g. payproc-sync';
comment on column public.job_runs.status is 'running | succeeded | partial | failed | abandoned (see the migration header)';
comment on column public.job_runs.stale_after is 'A run still unfinished this long after started_at may be taken over';
comment on column public.job_runs.scanned is 'Items looked at';
comment on column public.job_runs.changed is 'Items whose stored state changed';
comment on column public.job_runs.failed is 'Items that failed (the run went on)';
comment on column public.job_runs.failures is 'The failed items: [{ item, code, message }]';
comment on column public.job_runs.result is 'The run''s full answer';
comment on column public.job_runs.error_code is 'Why the run failed or was abandoned';

create unique index if not exists job_runs_one_unfinished_per_job
  on public.job_runs (job_name) where finished_at is null;
create index if not exists job_runs_job_name_started_at_idx
  on public.job_runs (job_name, started_at desc);

alter table public.job_runs enable row level security;

drop policy if exists "Admins can read job runs" on public.job_runs;
create policy "Admins can read job runs" on public.job_runs
  for select to authenticated
  using ((select public.is_admin()));

revoke all on table public.job_runs from anon, authenticated;
grant select on table public.job_runs to authenticated;
grant all on table public.job_runs to service_role;

-- -----------------------------------------------------------------------------
-- job_cursors
-- -----------------------------------------------------------------------------
create table if not exists public.job_cursors (
  job_name text primary key,
  cursor jsonb not null,
  updated_at timestamptz not null default now()
);

comment on table public.job_cursors is
  'Where an incremental job resumes (e.g. sync-invoices: the processor created time it has synced up to). Written only by the service connection';
comment on column public.job_cursors.job_name is 'The job (function name) the cursor belongs to';
comment on column public.job_cursors.updated_at is 'When the cursor last moved';
comment on column public.job_cursors.cursor is 'Job-specific position, e.g. {"created": 1790000000}';

drop trigger if exists job_cursors_set_updated_at on public.job_cursors;
create trigger job_cursors_set_updated_at
  before update on public.job_cursors
  for each row execute function public.set_updated_at();

alter table public.job_cursors enable row level security;

drop policy if exists "Admins can read job cursors" on public.job_cursors;
create policy "Admins can read job cursors" on public.job_cursors
  for select to authenticated
  using ((select public.is_admin()));

revoke all on table public.job_cursors from anon, authenticated;
grant select on table public.job_cursors to authenticated;
grant all on table public.job_cursors to service_role;
