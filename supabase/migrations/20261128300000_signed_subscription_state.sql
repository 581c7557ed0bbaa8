-- =============================================================================
-- The webhook writes a signed subscription event's own copy when it provably
-- carries the newest state (issue 32)
--
-- Until now every subscription event re-read its subscription from the
-- processor before writing (a third of the webhook's time). A signed event's
-- copy (`data.object`) is the subscription as it was when the event was
-- created, so it is the newest state exactly when nothing newer is stored.
-- The row now keeps, in the processor's own clock, how new its state is
-- known to be:
--
--   payproc_state_at   an event created strictly after this reports a change
--                      the row does not hold yet: it is set to the `created`
--                      of an event whose copy was written (a change in a later
--                      second comes after that one), and to the `Date` of a
--                      read's answer (a change in a later second comes after
--                      the read). Null: unknown.
--
-- A signed event is applied from its own copy (apply_subscription_event(),
-- one call, no processor read) when its `created` is strictly after the
-- row's payproc_state_at: it then reports a change from a later second than
-- anything stored. Otherwise — the same second (two changes within a second
-- cannot be ordered by `created`), older, no row yet, another customer, or a
-- stamp unknown — the caller re-reads the subscription as before
-- (mirror_subscription(), now also keeping payproc_state_at). Why the newest
-- state still wins in any delivery order: the event of the last change has
-- the largest `created`; when it is handled, either its copy is written and
-- the stamp becomes its `created` (no later event can pass the test), or the
-- stamp is already at least as late and it re-reads the processor's final
-- state. The stamp never moves back, and every write that sets values from a
-- read that has no processor time (a list, a period repair) or ends the row
-- (the processor no longer has the subscription) clears it, so the next
-- event re-reads.
--
-- The stamp must move even when the values do not (an event reporting what
-- the row holds still proves the row current as of its `created`; without
-- the move, an older event delivered later would pass the test and write
-- its older copy for good). Such a write changes only bookkeeping columns:
-- the row's `updated_at` and realtime triggers now skip updates that change
-- nothing but payproc_state_at, payproc_synced_at and payproc_event_created,
-- so `updated_at` still moves exactly when something a user sees changes.
--
-- A re-read is refused as stale (as before, by our read time
-- payproc_synced_at), and now also when its answer's Date is before the
-- stamp: its state is then certainly older than the one stored.
-- =============================================================================

alter table public.subscriptions add column if not exists payproc_state_at timestamptz;
comment on column public.subscriptions.payproc_state_at is
  'Processor time (its clock) the mirrored values are known current at: the created of the last event whose own copy was written, or the Date of a read''s answer. A signed event is written from its copy only when created strictly after this. Null: unknown (the next event re-reads)';

-- -----------------------------------------------------------------------------
-- Triggers: bookkeeping-only updates neither move updated_at nor broadcast
-- -----------------------------------------------------------------------------
-- The condition is spelled out in each trigger's WHEN (compiled with the
-- table's trigger list): a SQL function with its own search_path would be
-- planned again on every update.
drop trigger if exists subscriptions_set_updated_at on public.subscriptions;
create trigger subscriptions_set_updated_at
  before update on public.subscriptions
  for each row
  -- More than the bookkeeping columns changed (or nothing at all, as before).
  when ((to_jsonb(old) - '{payproc_state_at,payproc_synced_at,payproc_event_created,updated_at}'::text[])
         is distinct from
        (to_jsonb(new) - '{payproc_state_at,payproc_synced_at,payproc_event_created,updated_at}'::text[])
        -- An update that changes nothing at all still counts, as before.
        or old is not distinct from new)
  execute function public.set_updated_at();
comment on trigger subscriptions_set_updated_at on public.subscriptions is
  'Moves updated_at on an update that changes what the row says (not on bookkeeping-only updates)';

-- Insert and delete always broadcast; an update only when it changed content.
drop trigger if exists subscriptions_broadcast_change on public.subscriptions;
create trigger subscriptions_broadcast_change
  after insert or delete on public.subscriptions
  for each row execute function public.broadcast_subscription_change();
