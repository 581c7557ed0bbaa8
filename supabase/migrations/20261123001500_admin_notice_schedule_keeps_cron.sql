-- =============================================================================
-- Admin notice schedules: clearing a cadence keeps the job's last cron
--
-- sync_admin_notification_schedule() (admin notices migration) wrote a
-- placeholder cron ('0 * * * *') into job_schedules when an admin cleared
-- admin_notification_types.cron_schedule, losing the cadence the job had.
-- Now clearing it only disables the job and keeps its cron; setting a
-- cadence again enables the job with that cadence. A type first added
-- without a cadence still gets an hourly cron, disabled, because
-- job_schedules.cron is not null.
-- =============================================================================

create or replace function public.sync_admin_notification_schedule()
returns trigger
language plpgsql
-- Definer rights: admins change cron_schedule as authenticated, which may
-- not write job_schedules or install pg_cron entries.
security definer
set search_path = ''
as $$
begin
  insert into public.job_schedules (function_name, cron, enabled, description)
  values (
    new.function_name,
    coalesce(new.cron_schedule, '0 * * * *'),
    new.cron_schedule is not null,
    'Admin digest "' || new.type || '" (cadence from admin_notification_types.cron_schedule)'
  )
  on conflict (function_name) do update set
    cron = coalesce(new.cron_schedule, job_schedules.cron),
    enabled = excluded.enabled,
    description = excluded.description
  where (job_schedules.cron, job_schedules.enabled)
    is distinct from (coalesce(new.cron_schedule, job_schedules.cron), excluded.enabled);
  perform public.schedule_jobs();
  return null;
end
$$;
comment on function public.sync_admin_notification_schedule() is
  'Trigger on admin_notification_types: mirrors the type''s cron_schedule into its job_schedules row (a cleared cadence disables the job and keeps its last cron) and reinstalls the pg_cron entries';
revoke execute on function public.sync_admin_notification_schedule() from public, anon, authenticated;
