-- =============================================================================
-- Signed-in writes: an anonymous sign-in changes nothing
--
-- Supabase Auth can issue anonymous sign-ins: a session with role
-- authenticated and a sub (a user row without an e-mail or a password),
-- whose JWT carries is_anonymous: true. The edge functions refuse such
-- callers already; until now every write policy for authenticated and every
-- client-callable RPC admitted them. One predicate now decides who may write:
--
--   is_signed_in_user()   true when the request carries a user (auth.uid())
--                         whose JWT is not anonymous (a missing is_anonymous
--                         claim means a signed-in account)
--   assert_signed_in()    raises 42501 for a client that is not such a user
--                         (anonymous session, or the anon key without any
--                         user); nothing on the service connection
--
-- Where it is used:
--   * every insert, update and delete policy for authenticated requires
--     (select public.is_signed_in_user()) in using and with check, the rest of
--     each policy unchanged: admin_notification_types, blurred_fields,
--     commission_tiers, listings, notification_preferences, notifications,
--     offers, price_alerts, profiles, sponsored_listings;
--   * every RPC a client may call that writes calls assert_signed_in() first,
--     before any lookup, so an anonymous caller learns nothing else:
--     accept_offer, decline_offer, withdraw_offer, cancel_deal,
--     confirm_deal_documents, deliver_handover_step, confirm_handover_step,
--     dispute_handover_step, add_handover_step;
--   * is_admin() is false for an anonymous session, whatever user_roles says.
--
-- Visitors' doors stay open, and an anonymous session is a visitor:
--   * contact_messages "Anyone can send a contact message" (anon and
--     authenticated): the contact form is for everyone;
--   * record_listing_view(): views are counted for visitors too.
-- Reading is unchanged: an anonymous session reads what authenticated reads.
-- supabase/config.toml pins enable_anonymous_sign_ins = false; this is the
-- database's answer should a project turn them on.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- is_signed_in_user(): a user with an account, not an anonymous session
-- -----------------------------------------------------------------------------
create or replace function public.is_signed_in_user()
returns boolean
-- PL/pgSQL rather than SQL: policies call it on every write, and PL/pgSQL
-- keeps its plan for the session where a SQL function with SET is planned
-- again on every call.
language plpgsql
stable
set search_path = ''
as $$
begin
  return auth.uid() is not null
    and (auth.jwt() ->> 'is_anonymous') is distinct from 'true';
end
$$;
comment on function public.is_signed_in_user() is
  'True when the request carries a signed-in user with an account: auth.uid() is set and the JWT''s is_anonymous claim is not true (a missing claim is not anonymous). False for anonymous sign-ins, the anon key and the service connection. For use in write policies as (select public.is_signed_in_user())';
-- Callable by everyone: it tells the caller only what the caller is, and
-- policies evaluated for anon and authenticated call it as the client.
revoke execute on function public.is_signed_in_user() from public;
grant execute on function public.is_signed_in_user() to anon, authenticated, service_role;

-- -----------------------------------------------------------------------------
-- assert_signed_in(): the first line of every client-callable write
-- -----------------------------------------------------------------------------
create or replace function public.assert_signed_in(p_action text)
returns void
language plpgsql
stable
set search_path = ''
as $$
begin
  if public.is_client_request() and not public.is_signed_in_user() then
    raise exception 'Cannot %: an anonymous session cannot change anything; sign in with an account',
      p_action using errcode = '42501';
  end if;
end
$$;
comment on function public.assert_signed_in(text) is
  'Raises 42501 ("Cannot <p_action>: an anonymous session cannot change anything; sign in with an account") when a client (anon or authenticated) is not a signed-in user with an account (is_signed_in_user()): an anonymous sign-in, or the anon key without a user. Does nothing on the service connection. Called first by every RPC a client may call that writes';
-- Callable by everyone: it tells the caller only what the caller is, and an
-- invoker-rights function would call it as the client.
revoke execute on function public.assert_signed_in(text) from public;
grant execute on function public.assert_signed_in(text) to anon, authenticated, service_role;

-- -----------------------------------------------------------------------------
-- is_admin(): never for an anonymous session
-- -----------------------------------------------------------------------------
create or replace function public.is_admin() returns boolean
language plpgsql
stable
-- Definer rights: policies evaluated for anon call it too, and anon may not
-- call has_role() directly (it would tell who the admins are).
security definer
set search_path = ''
as $$
begin
  -- An anonymous session is nobody's account: a user_roles row for its id
  -- (which only the service connection could have written) grants nothing.
  return public.is_signed_in_user()
    and coalesce(public.has_role(auth.uid(), 'admin'), false);
