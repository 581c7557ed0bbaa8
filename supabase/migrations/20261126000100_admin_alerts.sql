-- =============================================================================
-- Admin alerts: the notification type of what an admin must act on
--
-- One notification type joins the list (shared/notifications.ts is the
-- contract; a test keeps the SQL lists equal to it):
--   admin_alerts  money or abuse that needs an admin now: a payment the
--                 platform returned on its own (or could not), a dispute
--                 after a deal's money left escrow, funds held in escrow
--                 close to the processor's limit, the contact form's hourly
--                 ceiling reached. On by default for both channels.
-- The check constraints are recreated with the longer list.
-- =============================================================================

alter table public.notifications
  drop constraint if exists notifications_type_known;
alter table public.notifications
  add constraint notifications_type_known check (
    type in ('account', 'listing_review', 'new_listings', 'payments', 'messages', 'admin_digest',
             'price_alerts', 'sponsored', 'handover', 'admin_alerts')
  );
comment on constraint notifications_type_known on public.notifications is
  'A notification is of a known type (shared/notifications.ts)';

alter table public.notification_preferences
  drop constraint if exists notification_preferences_type_known;
alter table public.notification_preferences
  add constraint notification_preferences_type_known check (
    type in ('account', 'listing_review', 'new_listings', 'payments', 'messages', 'admin_digest',
             'price_alerts', 'sponsored', 'handover', 'admin_alerts')
  );
comment on constraint notification_preferences_type_known on public.notification_preferences is
  'A preference is for a known notification type (shared/notifications.ts)';
