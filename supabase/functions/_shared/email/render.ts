/**
 * The one e-mail layout: every template describes its message as content
 * (heading, paragraphs, an action button, a list, a quote, a code) and
 * {@linkcode renderEmail} turns it into an HTML part and a plain-text part
 * that say the same thing. Every value is escaped (see `html.ts`).
 *
 * @module
 */
import { html, safeHref, type SafeHtml } from "./html.ts";

/** A list entry (a listing in a digest, a message in the contact digest). */
export interface EmailItem {
  title: string;
  /** Where the entry leads (absolute, or a frontend path made absolute). */
  url?: string;
  /** A line under the title. */
  detail?: string;
}

/** What a message says, independent of its format. */
export interface EmailContent {
  subject: string;
  heading: string;
  /** Paragraphs of plain text (newlines inside one become line breaks). */
  paragraphs: string[];
  /** A quoted passage (a rejection reason, an admin's message). */
  quote?: string;
  /** A one-time code shown large. */
  code?: string;
  /** The main button. */
  action?: { label: string; url: string };
  items?: EmailItem[];
  /** Small print under everything. */
  footer?: string;
}

/** A message ready to send. */
export interface RenderedEmail {
  subject: string;
  html: string;
  text: string;
}

/** `link` made absolute: a frontend path is put on `siteUrl`; other values are kept. */
export function absoluteLink(link: string, siteUrl: string | undefined): string {
  if (link.startsWith("/") && !link.startsWith("//") && siteUrl) {
    return new URL(link, siteUrl).toString();
  }
  return link;
}

/**
 * The line break after each block of the HTML part. It is interpolated, never
 * written as `\n` inside an `html` template: `deno fmt` formats the HTML of a
 * multi-line `html` template and rewrites its `\n` as `\\n`, which put a
 * literal "\n" under every quote and button (docs/email-and-notifications.md,
 * "Sample e-mails", has the browser test that reads each message).
 */
const NL = "\n";

const lines = (text: string): SafeHtml[] =>
  text.split("\n").map((line, i) => i === 0 ? html`${line}` : html`<br>${line}`);

/** Renders `content` into the HTML and text parts; relative links go on `siteUrl`. */
export function renderEmail(content: EmailContent, siteUrl?: string): RenderedEmail {
  const link = (url: string) => absoluteLink(url, siteUrl);
  const action = content.action
    ? { label: content.action.label, url: link(content.action.url) }
    : undefined;
  const items = (content.items ?? []).map((item) => ({
    ...item,
    url: item.url === undefined ? undefined : link(item.url),
  }));

  const body = html`
    <!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width">
        <title>${content.subject}</title>
      </head>
      <body
        style="margin:0;padding:24px;background:#f4f4f5;font-family:Arial,Helvetica,sans-serif;color:#18181b">
        <div style="max-width:560px;margin:0 auto;background:#ffffff;border-radius:8px;padding:32px">
    <h1 style="font-size:20px;margin:0 0 16px">${content.heading}</h1>
    ${content.paragraphs.map((p) =>
      html`<p style="line-height:1.5;margin:0 0 12px">${lines(p)}</p>${NL}`
    )}
    ${content.quote === undefined ? "" : html`
      <blockquote
        style="margin:0 0 16px;padding:8px 16px;border-left:3px solid #d4d4d8;color:#3f3f46">${lines(
          content.quote,
        )}</blockquote>${NL}
    `}
    ${content.code === undefined ? "" : html`
      <p
        style="font-size:28px;letter-spacing:4px;font-weight:bold;margin:16px 0">${content
          .code}</p>${NL}
    `}
    ${items.length === 0
      ? ""
      : html`<ul style="padding-left:20px;margin:0 0 16px">${
        items.map((item) =>
          html`<li style="margin:0 0 8px">${
            item.url ? html`<a href="${safeHref(item.url)}">${item.title}</a>` : item.title
          }${item.detail ? html`<br><span style="color:#52525b">${item.detail}</span>` : ""}</li>`
        )
      }</ul>${NL}`}
    ${action
      ? html`
        <p
          style="margin:24px 0"><a href="${safeHref(
            action.url,
          )}" style="background:#18181b;color:#ffffff;padding:12px 20px;border-radius:6px;text-decoration:none">${action
            .label}</a></p>
        <p
          style="font-size:12px;color:#71717a">If the button does not work, open this address: <span
            style="word-break:break-all">${action.url}</span></p>${NL}
      `
      : ""}
    ${content.footer
      ? html`<p style="font-size:12px;color:#71717a;margin-top:24px">${content.footer}</p>${NL}`
      : ""}</div>
      </body>
    </html>
  `;

  const text: string[] = [content.heading, "", ...content.paragraphs.flatMap((p) => [p, ""])];
  if (content.quote !== undefined) {
    text.push(...content.quote.split("\n").map((line) => `> ${line}`), "");
  }
  if (content.code !== undefined) text.push(content.code, "");
  for (const item of items) {
    text.push(`- ${item.title}${item.url ? ` (${item.url})` : ""}`);
    if (item.detail) text.push(`  ${item.detail}`);
  }
  if (items.length > 0) text.push("");
  if (action) text.push(`${action.label}: ${action.url}`, "");
  if (content.footer) text.push(content.footer);

  return { subject: content.subject, html: body.toString(), text: text.join("\n").trim() + "\n" };
}
