/**
 * E-mails written by people: a message from the marketplace team, and a
 * notice sent through `send-notification`.
 *
 * @module
 */
import type { EmailContent } from "../render.ts";

/** A message from an admin to a user (plain text, shown as written). */
export function adminMessageEmail(subject: string, message: string): EmailContent {
  return {
    subject,
    heading: subject,
    paragraphs: message.split(/\n{2,}/),
    footer: "This message was sent by the marketplace team.",
  };
}

/** The e-mail form of an in-app notice. */
export function noticeEmail(title: string, body: string, link?: string): EmailContent {
  return {
    subject: title,
    heading: title,
    paragraphs: body.split(/\n{2,}/),
    action: link ? { label: "Open", url: link } : undefined,
  };
}
