-- =============================================================================
-- Payment processor events: webhook idempotency and ordering
--
-- payproc-webhook records every verified event in payproc_events, keyed by
-- the processor's event id, in the same transaction as the event's effects:
--
--   insert into payproc_events (id, ...) on conflict (id) do nothing returning id
--
-- A delivery of an event already recorded inserts nothing and changes
-- nothing. Concurrent deliveries of one event block on the primary key until
-- the first commits, then no-op; if the first rolls back (its processing
-- failed, answered 5xx), the next delivery does the work. So a row exists
-- exactly when the event's effects are committed. Its outcome is final when
-- the row becomes visible:
--
--   (not recorded) ──► applied   the event changed our state (or confirmed it)
--                 ──► ignored   a type we do not handle, or nothing to do
--                 ──► skipped   handled, but refused on purpose (stale, no
--                               user to link to, conflicting link)
--
-- Ordering: handlers re-read the object from the processor (serialised per
-- object with pg_advisory_xact_lock), so an older event never writes older
-- state. When the object cannot be read any more, the event's own object is
-- applied only if the event is not older than the last one applied to that
-- row (subscriptions.payproc_event_created).
-- =============================================================================

-- -----------------------------------------------------------------------------
-- payproc_events
-- -----------------------------------------------------------------------------
create table if not exists public.payproc_events (
  id text primary key,
  type text not null,
  created timestamptz not null,
  account text,
  livemode boolean not null default false,
  api_version text,
  outcome text not null default 'applied',
  detail text,
  received_at timestamptz not null default now(),
  constraint payproc_events_outcome_known check (outcome in ('applied', 'ignored', 'skipped'))
);

comment on table public.payproc_events is
  'Every verified payment processor webhook event, recorded in the same transaction as its effects (idempotency store of payproc-webhook). Written only by the service connection';
comment on column public.payproc_events.id is 'The processor''s event id (evt_...)';
comment on column public.payproc_events.type is 'Event type, e.g. customer.subscription.updated';
comment on column public.payproc_events.created is 'When the processor created the event';
comment on column public.payproc_events.account is 'The connected account the event happened on (Connect events), else null';
comment on column public.payproc_events.livemode is 'Whether the event came from live mode';
comment on column public.payproc_events.api_version is 'The API version the event''s object was rendered with';
comment on column public.payproc_events.outcome is
  'applied: the effects are committed with this row | ignored: nothing to do (e.g. unhandled type) | skipped: refused on purpose (stale, unlinked, conflicting)';
comment on column public.payproc_events.detail is 'Why an event was ignored or skipped, for operators';
comment on column public.payproc_events.received_at is 'When the delivery that applied the event arrived';

create index if not exists payproc_events_received_at_idx on public.payproc_events (received_at);

alter table public.payproc_events enable row level security;

drop policy if exists "Admins can read payment processor events" on public.payproc_events;
create policy "Admins can read payment processor events" on public.payproc_events
  for select to authenticated
  using ((select public.is_admin()));

revoke all on table public.payproc_events from anon, authenticated;
grant select on table public.payproc_events to authenticated;
grant all on table public.payproc_events to service_role;

-- -----------------------------------------------------------------------------
-- subscriptions: how fresh the mirrored processor state is
-- -----------------------------------------------------------------------------
alter table public.subscriptions add column if not exists payproc_event_created timestamptz;
alter table public.subscriptions add column if not exists payproc_synced_at timestamptz;

comment on column public.subscriptions.payproc_event_created is
  'created of the newest webhook event applied to this row; an event whose object cannot be re-read from the processor is applied only if it is not older';
comment on column public.subscriptions.payproc_synced_at is
  'When the mirrored state was read from the processor; a write carrying an older read (a slow sync job) is refused';
