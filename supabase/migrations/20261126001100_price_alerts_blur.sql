-- =============================================================================
-- Price alerts follow the blur policy: nothing a user's plan hides
--
-- match_price_alerts() matched on the listing's stored values whatever the
-- alert user's plan: an event (readable by its user, and told to them in
-- the app and by e-mail) carried the asking price even to a user whose plan
-- hides it, and each match said "the hidden price is at or below your
-- target", so a user could find a hidden price by moving their target, or a
-- hidden description by trying keywords. listing_view_secure refuses such
-- probes (a filter on a hidden column sees NULL); the matcher now does too,
-- asking the same rule, can_view_field(), for the alert's user:
--
--   * a pair (alert, listing) matches only when its user may see the
--     listing's asking_price;
--   * a saved search's keyword counts in the description only when its user
--     may see the description (the title is always visible): a match that
--     needs the description is dropped when it is hidden.
-- can_view_field() is asked for the matched pairs only, after the cheap
-- conditions, and not for a pair that already has an event at this price
-- (it was visible when it was told, and the unique key makes it insert
-- nothing anyway), so a rerun asks nothing for what it told before.
-- A hidden match is not an event: the alert stays quiet until the user's
-- plan shows the price (a listing alert matches on the next run after
-- that; a saved search when the listing next changes).
--
-- Delivery asks again (_shared/price_alerts/notify_user.ts): an event whose
-- price the user's plan no longer shows when it is told (the plan or the
-- flags changed after the match) is suppressed, never told.
--
-- By default no plan hides asking_price or (for signed-in users) the
-- description, so nothing changes until an admin sets such a flag.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- match_price_alerts(): only what the alert's user may see
-- -----------------------------------------------------------------------------
create or replace function public.match_price_alerts(p_since timestamptz)
returns table (alerts_scanned integer, matches integer, events_created integer)
language plpgsql
-- Invoker rights: only the service role may execute it.
set search_path = ''
as $$
begin
  return query
  with listing_matches as (
    -- Listing alerts: every active one, joined to its listing by id.
    select a.id as alert_id, a.user_id, a.channels, l.id as listing_id, l.asking_price,
           l.currency, false as by_description
    from public.price_alerts a
    join public.listings l on l.id = a.listing_id
    where a.active and a.listing_id is not null
      and l.review_status = 'approved'
      and l.asking_price <= a.target_price
      and l.seller_id <> a.user_id
  ),
  changed as (
    -- Approved listings changed since p_since, with their searchable text.
    select l.id, l.seller_id, lower(l.category) as category, l.currency, l.asking_price,
           l.updated_at, lower(l.title) as title, lower(coalesce(l.description, '')) as description
    from public.listings l
    where l.review_status = 'approved' and l.updated_at >= p_since
  ),
  search_matches as (
    -- Saved searches: the changed listings of their category and currency.
    -- by_description: some keyword is not in the title, so the match needs
    -- the description (whether the user may see it is asked below, for the
    -- matches only).
    select a.id as alert_id, a.user_id, a.channels, c.id as listing_id, c.asking_price,
           c.currency,
           exists (select 1 from unnest(a.keywords) k where strpos(c.title, k) = 0)
             as by_description
    from changed c
    join public.price_alerts a
      on lower(a.category) = c.category and a.currency = c.currency
     and a.active and a.listing_id is null
    where c.asking_price <= a.max_price
      and c.updated_at >= a.created_at
      and c.seller_id <> a.user_id
      and not exists (
        select 1 from unnest(a.keywords) k
        where strpos(c.title, k) = 0 and strpos(c.description, k) = 0
      )
  ),
  matched as (
    select * from listing_matches
    union all
    select * from search_matches
  ),
  visible as (
    -- Only pairs the user may see: the price, and the description when the
    -- match needs it. A pair told before at this price was visible then and
    -- is not asked again, so a rerun asks nothing for what it already told.
    select m.*
    from matched m
    where case
      when exists (
        select 1 from public.price_alert_events e
        where e.alert_id = m.alert_id and e.listing_id = m.listing_id
          and e.price = m.asking_price
      ) then true
      else public.can_view_field(m.listing_id, 'asking_price', m.user_id)
        and (not m.by_description
             or public.can_view_field(m.listing_id, 'description', m.user_id))
    end
  ),
  inserted as (
    insert into public.price_alert_events (alert_id, user_id, listing_id, channel, price, currency)
    select m.alert_id, m.user_id, m.listing_id, ch.channel, m.asking_price, m.currency
    from visible m
    cross join lateral unnest(m.channels) as ch(channel)
    on conflict on constraint price_alert_events_once do nothing
    returning 1
  )
  select (select count(*) from public.price_alerts a where a.active)::integer,
         (select count(*) from visible)::integer,
         (select count(*) from inserted)::integer;
end
$$;
comment on function public.match_price_alerts(timestamptz) is
  'Matches every active alert in one statement (rules in the price alerts migration header): listing alerts against their listing, saved searches against approved listings changed since p_since; only what the alert''s user may see counts (can_view_field: the asking price, and the description for keywords; see the price alerts blur migration). Inserts one pending event per channel of each match unless it exists. Returns the active alerts, the alert-listing pairs matched and the events created. Service role only';
revoke execute on function public.match_price_alerts(timestamptz) from public, anon, authenticated;
grant execute on function public.match_price_alerts(timestamptz) to service_role;

comment on column public.price_alert_runs.matches is
  'Alert-listing pairs that matched (new or already told; an alert with two channels counts once); a pair whose price the user''s plan hides is no match';
