-- =============================================================================
-- Notice types of the scheduled jobs: price alerts and sponsored placements
--
-- Two notification types join the list (shared/notifications.ts is the
-- contract; a test keeps the SQL lists equal to it):
--   price_alerts  matches of a user's price alerts and saved searches
--                 (run-price-alerts), on by default for both channels;
--   sponsored     a seller's sponsored placement starting and about to end
--                 (send-sponsored-notifications), on by default.
-- The check constraints are recreated with the longer list.
-- =============================================================================

alter table public.notifications
  drop constraint if exists notifications_type_known;
alter table public.notifications
  add constraint notifications_type_known check (
    type in ('account', 'listing_review', 'new_listings', 'payments', 'messages', 'admin_digest',
             'price_alerts', 'sponsored')
  );
comment on constraint notifications_type_known on public.notifications is
  'A notification is of a known type (shared/notifications.ts)';

alter table public.notification_preferences
  drop constraint if exists notification_preferences_type_known;
alter table public.notification_preferences
  add constraint notification_preferences_type_known check (
    type in ('account', 'listing_review', 'new_listings', 'payments', 'messages', 'admin_digest',
             'price_alerts', 'sponsored')
  );
comment on constraint notification_preferences_type_known on public.notification_preferences is
  'A preference is for a known notification type (shared/notifications.ts)';
