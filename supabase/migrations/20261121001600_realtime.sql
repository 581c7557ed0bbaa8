-- =============================================================================
-- Realtime: critical changes pushed to each user's private topic
--
-- Triggers broadcast subscription changes and listing review status changes
-- with realtime.broadcast_changes() to the private topic 'user:<user id>' of
-- the user concerned. A policy on realtime.messages lets a signed-in user
-- join and read only their own topic. Non-critical changes are not pushed;
-- the client polls for them.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- Subscriptions: every insert, update and delete, to the subscriber
-- -----------------------------------------------------------------------------
create or replace function public.broadcast_subscription_change()
returns trigger
language plpgsql
-- Definer rights: the writer (often the service connection, sometimes a
-- job's role) may not insert into realtime.messages itself.
security definer
set search_path = ''
as $$
begin
  perform realtime.broadcast_changes(
    'user:' || coalesce(new.user_id, old.user_id)::text,
    tg_op,
    tg_op,
    tg_table_name,
    tg_table_schema,
    new,
    old
  );
  return null;
end
$$;
comment on function public.broadcast_subscription_change() is
  'Trigger on subscriptions: broadcasts the change to the private topic user:<user_id>';
revoke execute on function public.broadcast_subscription_change() from public, anon, authenticated;

drop trigger if exists subscriptions_broadcast_change on public.subscriptions;
create trigger subscriptions_broadcast_change
  after insert or update or delete on public.subscriptions
  for each row execute function public.broadcast_subscription_change();

-- -----------------------------------------------------------------------------
-- Listings: review status changes, to the seller
-- -----------------------------------------------------------------------------
create or replace function public.broadcast_listing_status_change()
returns trigger
language plpgsql
-- Definer rights: sellers and admins change status through RLS as
-- authenticated, which may not insert into realtime.messages.
security definer
set search_path = ''
as $$
begin
  perform realtime.broadcast_changes(
    'user:' || new.seller_id::text,
    tg_op,
    tg_op,
    tg_table_name,
    tg_table_schema,
    new,
    old
  );
  return null;
end
$$;
comment on function public.broadcast_listing_status_change() is
  'Trigger on listings: broadcasts a review status change to the seller''s private topic user:<seller_id>';
revoke execute on function public.broadcast_listing_status_change()
  from public, anon, authenticated;

drop trigger if exists listings_broadcast_status_change on public.listings;
create trigger listings_broadcast_status_change
  after update of review_status on public.listings
  for each row
  when (old.review_status is distinct from new.review_status)
  execute function public.broadcast_listing_status_change();

-- -----------------------------------------------------------------------------
-- realtime.messages: a user reads only their own topic
-- -----------------------------------------------------------------------------
-- Realtime authorizes a join by setting realtime.topic (the channel) and the
-- user's claims, then reading realtime.messages under these policies. The
-- row's topic must be the user's own, and so must the channel being joined
-- when there is one, so that the user's own stored messages never authorize
-- a join to another topic. (current_setting is what realtime.topic() reads.)
drop policy if exists "Users can receive broadcasts on their own topic" on realtime.messages;
create policy "Users can receive broadcasts on their own topic" on realtime.messages
  for select to authenticated
  using (
    topic = 'user:' || (select auth.uid())::text
    and topic = coalesce(nullif((select current_setting('realtime.topic', true)), ''), topic)
  );
