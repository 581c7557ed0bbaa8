-- =============================================================================
-- Rate limits: a fixed-window counter per key, shared by every isolate
--
-- The function factory calls take_rate_limit(key, limit, window) once per
-- request, before the handler runs: one statement, one round trip, and the
-- answer is the same whichever isolate asks, because the counter lives here.
-- A key names what is limited (e.g. 'fn:create-checkout:user:<id>' or
-- 'fn:get-price-id:ip:<address>'); each key has one row:
--
--   no row                     -> row (window starts now, hits 1)  allowed
--   window running, hits < L   -> hits + 1                         allowed
--   window running, hits >= L  -> hits + 1, window kept            refused
--   window over (started at    -> window starts now, hits 1        allowed
--     or before now - W)
--
-- (L = p_limit, W = p_window_seconds.) A refused request is counted but does
-- not move the window: a client that keeps calling is let in again when the
-- window it exhausted ends, not later. Concurrent calls for one key queue on
-- the row lock of the insert ... on conflict do update, so exactly L of them
-- are allowed per window.
--
-- prune_rate_limits() deletes rows whose window ended long ago (a scheduled
-- job or an operator calls it); a pruned key starts a new window on its
-- next request, as it would have anyway.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- rate_limits
-- -----------------------------------------------------------------------------
-- fillfactor 70: every request updates a row, and the free space lets the
-- update stay on its page (a HOT update; key, the only indexed column, never
-- changes).
create table if not exists public.rate_limits (
  key text primary key,
  window_started_at timestamptz not null,
  window_seconds integer not null,
  hits integer not null,
  constraint rate_limits_key_length check (char_length(key) between 1 and 512),
  constraint rate_limits_window_seconds_positive check (window_seconds >= 1),
  constraint rate_limits_hits_positive check (hits >= 1)
) with (fillfactor = 70);

comment on table public.rate_limits is
  'Fixed-window rate limit counters, one row per key; written only by take_rate_limit() and prune_rate_limits() (service connection)';
comment on column public.rate_limits.key is
  'What is limited, chosen by the caller (e.g. fn:<function>:user:<id>); 1 to 512 characters';
comment on column public.rate_limits.window_started_at is
  'When the current window started: the first request after the previous window ended';
comment on column public.rate_limits.window_seconds is
  'Length of the window in seconds, as the last take_rate_limit() call gave it; prune_rate_limits() uses it to tell when the window ended';
comment on column public.rate_limits.hits is
  'Requests counted in the current window, refused ones included';
comment on constraint rate_limits_key_length on public.rate_limits is
  'A key is 1 to 512 characters';
comment on constraint rate_limits_window_seconds_positive on public.rate_limits is
  'A window lasts at least one second';
comment on constraint rate_limits_hits_positive on public.rate_limits is
  'A row exists only once a request was counted';

-- No client access: RLS on without policies, and no grants. The service
-- connection reads and writes it (service_role bypasses RLS).
alter table public.rate_limits enable row level security;
revoke all on table public.rate_limits from public, anon, authenticated;
grant all on table public.rate_limits to service_role;

-- -----------------------------------------------------------------------------
-- take_rate_limit(): count a request and decide
-- -----------------------------------------------------------------------------
create or replace function public.take_rate_limit(
  p_key text,
  p_limit integer,
  p_window_seconds integer
)
returns table (allowed boolean, remaining integer, retry_after_seconds integer)
-- PL/pgSQL for the argument checks and a plan kept for the session; the
-- decision itself is one statement.
language plpgsql
volatile
-- Invoker rights: only service_role and the owner may call it, and both may
-- write rate_limits.
set search_path = ''
as $$
declare
  -- The time of the call, not of the transaction: a caller's transaction
  -- may have started long before.
  v_now timestamptz := clock_timestamp();
  v_window interval;
begin
  if p_key is null or char_length(p_key) = 0 then
    raise exception 'Cannot take a rate limit: the key is empty' using errcode = '22023';
  end if;
  if char_length(p_key) > 512 then
    raise exception 'Cannot take a rate limit: the key is longer than 512 characters'
      using errcode = '22023';
  end if;
  if p_limit is null or p_limit < 1 then
    raise exception 'Cannot take a rate limit for "%": the limit must be at least 1, not %',
      p_key, coalesce(p_limit::text, 'null') using errcode = '22023';
  end if;
  if p_window_seconds is null or p_window_seconds < 1 then
    raise exception 'Cannot take a rate limit for "%": the window must be at least 1 second, not %',
      p_key, coalesce(p_window_seconds::text, 'null') using errcode = '22023';
  end if;
  v_window := make_interval(secs => p_window_seconds);

  -- One statement: the first request of a key creates its row; later ones
  -- take the row lock, then start a new window if the stored one is over or
  -- count into it otherwise. RETURNING sees the row as written.
  return query
  insert into public.rate_limits as r (key, window_started_at, window_seconds, hits)
  values (p_key, v_now, p_window_seconds, 1)
  on conflict (key) do update set
    window_started_at = case
      when r.window_started_at + v_window <= v_now then v_now
      else r.window_started_at
    end,
    window_seconds = p_window_seconds,
    hits = case
      when r.window_started_at + v_window <= v_now then 1
      -- Saturates instead of overflowing; far past any limit anyway.
      else least(r.hits, 2147483646) + 1
    end
  returning
    r.hits <= p_limit,
    greatest(p_limit - r.hits, 0),
    case
      when r.hits <= p_limit then 0
      -- Whole seconds until the window ends, at least 1 and at most the
      -- window (a window started by a call that took its row lock after
      -- this one read the clock may end slightly later than v_now + W).
      else least(
        p_window_seconds,
        greatest(1, ceil(extract(epoch from (r.window_started_at + v_window - v_now)))::integer)
      )
    end;
end
$$;
comment on function public.take_rate_limit(text, integer, integer) is
  'Counts a request against key p_key (fixed window of p_window_seconds, at most p_limit requests) in one statement and answers allowed, remaining (requests left in the window) and retry_after_seconds (0 when allowed, else whole seconds until the window ends, 1 to p_window_seconds). A refused request is counted but does not extend the window. 22023 for an empty or over-long key, a limit or window below 1';
revoke execute on function public.take_rate_limit(text, integer, integer)
  from public, anon, authenticated;
grant execute on function public.take_rate_limit(text, integer, integer) to service_role;

-- -----------------------------------------------------------------------------
-- prune_rate_limits(): forget windows that ended long ago
-- -----------------------------------------------------------------------------
create or replace function public.prune_rate_limits(p_older_than interval default '1 day')
returns integer
language plpgsql
volatile
-- Invoker rights: only service_role and the owner may call it.
set search_path = ''
as $$
declare
  v_deleted integer;
begin
  if p_older_than is null or p_older_than < interval '0' then
    raise exception 'Cannot prune rate limits: the age must be zero or more, not %',
      coalesce(p_older_than::text, 'null') using errcode = '22023';
  end if;
  delete from public.rate_limits r
  where r.window_started_at + make_interval(secs => r.window_seconds)
        < clock_timestamp() - p_older_than;
  get diagnostics v_deleted = row_count;
  return v_deleted;
end
$$;
comment on function public.prune_rate_limits(interval) is
  'Deletes the rate_limits rows whose window ended more than p_older_than ago (default 1 day) and returns how many; 22023 for a negative or null age';
revoke execute on function public.prune_rate_limits(interval) from public, anon, authenticated;
grant execute on function public.prune_rate_limits(interval) to service_role;
