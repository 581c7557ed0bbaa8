/**
 * E-mails about conversations: to a participant, the other side's messages
 * still unread 15 minutes after they were sent; to each admin, a reported
 * conversation. Messages are user input: like every value, they are
 * escaped by the renderer. The participants are "the buyer" and "the
 * seller", never a name or an address: a conversation does not tell either
 * side who the other is (the plan blur may hide the seller).
 *
 * @module
 */
import { UNREAD_EMAIL_DELAY_MINUTES } from "../../../../../shared/conversations.ts";
import { countOf, formatUtc } from "../../lib/format.ts";
import type { EmailContent } from "../render.ts";

/** Which side of a conversation someone is. */
export type ConversationSide = "buyer" | "seller";

/** A message as the e-mail quotes it. */
export interface QuotedMessage {
  body: string;
  sentAt: Date;
}

/** The longest excerpt of a message an e-mail shows. */
export const MESSAGE_EXCERPT_CHARS = 500;

/** Messages an unread-messages e-mail quotes at most (the newest). */
export const MESSAGES_QUOTED = 5;

/** `text` cut to `max` characters (line breaks kept). */
function excerpt(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** The conversation's page. */
export function conversationLink(conversationId: string): string {
  return `/conversations/${conversationId}`;
}

/**
 * To a participant: `total` messages from the other side (`from`) unread
 * for at least 15 minutes; `messages` are the newest of them, oldest first.
 */
export function conversationUnreadEmail(input: {
  conversationId: string;
  title: string;
  from: ConversationSide;
  messages: QuotedMessage[];
  total: number;
}): EmailContent {
  const count = countOf(input.total, "new message");
  const shown = input.messages.slice(-MESSAGES_QUOTED);
  return {
    subject: `${count} from the ${input.from} of "${input.title}"`,
    heading: `The ${input.from} wrote to you`,
    paragraphs: [
      `You have ${count} about "${input.title}" that you have not read for ${UNREAD_EMAIL_DELAY_MINUTES} minutes.`,
      ...(shown.length < input.total ? [`The newest ${shown.length} are below.`] : []),
    ],
    items: shown.map((message) => ({
      title: excerpt(message.body, MESSAGE_EXCERPT_CHARS),
      detail: `Sent ${formatUtc(message.sentAt)}`,
    })),
    action: { label: "Read and reply", url: conversationLink(input.conversationId) },
    footer:
      "Reply in the conversation, not to this e-mail. You get at most one such e-mail per conversation an hour; switch them off in your notification settings.",
  };
}

/** One notice: the in-app title and body, its link, and the e-mail. */
export interface ReportNotice {
  title: string;
  body: string;
  link: string;
  email: EmailContent;
}

/** To each admin: a participant reported a conversation. */
export function conversationReportedNotice(input: {
  conversationId: string;
  title: string;
  reporter: ConversationSide;
  reason: string;
  reportedAt: Date;
}): ReportNotice {
  const link = `/admin/conversations/${input.conversationId}`;
  const body = `The ${input.reporter} of a conversation about "${input.title}" reported it on ${
    formatUtc(input.reportedAt)
  }.`;
  return {
    title: "A conversation was reported",
    body: `${body} Reason: "${excerpt(input.reason, 1000)}"`,
    link,
    email: {
      subject: `Conversation about "${input.title}" reported by the ${input.reporter}`,
      heading: "A conversation was reported",
      paragraphs: [body, "Their reason:"],
      quote: input.reason,
      action: { label: "Open the conversation", url: link },
      footer: "You receive this alert because you are an admin of the marketplace.",
    },
  };
}