end
$$;
comment on function public.is_admin() is
  'True when the signed-in caller is an admin (never for an anonymous session, whatever user_roles holds for its id); for use in policies';
revoke execute on function public.is_admin() from public;
grant execute on function public.is_admin() to anon, authenticated, service_role;

-- -----------------------------------------------------------------------------
-- Write policies: signed-in users only
-- -----------------------------------------------------------------------------
-- Each policy is recreated as it was, with (select public.is_signed_in_user())
-- in front of its using and with check expressions.

-- profiles (20261121000000_profiles_and_roles.sql)
drop policy if exists "Users can update their own profile" on public.profiles;
create policy "Users can update their own profile" on public.profiles
  for update to authenticated
  using ((select public.is_signed_in_user()) and (id = (select auth.uid())))
  with check ((select public.is_signed_in_user()) and (id = (select auth.uid())));
comment on policy "Users can update their own profile" on public.profiles is
  'A signed-in user (not an anonymous session) changes their own name and avatar';

-- listings (20261121001100_listings.sql)
drop policy if exists "Sellers can create their own listings" on public.listings;
create policy "Sellers can create their own listings" on public.listings
  for insert to authenticated
  with check ((select public.is_signed_in_user()) and (seller_id = (select auth.uid())));
comment on policy "Sellers can create their own listings" on public.listings is
  'A signed-in user (not an anonymous session) creates listings of their own';

drop policy if exists "Sellers can update their own listings and admins all" on public.listings;
create policy "Sellers can update their own listings and admins all" on public.listings
  for update to authenticated
  using (
    (select public.is_signed_in_user())
    and (seller_id = (select auth.uid()) or (select public.is_admin()))
  )
  with check (
    (select public.is_signed_in_user())
    and (seller_id = (select auth.uid()) or (select public.is_admin()))
  );
comment on policy "Sellers can update their own listings and admins all" on public.listings is
  'A signed-in seller (not an anonymous session) changes their own listings; admins change any (the review trigger keeps the state machine)';

drop policy if exists "Sellers can delete their unpublished listings, admins any"
  on public.listings;
create policy "Sellers can delete their unpublished listings, admins any"
  on public.listings
  for delete to authenticated
  using (
    (select public.is_signed_in_user())
    and (
      (seller_id = (select auth.uid()) and review_status in ('draft', 'rejected', 'archived'))
      or (select public.is_admin())
    )
  );
comment on policy "Sellers can delete their unpublished listings, admins any"
  on public.listings is
  'A signed-in seller (not an anonymous session) deletes their own draft, rejected or archived listings; admins delete any';

-- blurred_fields (20261121001300_blur_policy.sql)
drop policy if exists "Admins can change the blur policy" on public.blurred_fields;
create policy "Admins can change the blur policy" on public.blurred_fields
  for update to authenticated
  using ((select public.is_signed_in_user()) and (select public.is_admin()))
  with check ((select public.is_signed_in_user()) and (select public.is_admin()));
comment on policy "Admins can change the blur policy" on public.blurred_fields is
  'Signed-in admins switch the blur flags';

-- commission_tiers (20261121001400_commission.sql)
drop policy if exists "Admins can change commission rates" on public.commission_tiers;
create policy "Admins can change commission rates" on public.commission_tiers
  for update to authenticated
  using ((select public.is_signed_in_user()) and (select public.is_admin()))
  with check ((select public.is_signed_in_user()) and (select public.is_admin()));
comment on policy "Admins can change commission rates" on public.commission_tiers is
  'Signed-in admins change the tiers'' rates and descriptions';

-- notifications (20261123001300_notifications.sql)
drop policy if exists "Users can mark their own notifications read" on public.notifications;
create policy "Users can mark their own notifications read" on public.notifications
  for update to authenticated
  using ((select public.is_signed_in_user()) and (user_id = (select auth.uid())))
  with check ((select public.is_signed_in_user()) and (user_id = (select auth.uid())));
comment on policy "Users can mark their own notifications read" on public.notifications is
  'A signed-in user (not an anonymous session) sets read_at on their own notifications';

-- notification_preferences (20261123001300_notifications.sql)
drop policy if exists "Users can set their own notification preferences"
  on public.notification_preferences;
