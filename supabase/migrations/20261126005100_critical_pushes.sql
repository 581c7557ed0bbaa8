-- =============================================================================
-- Only critical notices are pushed
--
-- Realtime carries what a user must see at once: their subscription, offers,
-- deals and their listings' review status (the tables' own broadcast
-- triggers). In-app notices were broadcast on every insert, so digests,
-- price-alert matches and admin alerts went out live as well; those are
-- non-critical and the app reads them by polling the notifications table.
--
-- notifications_broadcast_insert now fires only for the types that belong
-- to those critical changes (shared/notifications.ts, `pushed: true`; a test
-- inserts one notice of every type and keeps the two equal):
--   listing_review  a listing approved or sent back
--   payments        a deal's payment, payout or refund
--   handover        a deal's handover steps
-- Every other type is written and polled, never broadcast.
-- =============================================================================

drop trigger if exists notifications_broadcast_insert on public.notifications;
create trigger notifications_broadcast_insert
  after insert on public.notifications
  for each row
  when (new.type in ('listing_review', 'payments', 'handover'))
  execute function public.broadcast_notification();
comment on trigger notifications_broadcast_insert on public.notifications is
  'Pushes a new notice to its user (Realtime, private topic user:<user_id>) when its type is critical: listing_review, payments, handover (shared/notifications.ts pushed); the rest are polled';
