-- =============================================================================
-- Payment processor events: which endpoint verified them, and read-only ordering
--
-- Admission (payproc-webhook, before anything is written): the secret that
-- verified an event decides what it may be about.
--
--   endpoint   secret                           admits
--   platform   PAYPROC_WEBHOOK_SECRET           events of our own account: no `account`
--   connect    PAYPROC_CONNECT_WEBHOOK_SECRET   events of connected accounts: `account`
--                                               set, type account.* or payout.*
--
-- and the event's livemode must match the secret key's mode. Anything else is
-- refused with 400 and not recorded. payproc_events.endpoint records which
-- endpoint admitted each event.
--
-- Ordering, from this migration on: handlers never write an event's own copy
-- of an object. They re-read it from the processor before any transaction
-- and write it with the time of that read; a write whose read is older than
-- the stored one (payproc_synced_at) changes nothing. An object the
-- processor does not have is never mirrored (a subscription row that mirrors
-- it is ended). payproc_event_created stays as a record of the newest event
-- applied; it no longer decides anything.
-- =============================================================================

alter table public.payproc_events
  add column if not exists endpoint text not null default 'platform';

do $$
begin
  if not exists (
    select 1 from pg_constraint
    where conname = 'payproc_events_endpoint_known'
      and conrelid = 'public.payproc_events'::regclass
  ) then
    alter table public.payproc_events
      add constraint payproc_events_endpoint_known check (endpoint in ('platform', 'connect'));
  end if;
end
$$;

comment on column public.payproc_events.endpoint is
  'Which endpoint''s secret verified the event: platform (our account''s events, no account) | connect (a connected account''s account.* and payout.* events)';
comment on constraint payproc_events_endpoint_known on public.payproc_events is
  'An event is admitted by the platform or the Connect endpoint';

comment on column public.subscriptions.payproc_event_created is
  'created of the newest webhook event applied to this row; a record only (ordering uses payproc_synced_at)';
comment on column public.subscriptions.payproc_synced_at is
  'When the mirrored state was read from the processor; a write carrying an older read is refused';
comment on column public.invoices.payproc_event_created is
  'created of the newest webhook event applied to this row; a record only (ordering uses payproc_synced_at)';
comment on column public.invoices.payproc_synced_at is
  'When the mirrored invoice was read from the processor; a write carrying an older read is refused';
comment on column public.connect_accounts.payproc_event_created is
  'created of the newest webhook event applied to this row; a record only (ordering uses payproc_synced_at)';
comment on column public.connect_accounts.payproc_synced_at is
  'When the mirrored account was read from the processor; a write carrying an older read is refused';