create policy "Users can set their own notification preferences"
  on public.notification_preferences
  for insert to authenticated
  with check ((select public.is_signed_in_user()) and (user_id = (select auth.uid())));
comment on policy "Users can set their own notification preferences"
  on public.notification_preferences is
  'A signed-in user (not an anonymous session) sets their own channels for a notification type';

drop policy if exists "Users can change their own notification preferences"
  on public.notification_preferences;
create policy "Users can change their own notification preferences"
  on public.notification_preferences
  for update to authenticated
  using ((select public.is_signed_in_user()) and (user_id = (select auth.uid())))
  with check ((select public.is_signed_in_user()) and (user_id = (select auth.uid())));
comment on policy "Users can change their own notification preferences"
  on public.notification_preferences is
  'A signed-in user (not an anonymous session) switches their own channels';

drop policy if exists "Users can reset their own notification preferences"
  on public.notification_preferences;
create policy "Users can reset their own notification preferences"
  on public.notification_preferences
  for delete to authenticated
  using ((select public.is_signed_in_user()) and (user_id = (select auth.uid())));
comment on policy "Users can reset their own notification preferences"
  on public.notification_preferences is
  'A signed-in user (not an anonymous session) deletes their own preferences, back to the defaults';

-- admin_notification_types (20261123001400_admin_notices.sql)
drop policy if exists "Admins can set the cadence of admin notifications"
  on public.admin_notification_types;
create policy "Admins can set the cadence of admin notifications"
  on public.admin_notification_types
  for update to authenticated
  using ((select public.is_signed_in_user()) and (select public.is_admin()))
  with check ((select public.is_signed_in_user()) and (select public.is_admin()));
comment on policy "Admins can set the cadence of admin notifications"
  on public.admin_notification_types is
  'Signed-in admins set cron_schedule (the trigger keeps job_schedules in step)';

-- offers (20261123001900_offers.sql)
drop policy if exists "Buyers can make offers on listings on sale that are not their own"
  on public.offers;
create policy "Buyers can make offers on listings on sale that are not their own"
  on public.offers
  for insert to authenticated
  with check (
    (select public.is_signed_in_user())
    and buyer_id = (select auth.uid())
    and status = 'pending'
    and deal_id is null
    and public.listing_open_for_offers(listing_id)
    -- A seller sees their own listings through the listings policy.
    and not exists (
      select 1 from public.listings l
      where l.id = offers.listing_id and l.seller_id = (select auth.uid())
    )
  );
comment on policy "Buyers can make offers on listings on sale that are not their own"
  on public.offers is
  'A signed-in buyer (not an anonymous session) inserts a pending offer of their own on an approved listing of someone else with no active deal';

-- price_alerts (20261123002200_price_alerts.sql)
drop policy if exists "Users can create their own price alerts" on public.price_alerts;
create policy "Users can create their own price alerts" on public.price_alerts
  for insert to authenticated
  with check (
    (select public.is_signed_in_user())
    and user_id = (select auth.uid())
    and (listing_id is null or public.listing_open_for_price_alerts(listing_id))
  );
comment on policy "Users can create their own price alerts" on public.price_alerts is
  'A signed-in user (not an anonymous session) saves alerts of their own: saved searches, and listing alerts on approved listings that are not their own';

drop policy if exists "Users can change their own price alerts" on public.price_alerts;
create policy "Users can change their own price alerts" on public.price_alerts
  for update to authenticated
  using ((select public.is_signed_in_user()) and (user_id = (select auth.uid())))
  with check ((select public.is_signed_in_user()) and (user_id = (select auth.uid())));
comment on policy "Users can change their own price alerts" on public.price_alerts is
  'A signed-in user (not an anonymous session) changes their own alerts (prices, search terms, channels, active; not the listing watched)';

drop policy if exists "Users can delete their own price alerts" on public.price_alerts;
create policy "Users can delete their own price alerts" on public.price_alerts
  for delete to authenticated
  using ((select public.is_signed_in_user()) and (user_id = (select auth.uid())));
comment on policy "Users can delete their own price alerts" on public.price_alerts is
  'A signed-in user (not an anonymous session) deletes their own alerts (and with them their events)';

-- sponsored_listings (20261123002400_sponsored_listings.sql)
drop policy if exists "Admins can schedule sponsored placements" on public.sponsored_listings;
create policy "Admins can schedule sponsored placements" on public.sponsored_listings
  for insert to authenticated
  with check ((select public.is_signed_in_user()) and (select public.is_admin()));
