-- =============================================================================
-- Processor mirror: the ledger's one writer and the subscription fast path
--
-- payproc-webhook applies most events with one call: the subscription it
-- re-read from the processor is already mirrored by a row, so the row is
-- judged, the event recorded and the row updated together. These functions
-- are that call. Being PL/pgSQL, their plans are cached per connection (also
-- behind the transaction pooler), where a statement sent as text is planned
-- again on every call.
--
--   record_payproc_event(event, outcome, detail)   the one insert into the ledger
--   mirror_subscription(mirror, read_at, ...)      judge, record, update one row
--
-- mirror_subscription() judges the row mirroring the subscription, under a
-- row lock:
--
--   matches  the row's customer is the subscription's (and its user the one
--            required, when one is) — else nothing happens and the caller
--            takes the full path (find the user, settle two subscriptions)
--   fresh    the read is not older than the stored one (payproc_synced_at)
--   same     the row already holds every mirrored value
--
-- and, when it matches, records the event (when one is given; a repeat
-- records nothing and changes nothing) and updates the row when the read is
-- fresh and something differs. The event's outcome follows the verdict:
-- applied, applied "already up to date", or skipped "stale".
--
-- The mirrored columns here are the same as MIRRORED_COLUMNS in
-- supabase/functions/_shared/billing/subscription_rows.ts; a test writes
-- every one of them through this function.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- record_payproc_event(): the ledger's one insert
-- -----------------------------------------------------------------------------
create or replace function public.record_payproc_event(
  p_event jsonb,
  p_outcome text default 'applied',
  p_detail text default null
) returns boolean
language plpgsql
set search_path = ''
as $$
begin
  insert into public.payproc_events
    (id, type, created, account, livemode, api_version, endpoint, outcome, detail)
  values (
    p_event ->> 'id',
    p_event ->> 'type',
    to_timestamp((p_event ->> 'created')::double precision),
    nullif(p_event ->> 'account', ''),
    coalesce((p_event ->> 'livemode')::boolean, false),
    p_event ->> 'api_version',
    coalesce(p_event ->> 'endpoint', 'platform'),
    p_outcome,
    p_detail
  )
  on conflict (id) do nothing;
  return found;
end
$$;
comment on function public.record_payproc_event(jsonb, text, text) is
  'Records a verified event in payproc_events ({id, type, created, account, livemode, api_version, endpoint}) with its outcome; false when it was recorded before (then nothing changes)';
revoke execute on function public.record_payproc_event(jsonb, text, text)
  from public, anon, authenticated;
grant execute on function public.record_payproc_event(jsonb, text, text) to service_role;

-- -----------------------------------------------------------------------------
-- mirror_subscription(): the fast path of one subscription
-- -----------------------------------------------------------------------------
create or replace function public.mirror_subscription(
  p_mirror jsonb,
  p_read_at timestamptz,
  p_event_created timestamptz default null,
  p_user uuid default null,
  p_event jsonb default null
) returns table (
  user_id uuid,
  matches boolean,
  fresh boolean,
  same boolean,
  changed boolean,
  recorded boolean
)
language plpgsql
set search_path = ''
as $$
declare
  m public.subscriptions := jsonb_populate_record(null::public.subscriptions, p_mirror);
  s public.subscriptions;
begin
  if p_read_at is null then
    raise exception 'Cannot mirror subscription "%": the time of its read is required',
      m.payproc_subscription_id using errcode = '22023';
  end if;
  select * into s from public.subscriptions r
  where r.payproc_subscription_id = m.payproc_subscription_id
  for update;
  if not found then
    return;
  end if;

  user_id := s.user_id;
  matches := s.payproc_customer_id is not distinct from m.payproc_customer_id
    and (p_user is null or s.user_id = p_user);
  fresh := s.payproc_synced_at is null or s.payproc_synced_at <= p_read_at;
  same := (s.subscription_level, s.subscription_status, s.source, s.payproc_customer_id,
           s.payproc_subscription_id, s.payproc_price_id, s.billing_interval,
           s.current_period_start, s.current_period_end, s.cancel_at_period_end)
    is not distinct from
          (m.subscription_level, m.subscription_status, m.source, m.payproc_customer_id,
           m.payproc_subscription_id, m.payproc_price_id, m.billing_interval,
           m.current_period_start, m.current_period_end, m.cancel_at_period_end);
  changed := false;
  recorded := false;
  if not matches then
    return next;
    return;
  end if;

  if p_event is not null then
    recorded := public.record_payproc_event(
      p_event,
      case when fresh then 'applied' else 'skipped' end,
      case when not fresh then 'stale: a newer read is already stored'
           when same then 'already up to date' end
    );
    if not recorded then
      return next;
      return;
    end if;
  end if;

  if fresh and not same then
    update public.subscriptions r set
      subscription_level = m.subscription_level,
      subscription_status = m.subscription_status,
      source = m.source,
      payproc_customer_id = m.payproc_customer_id,
      payproc_subscription_id = m.payproc_subscription_id,
      payproc_price_id = m.payproc_price_id,
      billing_interval = m.billing_interval,
      current_period_start = m.current_period_start,
      current_period_end = m.current_period_end,
      cancel_at_period_end = m.cancel_at_period_end,
      payproc_synced_at = greatest(r.payproc_synced_at, p_read_at),
      payproc_event_created = greatest(r.payproc_event_created, p_event_created)
    where r.id = s.id;
    changed := true;
  end if;
  return next;
end
$$;
comment on function public.mirror_subscription(jsonb, timestamptz, timestamptz, uuid, jsonb) is
  'Fast path of mirroring a processor subscription read at p_read_at: locks the row mirroring it, judges it (matches, fresh, same), records p_event when given and it matches, and updates the row when fresh and different. No row, or no match: nothing happens (the caller takes the full path)';
revoke execute on function public.mirror_subscription(jsonb, timestamptz, timestamptz, uuid, jsonb)
  from public, anon, authenticated;
grant execute on function public.mirror_subscription(jsonb, timestamptz, timestamptz, uuid, jsonb)
  to service_role;
