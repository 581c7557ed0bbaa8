-- =============================================================================
-- Billing schedules: when the billing jobs run (UTC)
--
-- Rows of job_schedules for the scheduled billing functions; existing rows
-- (an operator may have changed a cadence) are left as they are.
-- =============================================================================

insert into public.job_schedules (function_name, cron, description) values
  ('payproc-sync', '17 * * * *',
   'Hourly: live processor subscriptions into subscriptions, and expired grants back to free'),
  ('daily-subscription-sync', '0 3 * * *',
   'Daily 03:00: every processor subscription (ended ones too) into subscriptions'),
  ('sync-invoices', '40 */6 * * *',
   'Every 6 hours: processor invoices into invoices, from the stored cursor'),
  ('auto-fix-subscription-dates', '30 4 * * *',
   'Daily 04:30: missing or inconsistent subscription period dates from the processor')
on conflict (function_name) do nothing;

select public.schedule_jobs();
