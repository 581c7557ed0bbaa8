/**
 * zod schemas of the conversation RPCs and rows (`docs/conversations.md`).
 * The database is the authority (the conversations migration); these give
 * a form the same verdict before the call.
 *
 * @module
 */
import { z } from "zod";
import { BLOCK_REASON_MAX, MESSAGE_MAX_CHARS, REPORT_REASON_MAX } from "./conversations.ts";
import { UserText } from "./schemas.ts";

/** A message's text: 1 to 4000 characters after trimming, no control characters but tab and line feed. */
export const MessageBody = UserText(MESSAGE_MAX_CHARS, true);

/** `rpc("start_conversation", args)`: the buyer's conversation on a listing (the same id every time). */
export const StartConversationArgs = z.object({ p_listing: z.uuid() });
/** The arguments of `start_conversation`. */
export type StartConversationArgs = z.input<typeof StartConversationArgs>;

/** `rpc("send_message", args)`: a participant writes; answers the message's id. */
export const SendMessageArgs = z.object({ p_conversation: z.uuid(), p_body: MessageBody });
/** The arguments of `send_message`. */
export type SendMessageArgs = z.input<typeof SendMessageArgs>;

/** `rpc("mark_conversation_read", args)`: the caller has read everything so far. */
export const MarkConversationReadArgs = z.object({ p_conversation: z.uuid() });
/** The arguments of `mark_conversation_read`. */
export type MarkConversationReadArgs = z.input<typeof MarkConversationReadArgs>;

/** `rpc("block_conversation", args)`: either participant closes it for good. */
export const BlockConversationArgs = z.object({
  p_conversation: z.uuid(),
  p_reason: UserText(BLOCK_REASON_MAX, false).optional(),
});
/** The arguments of `block_conversation`. */
export type BlockConversationArgs = z.input<typeof BlockConversationArgs>;

/** `rpc("report_conversation", args)`: a participant alerts the admins; answers the report's id. */
export const ReportConversationArgs = z.object({
  p_conversation: z.uuid(),
  p_reason: UserText(REPORT_REASON_MAX, true),
});
/** The arguments of `report_conversation`. */
export type ReportConversationArgs = z.input<typeof ReportConversationArgs>;

/** A row of `conversations` as its participants read it. */
export const Conversation = z.object({
  id: z.uuid(),
  listing_id: z.uuid(),
  buyer_id: z.uuid(),
  seller_id: z.uuid(),
  created_at: z.string(),
  last_message_at: z.string().nullable(),
  buyer_last_read_at: z.string().nullable(),
  seller_last_read_at: z.string().nullable(),
  closed_at: z.string().nullable(),
  closed_by: z.uuid().nullable(),
  close_reason: z.string().nullable(),
});
/** A conversation. */
export type Conversation = z.infer<typeof Conversation>;

/** A row of `messages`. */
export const Message = z.object({
  id: z.uuid(),
  conversation_id: z.uuid(),
  sender_id: z.uuid(),
  body: z.string(),
  created_at: z.string(),
});
/** A message. */
export type Message = z.infer<typeof Message>;
