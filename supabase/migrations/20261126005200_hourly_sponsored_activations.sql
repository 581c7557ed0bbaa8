-- =============================================================================
-- Sponsored placements are activated every hour
--
-- process-sponsored-activations ran only as a sub-job of run-daily-tasks, so
-- a placement booked to start at 09:00 went live after midnight, up to a day
-- late, and one ending at 09:00 stayed sponsored as long. It now has its own
-- schedule, hourly on the hour. It is an admin function the scheduler may
-- start (its catalog entry says `scheduler: true`: the scheduler token or the
-- service-role key, never the anon key). The daily sub-job stays: a run finds
-- nothing left to do, and the daily run still catches up after an outage.
-- =============================================================================

insert into public.job_schedules (function_name, cron, description) values
  ('process-sponsored-activations', '0 * * * *',
   'Hourly on the hour: start sponsored placements whose window began, end those whose window ended')
on conflict (function_name) do nothing;

select public.schedule_jobs();
