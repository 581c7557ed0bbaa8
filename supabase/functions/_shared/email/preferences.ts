/**
 * Notification preferences (`public.notification_preferences`): whether a
 * user gets a type of notice by e-mail and in the app. No row: the type's
 * defaults from `shared/notifications.ts`.
 *
 * @module
 */
import {
  EMAIL_TYPES,
  NOTIFICATION_TYPES,
  type NotificationType,
} from "../../../../shared/notifications.ts";
import type { Sql } from "../platform/db.ts";

/** The channels a user gets one notification type on. */
export interface Channels {
  email: boolean;
  inApp: boolean;
}

/** The channels `userId` gets notices of `type` on. */
export async function channelsFor(
  sql: Sql,
  userId: string,
  type: NotificationType,
): Promise<Channels> {
  const row = await sql.maybeOne<{ email: boolean; in_app: boolean }>(
    "select email, in_app from public.notification_preferences where user_id = $1 and type = $2",
    [userId, type],
  );
  const defaults = NOTIFICATION_TYPES[type];
  return row
    ? { email: row.email, inApp: row.in_app }
    : { email: defaults.email, inApp: defaults.inApp };
}

/**
 * The notification type whose e-mail preference `emailType` honours (null:
 * none, always sent). A label is matched as written, then in snake case
 * (`payoutReleased`, `Payout released` and `payout-released` are
 * `payout_released`), so a caller's spelling does not bypass a preference.
 */
export function preferenceOf(emailType: string): NotificationType | null {
  for (const label of [emailType, snakeCase(emailType)]) {
    if (Object.hasOwn(EMAIL_TYPES, label)) return EMAIL_TYPES[label as keyof typeof EMAIL_TYPES];
  }
  return null;
}

/**
 * `label` in snake case: words split at case changes and at runs of spaces,
 * hyphens, dots and underscores, which become one underscore (none at the
 * ends).
 */
function snakeCase(label: string): string {
  return label
    .replace(/([\p{Ll}\d])(\p{Lu})/gu, "$1_$2")
    .replace(/[\s._-]+/g, "_")
    .replace(/^_|_$/g, "")
    .toLowerCase();
}

/**
 * Why an e-mail of `emailType` to `to` (for `userId`, or the user with that
 * address) must not be sent, or null when it may be.
 */
export async function emailBlockedBy(
  sql: Sql,
  message: {
    emailType: string;
    to: string;
    userId?: string | null;
    preference?: NotificationType | null;
  },
): Promise<string | null> {
  const type = message.preference === undefined
    ? preferenceOf(message.emailType)
    : message.preference;
  if (type === null) return null;
  let userId = message.userId ?? null;
  if (userId === null) {
    const user = await sql.maybeOne<{ id: string }>(
      "select id from public.profiles where lower(email) = lower($1) limit 1",
      [message.to],
    );
    userId = user?.id ?? null;
  }
  if (userId === null) return null;
  const channels = await channelsFor(sql, userId, type);
  return channels.email ? null : `The recipient switched off e-mails of type "${type}"`;
}
