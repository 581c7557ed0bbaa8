/**
 * Conversations between a listing's buyer and its seller, as the frontend
 * calls them (supabase-js `rpc` and `from` under RLS; `docs/conversations.md`):
 * the message rules and limits, the e-mail cadence, and which messages are
 * unread for whom. The zod schemas of each RPC's arguments and of the rows
 * are in `conversation_schemas.ts`.
 *
 * @module
 */

/** What {@linkcode isUnread} reads of a conversation (a `Conversation` row has it). */
export interface ReadMarks {
  buyer_id: string;
  seller_id: string;
  buyer_last_read_at: string | null;
  seller_last_read_at: string | null;
}

/** What {@linkcode isUnread} reads of a message (a `Message` row has it). */
export interface SentMessage {
  sender_id: string;
  created_at: string;
}

/** The longest message, in characters after trimming (the shortest is 1). */
export const MESSAGE_MAX_CHARS = 4000;

/** The longest reason given when blocking a conversation. */
export const BLOCK_REASON_MAX = 500;

/** The longest reason given when reporting a conversation (one is required). */
export const REPORT_REASON_MAX = 2000;

/**
 * The default per-user limits (`public.client_limits`; an operator may
 * change them, see docs/functions.md). Over one, the RPC fails with
 * SQLSTATE PT429 (HTTP 429) and a message saying when to try again.
 */
export const CONVERSATION_LIMITS = {
  /** `message:per_minute`: messages a user sends per minute. */
  messagesPerMinute: 20,
  /** `message:per_day`: messages a user sends per day. */
  messagesPerDay: 300,
  /** `conversation:per_day`: conversations a buyer starts per day. */
  conversationsPerDay: 50,
  /** `conversation_report:per_day`: conversations a user reports per day. */
  reportsPerDay: 20,
} as const;

/**
 * When the other participant is e-mailed about unread messages: once a
 * message is still unread this many minutes after it was sent…
 */
export const UNREAD_EMAIL_DELAY_MINUTES = 15;
/** …and at most once per conversation within this many minutes. */
export const UNREAD_EMAIL_MIN_INTERVAL_MINUTES = 60;

/** `userId`'s read mark in `conversation` (null: nothing read yet, or not a participant). */
export function readMarkOf(conversation: ReadMarks, userId: string): string | null {
  if (userId === conversation.buyer_id) return conversation.buyer_last_read_at;
  if (userId === conversation.seller_id) return conversation.seller_last_read_at;
  return null;
}

/**
 * A timestamp as PostgREST writes it (`2026-11-28T05:38:19.031174+00:00`)
 * in microseconds since the epoch: the database's precision, which
 * `Date.parse` would cut to milliseconds.
 */
export function timestampMicros(timestamp: string): number {
  const fraction = /\.(\d{1,6})/.exec(timestamp)?.[1] ?? "";
  const whole = Date.parse(timestamp.replace(/\.\d+/, ""));
  return whole * 1000 + Number(fraction.padEnd(6, "0"));
}

/**
 * Whether `message` is unread for participant `userId`: sent by the other
 * side after their read mark (as the database counts it, to the microsecond).
 */
export function isUnread(message: SentMessage, conversation: ReadMarks, userId: string): boolean {
  if (message.sender_id === userId) return false;
  const mark = readMarkOf(conversation, userId);
  return mark === null || timestampMicros(message.created_at) > timestampMicros(mark);
}