comment on policy "Admins can schedule sponsored placements" on public.sponsored_listings is
  'Signed-in admins insert placements (scheduled; the triggers check the seller, the window and overlaps)';

drop policy if exists "Admins can reschedule and cancel sponsored placements"
  on public.sponsored_listings;
create policy "Admins can reschedule and cancel sponsored placements"
  on public.sponsored_listings
  for update to authenticated
  using ((select public.is_signed_in_user()) and (select public.is_admin()))
  with check ((select public.is_signed_in_user()) and (select public.is_admin()));
comment on policy "Admins can reschedule and cancel sponsored placements"
  on public.sponsored_listings is
  'Signed-in admins move a scheduled placement''s window or cancel a placement (the state machine trigger allows nothing else)';

-- -----------------------------------------------------------------------------
-- cancel_deal() (20261123001700_deal_states.sql)
-- -----------------------------------------------------------------------------
create or replace function public.cancel_deal(p_deal uuid)
returns public.deals
language plpgsql
-- Definer rights: clients may not execute transition_deal(); this checks
-- that the caller is a participant or an admin first.
security definer
set search_path = ''
as $$
declare
  v_user uuid := auth.uid();
begin
  perform public.assert_signed_in('cancel this deal');
  if public.is_client_request() and not (
    public.is_deal_participant(p_deal, v_user) or public.is_admin()
  ) then
    raise exception 'Cannot cancel deal "%": only its buyer, its seller and admins may', p_deal
      using errcode = '42501';
  end if;
  return public.transition_deal(p_deal, 'cancelled', 'cancelled', null, v_user);
end
$$;
comment on function public.cancel_deal(uuid) is
  'Cancels a deal that is still pending payment (PT409 otherwise); for its buyer, its seller, admins and the service connection (42501 for others and for anonymous sessions)';
revoke execute on function public.cancel_deal(uuid) from public, anon;
grant execute on function public.cancel_deal(uuid) to authenticated, service_role;

-- -----------------------------------------------------------------------------
-- accept_offer(), decline_offer(), withdraw_offer() (20261123001900_offers.sql)
-- -----------------------------------------------------------------------------
create or replace function public.accept_offer(p_offer uuid)
returns uuid
language plpgsql
-- Definer rights: a seller may neither update offers nor insert deals; this
-- checks that the caller is the listing's seller (or the service
-- connection) first.
security definer
set search_path = ''
as $$
declare
  v_listing_id uuid;
  v_listing public.listings;
  v_offer public.offers;
  v_cause text;
  v_deal uuid;
begin
  perform public.assert_signed_in('accept this offer');
  -- listing_id never changes, so it may be read before the locks.
  select o.listing_id into v_listing_id from public.offers o where o.id = p_offer;
  if not found then
    raise exception 'Cannot accept offer "%": it does not exist', p_offer using errcode = 'P0002';
  end if;

  -- The lock order: the listing, then the offer. Every accept on the listing
  -- queues here; the next one in finds what the previous one committed.
  select * into v_listing from public.listings l where l.id = v_listing_id for update;
  if not found then
    raise exception 'Cannot accept offer "%": it does not exist', p_offer using errcode = 'P0002';
  end if;
  if public.is_client_request() and v_listing.seller_id is distinct from auth.uid() then
    raise exception 'Cannot accept offer "%": only the listing''s seller may', p_offer
      using errcode = '42501';
  end if;
  select * into v_offer from public.offers o where o.id = p_offer for update;
  if not found then
    raise exception 'Cannot accept offer "%": it does not exist', p_offer using errcode = 'P0002';
  end if;

  perform public.assert_offer_pending(v_offer, 'accept');
  if v_listing.review_status <> 'approved' then
    raise exception 'Cannot accept offer "%": the listing is not on sale', p_offer
      using errcode = 'PT409';
  end if;
  if not public.listing_open_for_offers(v_listing.id) then
    raise exception 'Cannot accept offer "%": the listing already has a deal in progress', p_offer
      using errcode = 'PT409';
  end if;
  if v_offer.currency <> v_listing.currency then
    raise exception 'Cannot accept offer "%": the listing is now priced in "%", not "%"',
      p_offer, v_listing.currency, v_offer.currency using errcode = 'PT409';
  end if;

  -- The deal's first event (deals_record_creation) says why it exists.
  v_cause := current_setting('marketplace.deal_cause', true);
  perform set_config('marketplace.deal_cause', 'offer_accepted', true);
  insert into public.deals (listing_id, buyer_id, seller_id, amount, currency, offer_id)
  values (v_listing.id, v_offer.buyer_id, v_listing.seller_id, v_offer.amount, v_offer.currency,
          v_offer.id)
  returning id into v_deal;
  perform set_config('marketplace.deal_cause', coalesce(v_cause, ''), true);

  update public.offers o set status = 'accepted', deal_id = v_deal where o.id = p_offer;
  -- The rivals: declined, or expired when they had already lapsed.
  update public.offers o
  set status = case when o.expires_at <= now() then 'expired' else 'declined' end
  where o.listing_id = v_listing.id and o.status = 'pending' and o.id <> p_offer;
  return v_deal;
