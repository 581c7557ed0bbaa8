-- =============================================================================
-- Job schedules: admins can read them
--
-- The job schedules migration gave admins a read policy on job_schedules but
-- revoked every privilege from authenticated, so the policy never applied and
-- an admin's read failed with "permission denied". Reading is granted back to
-- authenticated; the policy keeps it to admins. Writes stay the service
-- connection's.
-- =============================================================================

grant select on table public.job_schedules to authenticated;