comment on trigger subscriptions_broadcast_change on public.subscriptions is
  'Broadcasts a new or deleted row to user:<user_id>';
drop trigger if exists subscriptions_broadcast_update on public.subscriptions;
create trigger subscriptions_broadcast_update
  after update on public.subscriptions
  for each row
  -- updated_at moved: subscriptions_set_updated_at judged the update a change
  -- (an update setting updated_at itself counts too).
  when (old.updated_at is distinct from new.updated_at)
  execute function public.broadcast_subscription_change();
comment on trigger subscriptions_broadcast_update on public.subscriptions is
  'Broadcasts an update that changes what the row says to user:<user_id> (not bookkeeping-only updates)';

-- -----------------------------------------------------------------------------
-- mirror_subscription(): the re-read's fast path, now keeping the stamp
-- -----------------------------------------------------------------------------
drop function if exists public.mirror_subscription(jsonb, timestamptz, timestamptz, uuid, jsonb);
create or replace function public.mirror_subscription(
  p_mirror jsonb,
  p_read_at timestamptz,
  p_event_created timestamptz default null,
  p_user uuid default null,
  p_event jsonb default null,
  p_state_at timestamptz default null
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
  stamp timestamptz;
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
  fresh := (s.payproc_synced_at is null or s.payproc_synced_at <= p_read_at)
    and (p_state_at is null or s.payproc_state_at is null or s.payproc_state_at <= p_state_at);
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

  if not fresh then
    return next;
    return;
  end if;
  -- A read without the processor's time cannot vouch for any event: unknown.
  stamp := case when p_state_at is null then null
                else greatest(s.payproc_state_at, p_state_at) end;
  if not same then
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
      payproc_event_created = greatest(r.payproc_event_created, p_event_created),
      payproc_state_at = stamp
    where r.id = s.id;
    changed := true;
  elsif s.payproc_state_at is distinct from stamp
     or s.payproc_synced_at is distinct from greatest(s.payproc_synced_at, p_read_at) then
    -- Bookkeeping only (the triggers skip it): the row is current as of this read.
    update public.subscriptions r set
      payproc_synced_at = greatest(r.payproc_synced_at, p_read_at),
      payproc_state_at = stamp
    where r.id = s.id;
  end if;
  return next;
end
$$;
comment on function public.mirror_subscription(jsonb, timestamptz, timestamptz, uuid, jsonb, timestamptz) is
  'Fast path of mirroring a processor subscription read at p_read_at (p_state_at: the Date of the processor''s answer): locks the row mirroring it, judges it (matches, fresh, same), records p_event when given and it matches, updates the row when fresh and different, and keeps payproc_state_at (cleared when the read has no processor time). No row, or no match: nothing happens (the caller takes the full path)';
revoke execute on function public.mirror_subscription(jsonb, timestamptz, timestamptz, uuid, jsonb, timestamptz)
  from public, anon, authenticated;
grant execute on function public.mirror_subscription(jsonb, timestamptz, timestamptz, uuid, jsonb, timestamptz)
  to service_role;

-- -----------------------------------------------------------------------------
-- apply_subscription_event(): a signed event's own copy, when provably newest
-- -----------------------------------------------------------------------------
create or replace function public.apply_subscription_event(
  p_mirror jsonb,
  p_event jsonb,
  p_now timestamptz
) returns table (outcome text, detail text)
language plpgsql
set search_path = ''
as $$
declare
  m public.subscriptions := jsonb_populate_record(null::public.subscriptions, p_mirror);
  s public.subscriptions;
  created timestamptz := to_timestamp((p_event ->> 'created')::double precision);
  same boolean;
begin
  if p_now is null or p_event ->> 'id' is null or created is null then
    raise exception 'Cannot apply subscription event: its id, created and the current time are required'
      using errcode = '22023';
  end if;
  select * into s from public.subscriptions r
  where r.payproc_subscription_id = m.payproc_subscription_id
  for update;
  -- A repeat changes nothing (and costs no processor read).
  if exists (select 1 from public.payproc_events e where e.id = p_event ->> 'id') then
    outcome := 'duplicate';
    return next;
    return;
  end if;
  if not found
     or s.payproc_customer_id is distinct from m.payproc_customer_id
     or s.payproc_state_at is null
     or created <= s.payproc_state_at then
    outcome := 'unproven';
    return next;
    return;
  end if;

  same := (s.subscription_level, s.subscription_status, s.source, s.payproc_customer_id,
           s.payproc_subscription_id, s.payproc_price_id, s.billing_interval,
           s.current_period_start, s.current_period_end, s.cancel_at_period_end)
    is not distinct from
          (m.subscription_level, m.subscription_status, m.source, m.payproc_customer_id,
           m.payproc_subscription_id, m.payproc_price_id, m.billing_interval,
           m.current_period_start, m.current_period_end, m.cancel_at_period_end);
  detail := case when same then 'already up to date' end;
  if not public.record_payproc_event(p_event, 'applied', detail) then
    -- Recorded meanwhile by a delivery that took the full path.
    outcome := 'duplicate';
    detail := null;
    return next;
    return;
  end if;
  outcome := 'applied';
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
    -- A read begun before now is older than this state.
    payproc_synced_at = greatest(r.payproc_synced_at, p_now),
    payproc_event_created = greatest(r.payproc_event_created, created),
    payproc_state_at = created
  where r.id = s.id;
  return next;
end
$$;
comment on function public.apply_subscription_event(jsonb, jsonb, timestamptz) is
  'Applies a verified subscription event from its own copy (p_mirror: the mirrored values of data.object; p_event: the ledger fields) when provably the newest state: the row mirrors the subscription for the same customer and the event was created strictly after payproc_state_at. Records the event and updates the row (bookkeeping only when the values are the same). outcome: applied, duplicate (recorded before), or unproven (nothing written: re-read the processor)';
revoke execute on function public.apply_subscription_event(jsonb, jsonb, timestamptz)
  from public, anon, authenticated;
grant execute on function public.apply_subscription_event(jsonb, jsonb, timestamptz)
  to service_role;

-- -----------------------------------------------------------------------------
-- apply_subscription_events(): concurrent events in one call and transaction
-- -----------------------------------------------------------------------------
-- The webhook gathers the signed copies that arrive while earlier calls are
-- running into one call (_shared/billing/signed_copies.ts): one round trip,
-- one transaction and one commit for all of them, each item judged, recorded
-- and written exactly as apply_subscription_event() does alone. Items are
-- taken in the order of their subscription, then their `created`, then their
-- id: two calls at once lock their rows in the same order (no deadlock
-- between them), and two events of one subscription apply oldest first (the
-- later one still proves itself newer). A failing call writes nothing; the
-- caller then applies its items one by one.
create or replace function public.apply_subscription_events(
  p_items jsonb,
  p_now timestamptz
) returns table (item integer, outcome text, detail text)
language plpgsql
set search_path = ''
as $$
declare
  element record;
  applied record;
begin
  if jsonb_typeof(p_items) is distinct from 'array' or jsonb_array_length(p_items) > 100 then
    raise exception 'Cannot apply subscription events: p_items must be an array of at most 100 {mirror, event}'
      using errcode = '22023';
  end if;
  for element in
    select i.value, i.ordinality::integer as position
    from jsonb_array_elements(p_items) with ordinality i (value, ordinality)
    order by i.value #>> '{mirror,payproc_subscription_id}',
             (i.value #>> '{event,created}')::double precision,
             i.value #>> '{event,id}'
  loop
    select * into applied
    from public.apply_subscription_event(element.value -> 'mirror', element.value -> 'event', p_now);
    item := element.position;
    outcome := applied.outcome;
    detail := applied.detail;
    return next;
  end loop;
end
$$;
comment on function public.apply_subscription_events(jsonb, timestamptz) is
  'apply_subscription_event() for each {mirror, event} of p_items (at most 100) in one transaction, in the order of subscription, created and id; one row per item: its position in p_items (from 1), outcome (applied, duplicate, unproven) and detail';
revoke execute on function public.apply_subscription_events(jsonb, timestamptz)
  from public, anon, authenticated;
grant execute on function public.apply_subscription_events(jsonb, timestamptz) to service_role;