end
$$;
comment on function public.accept_offer(uuid) is
  'The listing''s seller (or the service connection; 42501 for others and for anonymous sessions) accepts a pending, unexpired offer on an approved listing without an active deal (PT409 otherwise; P0002 for an unknown offer): creates the deal at the offered amount and currency (deal_events cause offer_accepted), marks the offer accepted with its deal, declines the listing''s other pending offers and returns the deal''s id. Serialized per listing by a row lock, so concurrent accepts create one deal';
revoke execute on function public.accept_offer(uuid) from public, anon;
grant execute on function public.accept_offer(uuid) to authenticated, service_role;

create or replace function public.decline_offer(p_offer uuid)
returns void
language plpgsql
-- Definer rights: a seller may not update offers; this checks that the
-- caller is the listing's seller (or the service connection) first.
security definer
set search_path = ''
as $$
declare
  v_seller uuid;
  v_offer public.offers;
begin
  perform public.assert_signed_in('decline this offer');
  select l.seller_id into v_seller
  from public.offers o join public.listings l on l.id = o.listing_id
  where o.id = p_offer;
  if not found then
    raise exception 'Cannot decline offer "%": it does not exist', p_offer using errcode = 'P0002';
  end if;
  if public.is_client_request() and v_seller is distinct from auth.uid() then
    raise exception 'Cannot decline offer "%": only the listing''s seller may', p_offer
      using errcode = '42501';
  end if;
  select * into v_offer from public.offers o where o.id = p_offer for update;
  if not found then
    raise exception 'Cannot decline offer "%": it does not exist', p_offer using errcode = 'P0002';
  end if;
  perform public.assert_offer_pending(v_offer, 'decline');
  update public.offers o set status = 'declined' where o.id = p_offer;
end
$$;
comment on function public.decline_offer(uuid) is
  'The listing''s seller (or the service connection; 42501 for others and for anonymous sessions) declines a pending, unexpired offer (PT409 otherwise; P0002 for an unknown offer)';
revoke execute on function public.decline_offer(uuid) from public, anon;
grant execute on function public.decline_offer(uuid) to authenticated, service_role;

create or replace function public.withdraw_offer(p_offer uuid)
returns void
language plpgsql
-- Definer rights: a buyer may not update offers (which would let them set
-- any status); this checks that the caller is the offer's buyer (or the
-- service connection) first and makes the one change a buyer may make.
security definer
set search_path = ''
as $$
declare
  v_buyer uuid;
  v_offer public.offers;
begin
  perform public.assert_signed_in('withdraw this offer');
  select o.buyer_id into v_buyer from public.offers o where o.id = p_offer;
  if not found then
    raise exception 'Cannot withdraw offer "%": it does not exist', p_offer using errcode = 'P0002';
  end if;
  if public.is_client_request() and v_buyer is distinct from auth.uid() then
    raise exception 'Cannot withdraw offer "%": only its buyer may', p_offer
      using errcode = '42501';
  end if;
  select * into v_offer from public.offers o where o.id = p_offer for update;
  if not found then
    raise exception 'Cannot withdraw offer "%": it does not exist', p_offer using errcode = 'P0002';
  end if;
  perform public.assert_offer_pending(v_offer, 'withdraw');
  update public.offers o set status = 'withdrawn' where o.id = p_offer;
end
$$;
comment on function public.withdraw_offer(uuid) is
  'The offer''s buyer (or the service connection; 42501 for others and for anonymous sessions) withdraws a pending, unexpired offer (PT409 otherwise; P0002 for an unknown offer)';
