-- =============================================================================
-- Retention of append-only tables, pruned in batches by the daily housekeeping
--
-- Each prune_<table>(p_older_than, p_limit) deletes at most p_limit rows past
-- their retention and answers how many; the housekeeping sub-job calls it
-- again while a call deletes a full batch (at most a bounded number of calls
-- per run), each call its own short transaction, so a large backlog never
-- holds one long transaction or lock. Rows another call is deleting are
-- skipped (for update skip locked): two prunes at once delete each row once
-- and neither fails. A second run finds nothing more to delete.
--
--   table                 kept for (default)  never pruned
--   job_runs              90 days             a running run; the latest
--                                              finished run of each job
--   price_alert_runs      90 days             a running run; the latest run
--                                              that matched (price_alerts_since)
--   daily_task_runs       90 days             a running run
--   payproc_events        90 days (>= 30)     -- (the webhook's idempotency:
--                                              the processor retries 3 days)
--   email_logs            365 days (>= 90)    a message still to be sent or
--                                              retried (next_attempt_at set)
--   contact_ceiling_hits  90 days             --
--
-- Kept for ever (the money's audit, or a once-only guard with no end):
-- deal_events, deal_settlements, deal_stray_payments, invoices,
-- price_alert_events (one match per alert, listing and price),
-- new_user_welcomes (one per user), nda_acceptance_addresses (evidence).
-- listing_views are pruned by update-views-count, notice_queue,
-- rate_limits and the analysis cache by their own housekeeping functions.
--
-- =============================================================================

-- -----------------------------------------------------------------------------
-- assert_prune_arguments(): what every prune_<table>() refuses
-- -----------------------------------------------------------------------------
create or replace function public.assert_prune_arguments(
  p_what text,
  p_older_than interval,
  p_at_least interval,
  p_limit integer,
  p_why text
)
returns void
language plpgsql
immutable
set search_path = ''
as $$
begin
  if p_older_than is null or p_older_than < p_at_least then
    raise exception 'Cannot prune %: keep at least %, not %', p_what,
      p_at_least::text || coalesce(' (' || p_why || ')', ''), coalesce(p_older_than::text, 'null')
      using errcode = '22023';
  end if;
  if p_limit is null or p_limit not between 1 and 100000 then
    raise exception 'Cannot prune %: limit "%" is not between 1 and 100000', p_what, p_limit
      using errcode = '22023';
  end if;
end
$$;
comment on function public.assert_prune_arguments(text, interval, interval, integer, text) is
  'Refuses (22023) a prune of p_what that would keep less than p_at_least (p_why says why that much is kept) or delete other than 1 to 100000 rows at a time; every prune_<table>() calls it first';
revoke execute on function public.assert_prune_arguments(text, interval, interval, integer, text)
  from public, anon, authenticated;
grant execute on function public.assert_prune_arguments(text, interval, interval, integer, text)
  to service_role;

-- -----------------------------------------------------------------------------
-- prune_job_runs(): finished runs of scheduled jobs
-- -----------------------------------------------------------------------------
create or replace function public.prune_job_runs(
  p_older_than interval default '90 days',
  p_limit integer default 5000
)
returns integer
language plpgsql
volatile
-- Invoker rights: only the service role may execute it.
set search_path = ''
as $$
declare
  v_pruned integer;
begin
  perform public.assert_prune_arguments('job runs', p_older_than, interval '1 day', p_limit, null);
  delete from public.job_runs r
  where r.ctid in (
    select o.ctid from public.job_runs o
    where o.finished_at is not null
      and o.started_at < now() - p_older_than
      -- The latest finished run of each job stays (its last outcome).
      and exists (
        select 1 from public.job_runs n
        where n.job_name = o.job_name and n.finished_at is not null
          and n.started_at > o.started_at
      )
    limit p_limit
    for update skip locked
  );
  get diagnostics v_pruned = row_count;
  return v_pruned;
end
$$;
comment on function public.prune_job_runs(interval, integer) is
  'Deletes up to p_limit job_runs rows finished and started more than p_older_than ago (default 90 days, at least 1 day), never a running run (the job guard) nor the latest finished run of a job; rows another prune holds are skipped. Answers how many. The daily housekeeping runs it in batches; service role only';
revoke execute on function public.prune_job_runs(interval, integer) from public, anon, authenticated;
grant execute on function public.prune_job_runs(interval, integer) to service_role;

-- -----------------------------------------------------------------------------
-- prune_price_alert_runs(): finished runs of run-price-alerts
-- -----------------------------------------------------------------------------
create or replace function public.prune_price_alert_runs(
  p_older_than interval default '90 days',
  p_limit integer default 5000
)
returns integer
language plpgsql
volatile
-- Invoker rights: only the service role may execute it.
set search_path = ''
as $$
declare
  v_pruned integer;
begin
  perform public.assert_prune_arguments('price alert runs', p_older_than, interval '1 day', p_limit, null);
  delete from public.price_alert_runs r
  where r.ctid in (
    select o.ctid from public.price_alert_runs o
    where o.finished_at is not null
      and o.started_at < now() - p_older_than
      -- price_alerts_since() reads the latest run that matched.
      and exists (
        select 1 from public.price_alert_runs n
        where n.status in ('succeeded', 'partial') and n.started_at > o.started_at
      )
    limit p_limit
    for update skip locked
  );
  get diagnostics v_pruned = row_count;
  return v_pruned;
end
$$;
comment on function public.prune_price_alert_runs(interval, integer) is
  'Deletes up to p_limit price_alert_runs rows finished and started more than p_older_than ago (default 90 days, at least 1 day), never a running run nor the latest run that matched (price_alerts_since reads it); rows another prune holds are skipped. Answers how many. Service role only';
revoke execute on function public.prune_price_alert_runs(interval, integer)
  from public, anon, authenticated;
grant execute on function public.prune_price_alert_runs(interval, integer) to service_role;

-- -----------------------------------------------------------------------------
-- prune_daily_task_runs(): finished slots of run-daily-tasks
-- -----------------------------------------------------------------------------
create or replace function public.prune_daily_task_runs(
  p_older_than interval default '90 days',
  p_limit integer default 5000
)
returns integer
language plpgsql
volatile
-- Invoker rights: only the service role may execute it.
set search_path = ''
as $$
declare
  v_pruned integer;
begin
  perform public.assert_prune_arguments('daily task runs', p_older_than, interval '2 days', p_limit,
    'a day''s slot may still be claimed');
  delete from public.daily_task_runs r
  where r.ctid in (
    select o.ctid from public.daily_task_runs o
    where o.finished_at is not null and o.started_at < now() - p_older_than
    limit p_limit
    for update skip locked
  );
  get diagnostics v_pruned = row_count;
  return v_pruned;
end
$$;
comment on function public.prune_daily_task_runs(interval, integer) is
  'Deletes up to p_limit daily_task_runs rows finished and started more than p_older_than ago (default 90 days, at least 2 days: a day''s slot is claimed only that day), never a running one; rows another prune holds are skipped. Answers how many. Service role only';
revoke execute on function public.prune_daily_task_runs(interval, integer)
  from public, anon, authenticated;
grant execute on function public.prune_daily_task_runs(interval, integer) to service_role;

-- -----------------------------------------------------------------------------
-- prune_payproc_events(): the webhook's ledger of processed events
-- -----------------------------------------------------------------------------
create or replace function public.prune_payproc_events(
  p_older_than interval default '90 days',
  p_limit integer default 5000
)
returns integer
language plpgsql
volatile
-- Invoker rights: only the service role may execute it.
set search_path = ''
as $$
declare
  v_pruned integer;
begin
  perform public.assert_prune_arguments('processor events', p_older_than, interval '30 days', p_limit,
    'their ids make the webhook idempotent while the processor retries or resends');
  delete from public.payproc_events e
  where e.ctid in (
    select o.ctid from public.payproc_events o
    where o.received_at < now() - p_older_than
    limit p_limit
    for update skip locked
  );
  get diagnostics v_pruned = row_count;
  return v_pruned;
end
$$;
comment on function public.prune_payproc_events(interval, integer) is
  'Deletes up to p_limit payproc_events rows received more than p_older_than ago (default 90 days, at least 30: an event id guards the webhook''s idempotency while the processor retries, 3 days, or resends); rows another prune holds are skipped. Answers how many. Service role only';
revoke execute on function public.prune_payproc_events(interval, integer)
  from public, anon, authenticated;
grant execute on function public.prune_payproc_events(interval, integer) to service_role;

-- -----------------------------------------------------------------------------
-- prune_email_logs(): messages long done with
-- -----------------------------------------------------------------------------
create or replace function public.prune_email_logs(
  p_older_than interval default '365 days',
  p_limit integer default 5000
)
returns integer
language plpgsql
volatile
-- Invoker rights: only the service role may execute it.
set search_path = ''
as $$
declare
  v_pruned integer;
begin
  perform public.assert_prune_arguments('the e-mail log', p_older_than, interval '90 days', p_limit,
    'idempotency keys make e-mails once-only');
  delete from public.email_logs l
  where l.ctid in (
    select o.ctid from public.email_logs o
    where o.created_at < now() - p_older_than
      and o.next_attempt_at is null
      and o.send_status in ('sent', 'captured', 'suppressed', 'failed')
    limit p_limit
    for update skip locked
  );
  get diagnostics v_pruned = row_count;
  return v_pruned;
end
$$;
comment on function public.prune_email_logs(interval, integer) is
  'Deletes up to p_limit email_logs rows written more than p_older_than ago (default 365 days, at least 90: a key keeps its e-mail once-only while its row is kept) that need nothing more (sent, captured, suppressed, or failed for good: next_attempt_at null); their sign-in bodies go with them. Rows another prune holds are skipped. Answers how many. Service role only';
revoke execute on function public.prune_email_logs(interval, integer)
  from public, anon, authenticated;
grant execute on function public.prune_email_logs(interval, integer) to service_role;

-- -----------------------------------------------------------------------------
-- prune_contact_ceiling_hits(): windows in which the contact form was full
-- -----------------------------------------------------------------------------
create or replace function public.prune_contact_ceiling_hits(
  p_older_than interval default '90 days',
  p_limit integer default 5000
)
returns integer
language plpgsql
volatile
-- Invoker rights: only the service role may execute it.
set search_path = ''
as $$
declare
  v_pruned integer;
begin
  perform public.assert_prune_arguments('contact ceiling hits', p_older_than, interval '7 days', p_limit,
    'the contact digest reads the hits since the previous one');
  delete from public.contact_ceiling_hits h
  where h.ctid in (
    select o.ctid from public.contact_ceiling_hits o
    where o.window_ends_at < now() - p_older_than
    limit p_limit
    for update skip locked
  );
  get diagnostics v_pruned = row_count;
  return v_pruned;
end
$$;
comment on function public.prune_contact_ceiling_hits(interval, integer) is
  'Deletes up to p_limit contact_ceiling_hits rows whose window ended more than p_older_than ago (default 90 days, at least 7: the contact digest reads the hits since the previous digest); rows another prune holds are skipped. Answers how many. Service role only';
revoke execute on function public.prune_contact_ceiling_hits(interval, integer)
  from public, anon, authenticated;
grant execute on function public.prune_contact_ceiling_hits(interval, integer) to service_role;