revoke execute on function public.withdraw_offer(uuid) from public, anon;
grant execute on function public.withdraw_offer(uuid) to authenticated, service_role;

-- -----------------------------------------------------------------------------
-- confirm_deal_documents() (20261123002700_deal_documents.sql)
-- -----------------------------------------------------------------------------
create or replace function public.confirm_deal_documents(p_deal uuid default null)
returns setof public.deal_documents
language plpgsql
-- Definer rights: reads storage.objects and writes the register, which
-- clients cannot; checks that a client is a participant (or admin) first.
security definer
set search_path = ''
as $$
begin
  perform public.assert_signed_in('confirm uploads');
  if public.is_client_request() then
    if p_deal is null then
      raise exception 'Cannot confirm uploads: name the deal' using errcode = '22023';
    end if;
    if not (public.is_deal_participant(p_deal, auth.uid()) or public.is_admin()) then
      raise exception 'Cannot confirm the uploads of deal "%": only its buyer, its seller and admins may', p_deal
        using errcode = '42501';
    end if;
  end if;
  return query
    update public.deal_documents dd set
      status = 'uploaded',
      size_bytes = coalesce((o.metadata ->> 'size')::bigint, dd.size_bytes),
      content_type = coalesce(nullif(o.metadata ->> 'mimetype', ''), dd.content_type),
      uploaded_at = coalesce(o.created_at, now())
    from storage.objects o
    where o.bucket_id = 'deal-documents'
      and o.name = dd.path
      and dd.status = 'pending'
      and (p_deal is null or dd.deal_id = p_deal)
    returning dd.*;
end
$$;
comment on function public.confirm_deal_documents(uuid) is
  'Marks the pending uploads of deal p_deal (every deal when null, service connection only) whose object exists in deal-documents as uploaded, with the stored size and type; returns the rows it confirmed. For the deal''s participants, admins and the service connection (42501 for others and for anonymous sessions)';
revoke execute on function public.confirm_deal_documents(uuid) from public, anon;
grant execute on function public.confirm_deal_documents(uuid) to authenticated, service_role;

-- -----------------------------------------------------------------------------
-- The handover's four actions (20261123002800_deal_handover.sql)
-- -----------------------------------------------------------------------------
-- The check comes first in each public function, before handover_step_for()
-- or lock_deal_for_handover() looks anything up (an unknown step would
-- otherwise answer "no such handover step").
create or replace function public.deliver_handover_step(p_step uuid, p_note text default null)
returns public.deal_handover_steps
language plpgsql
-- Definer rights: clients may not write deal_handover_steps; the caller's
-- session and side of the deal are checked first.
security definer
set search_path = ''
as $$
declare
  v_step public.deal_handover_steps;
  v_note text := nullif(btrim(p_note), '');
begin
  perform public.assert_signed_in('deliver this step');
  v_step := public.handover_step_for(p_step, 'seller', 'deliver this step');
  if length(v_note) > 2000 then
    raise exception 'Cannot deliver this step: the note is longer than 2000 characters'
      using errcode = '22023';
  end if;
  if v_step.status not in ('pending', 'disputed') then
    raise exception 'Cannot deliver the step "%": it is %', v_step.title, v_step.status
      using errcode = 'PT409';
  end if;
  update public.deal_handover_steps set
    status = 'delivered',
    delivered_at = now(),
    delivered_by = auth.uid(),
    delivery_note = v_note
  where id = p_step
  returning * into v_step;
  return v_step;
end
$$;
comment on function public.deliver_handover_step(uuid, text) is
  'The seller marks handover step p_step delivered (from pending, or again after a dispute), with an optional note of at most 2000 characters; 42501 for anyone but the deal''s seller and for anonymous sessions, PT409 when the step or the deal does not allow it';
revoke execute on function public.deliver_handover_step(uuid, text) from public, anon;
grant execute on function public.deliver_handover_step(uuid, text) to authenticated, service_role;

create or replace function public.confirm_handover_step(p_step uuid)
returns public.deal_handover_steps
language plpgsql
-- Definer rights: clients may not write deal_handover_steps; the caller's
-- session and side of the deal are checked first.
security definer
set search_path = ''
as $$
declare
  v_step public.deal_handover_steps;
begin
  perform public.assert_signed_in('confirm this step');
  v_step := public.handover_step_for(p_step, 'buyer', 'confirm this step');
  if v_step.status <> 'delivered' then
    raise exception 'Cannot confirm the step "%": it is %', v_step.title, v_step.status
      using errcode = 'PT409';
  end if;
  update public.deal_handover_steps set
    status = 'confirmed',
    confirmed_at = now(),
    confirmed_by = auth.uid(),
    confirmation = 'buyer'
  where id = p_step
  returning * into v_step;
  return v_step;
end
$$;
comment on function public.confirm_handover_step(uuid) is
  'The buyer confirms delivered handover step p_step; 42501 for anyone but the deal''s buyer and for anonymous sessions, PT409 when the step is not delivered or the deal does not allow it';
revoke execute on function public.confirm_handover_step(uuid) from public, anon;
grant execute on function public.confirm_handover_step(uuid) to authenticated, service_role;

create or replace function public.dispute_handover_step(p_step uuid, p_reason text)
returns public.deal_handover_steps
language plpgsql
-- Definer rights: clients may not write deal_handover_steps; the caller's
-- session and side of the deal are checked first.
security definer
set search_path = ''
as $$
declare
  v_step public.deal_handover_steps;
  v_reason text := nullif(btrim(p_reason), '');
begin
  perform public.assert_signed_in('dispute this step');
  v_step := public.handover_step_for(p_step, 'buyer', 'dispute this step');
  if v_reason is null or length(v_reason) > 2000 then
    raise exception 'Cannot dispute this step: give a reason of 1 to 2000 characters'
      using errcode = '22023';
  end if;
  if v_step.status <> 'delivered' then
    raise exception 'Cannot dispute the step "%": it is %', v_step.title, v_step.status
      using errcode = 'PT409';
  end if;
  update public.deal_handover_steps set
    status = 'disputed',
    disputed_at = now(),
    dispute_reason = v_reason
  where id = p_step
  returning * into v_step;
  return v_step;
end
$$;
comment on function public.dispute_handover_step(uuid, text) is
  'The buyer disputes delivered handover step p_step with a reason (1 to 2000 characters, 22023 otherwise); the seller delivers it again. 42501 for anyone but the deal''s buyer and for anonymous sessions, PT409 when the step is not delivered or the deal does not allow it';
revoke execute on function public.dispute_handover_step(uuid, text) from public, anon;
grant execute on function public.dispute_handover_step(uuid, text) to authenticated, service_role;

create or replace function public.add_handover_step(p_deal uuid, p_title text, p_details text default null)
returns public.deal_handover_steps
language plpgsql
-- Definer rights: clients may not write deal_handover_steps; the caller's
-- session and side of the deal are checked first.
security definer
set search_path = ''
as $$
declare
  v_title text := nullif(btrim(p_title), '');
  v_details text := nullif(btrim(p_details), '');
  v_step public.deal_handover_steps;
  v_count integer;
begin
  perform public.assert_signed_in('add a handover step');
  perform public.lock_deal_for_handover(p_deal, 'seller', 'add a handover step');
  if v_title is null or length(v_title) > 200 or length(v_details) > 2000 then
    raise exception 'Cannot add the step: a title of 1 to 200 characters and details of at most 2000 are needed'
      using errcode = '22023';
  end if;
  -- The deal's share lock does not serialize two sellers' tabs: the row
  -- locks on the checklist do.
  perform 1 from public.deal_handover_steps where deal_id = p_deal for update;
  select count(*) into v_count from public.deal_handover_steps where deal_id = p_deal;
  if v_count >= 50 then
    raise exception 'Cannot add the step: a checklist has at most 50 steps' using errcode = 'PT409';
  end if;
  insert into public.deal_handover_steps (deal_id, position, kind, title, details, created_by)
  values (
    p_deal,
    (select coalesce(max(position), 0) + 1 from public.deal_handover_steps where deal_id = p_deal),
    'custom', v_title, v_details, auth.uid()
  )
  returning * into v_step;
  return v_step;
end
$$;
comment on function public.add_handover_step(uuid, text, text) is
  'The seller adds a custom step (title 1 to 200 characters, details at most 2000; 22023 otherwise) at the end of deal p_deal''s checklist, at most 50 steps, while the deal is pending payment, funded or in handover; 42501 for anyone but the deal''s seller and for anonymous sessions';
revoke execute on function public.add_handover_step(uuid, text, text) from public, anon;
grant execute on function public.add_handover_step(uuid, text, text) to authenticated, service_role;
