/**
 * The local mail viewer at `/_local/mail`: what Inbucket/Mailpit are to
 * `supabase start`, without Docker. With `LOCAL_DEV=true` and no
 * `RESEND_API_KEY` the sender stores every message in `public.email_logs`
 * as `captured` (a sign-in e-mail's body in `public.email_sign_in_bodies`,
 * which admins cannot read); this lists them and shows each one.
 *
 * - `GET /_local/mail`: the newest {@linkcode MAIL_LIST_LIMIT} messages,
 *   newest first, every status (`?status=captured` for one status).
 *   `?format=json` or `/_local/mail.json`: the same as JSON.
 * - `GET /_local/mail/<id>`: one message: its headers, the HTML body in a
 *   sandboxed `<iframe srcdoc>` (no `allow-scripts`: a message's scripts
 *   never run) and the text part. `/_local/mail/<id>.json` or
 *   `?format=json`: the message as JSON.
 * - `GET /_local/mail/samples`: one sample of every e-mail type, rendered
 *   from the real templates (`local/mail_samples.ts`), nothing sent or
 *   stored; `/_local/mail/samples/<type>` shows one like a message. Both
 *   have `.json` and `?format=json` forms.
 *
 * Only the local gateway serves it (`createGateway({ mail: true })` with
 * `LOCAL_DEV=true`). Every value is HTML-escaped; the pages carry the
 * runtime's headers with a viewer CSP, no CORS (a page on another origin must
 * not read sign-in links) and `no-store`; the gateway lets through only a
 * loopback `Host` (DNS rebinding).
 *
 * @module
 */
import {
  EMAIL_SEND_STATUSES,
  EMAIL_TYPES,
  type EmailSendStatus,
  type EmailType,
} from "../../shared/notifications.ts";
import { MAIL_SAMPLES, type MailSample, mailSample, SAMPLE_SITE_URL } from "./mail_samples.ts";
import type { Sql } from "../../supabase/functions/_shared/platform/db.ts";
import { html, page as consolePage, type SafeHtml, table, time } from "./layout.ts";
import { UUID } from "./records.ts";
import { HttpError } from "../../supabase/functions/_shared/platform/errors.ts";
import {
  type HeaderPairs,
  requestIdOf,
} from "../../supabase/functions/_shared/platform/headers.ts";
import { describeError } from "../../supabase/functions/_shared/platform/log.ts";
import type { Runtime } from "../../supabase/functions/_shared/platform/runtime.ts";
import { localPageHeaders } from "../local_pages.ts";

/** Where the viewer is served. */
export const MAIL_VIEWER_PATH = "/_local/mail";

/** The most messages the list shows (the newest). */
export const MAIL_LIST_LIMIT = 200;

/** Where the sample e-mails are listed. */
export const MAIL_SAMPLES_PATH = `${MAIL_VIEWER_PATH}/samples`;

/** Methods the viewer answers. */
export const MAIL_VIEWER_METHODS = "GET, HEAD";

/**
 * The viewer's Content-Security-Policy, replacing the runtime's on its
 * answers. A srcdoc document inherits its parent's policy, so this also
 * governs the message shown in the iframe: no script anywhere, inline styles
 * (the page's and the e-mail's), images from data: and the web (http too:
 * local templates point at the dev site), no forms, plugins or `<base href>`.
 * The srcdoc frame is not fetched, so `frame-src` does not govern it;
 * `'self'` only lets a message's own frames show viewer pages.
 * `frame-ancestors 'self'` (X-Frame-Options `SAMEORIGIN`) lets the page hold
 * that frame while no other site may frame the viewer.
 */
export const MAIL_VIEWER_CSP = [
  "default-src 'none'",
  "style-src 'unsafe-inline'",
  "img-src data: http: https:",
  "frame-src 'self'",
  "frame-ancestors 'self'",
  "form-action 'none'",
  "base-uri 'none'",
].join("; ");

/**
 * The iframe's sandbox: no `allow-scripts`, `allow-same-origin` or
 * `allow-forms`. Links open in a new tab (each message gets
 * `<base target="_blank">`), outside the sandbox, as a mail client opens them,
 * so a sign-in link works.
 */
export const MAIL_IFRAME_SANDBOX = "allow-popups allow-popups-to-escape-sandbox";

/** Whether the viewer answers `pathname` (`/_local/mail`, `/_local/mail.json`, `/_local/mail/...`). */
export function isMailViewerPath(pathname: string): boolean {
  return pathname === MAIL_VIEWER_PATH || pathname === `${MAIL_VIEWER_PATH}.json` ||
    pathname.startsWith(`${MAIL_VIEWER_PATH}/`);
}

/** One message in the JSON list. */
export interface MailSummary {
  id: string;
  createdAt: string;
  sentAt: string | null;
  to: string;
  subject: string;
  type: string;
  status: string;
  /** The message's page. */
  url: string;
}

/** The JSON list: the newest messages first, at most {@linkcode MAIL_LIST_LIMIT}. */
export interface MailList {
  messages: MailSummary[];
  /** How many messages match (the list shows at most `limit`). */
  total: number;
  limit: number;
  status: EmailSendStatus | null;
}

/** One message as JSON. */
export interface MailMessage {
  id: string;
  createdAt: string;
  sentAt: string | null;
  from: string | null;
  to: string;
  replyTo: string | null;
  subject: string;
  type: string;
  status: string;
  error: string | null;
  attempts: number;
  /** The HTML body (null once the provider had it: the sender clears it). */
  html: string | null;
  /** The text part (cleared with `html`). */
  text: string | null;
}

/** One sample in the JSON list of samples. */
export interface MailSampleSummary {
  type: EmailType;
  /** When an e-mail of this type is sent. */
  description: string;
  subject: string;
  /** The notification type whose e-mail preference it honours; null: always sent. */
  preference: string | null;
  /** The sample's page. */
  url: string;
}

/** The JSON list of samples: every e-mail type, in the order of `EMAIL_TYPES`. */
export interface MailSampleList {
  samples: MailSampleSummary[];
  /** Where the samples' links point (the frontend). */
  siteUrl: string;
}

/** One sample as JSON: its summary with the rendered parts. */
export interface MailSampleMessage extends MailSampleSummary {
  html: string;
  text: string;
}

interface SummaryRow {
  id: string;
  created_at: Date;
  sent_at: Date | null;
  recipient_email: string;
  subject: string;
  email_type: string;
  send_status: string;
  total: number;
}

interface MessageRow {
  id: string;
  created_at: Date;
  sent_at: Date | null;
  recipient_email: string;
  from_address: string | null;
  reply_to: string | null;
  subject: string;
  email_type: string;
  send_status: string;
  error_message: string | null;
  attempts: number;
  html: string | null;
  text_body: string | null;
}

/**
 * Builds the viewer's handler on `runtime` (its database, headers and log);
 * `db` overrides where the messages are read from.
 */
export function createMailViewer(
  runtime: Runtime,
  db: () => Sql = () => runtime.database,
): (req: Request) => Promise<Response> {
  const log = runtime.log.with({ component: "mail-viewer" });

  const headersOf = (req: Request, requestId: string, contentType: string): HeaderPairs =>
    localPageHeaders(runtime, req, requestId, {
      csp: MAIL_VIEWER_CSP,
      frameOptions: "SAMEORIGIN",
      referrerPolicy: "no-referrer",
    }, contentType);

  return async (req) => {
    const requestId = requestIdOf(req);
    const url = new URL(req.url);
    const route = routeOf(url);
    const answer = (status: number, body: string, json: boolean, extra: HeaderPairs = []) =>
      new Response(req.method === "HEAD" ? null : body, {
        status,
        headers: [
          ...headersOf(
            req,
            requestId,
            json ? "application/json; charset=utf-8" : "text/html; charset=utf-8",
          ),
          ...extra,
        ],
      });
    const fail = (error: HttpError) =>
      answer(
        error.status,
        route.json ? JSON.stringify(error.toBody()) : errorPage(error),
        route.json,
        Object.entries(error.headers ?? {}),
      );

    if (req.method !== "GET" && req.method !== "HEAD") {
      return fail(
        new HttpError(
          405,
          "method_not_allowed",
          `Cannot ${req.method} the mail viewer: use GET`,
          undefined,
          { Allow: MAIL_VIEWER_METHODS },
        ),
      );
    }
    try {
      if (route.kind === "list") {
        const status = statusFilter(url.searchParams.get("status"));
        const list = await readList(db(), status);
        return answer(200, route.json ? JSON.stringify(list) : listPage(list), route.json);
      }
      if (route.kind === "samples") {
        const list = sampleList();
        return answer(200, route.json ? JSON.stringify(list) : samplesPage(list), route.json);
      }
      if (route.kind === "sample") {
        const sample = mailSample(route.type);
        if (!sample) throw noSuchSample(route.type);
        const message = sampleOf(sample);
        return answer(200, route.json ? JSON.stringify(message) : samplePage(message), route.json);
      }
      if (route.kind === "message") {
        // A sign-in e-mail's body is kept apart from email_logs (admins read
        // that table; the links are credentials): the viewer, on the service
        // connection, reads it from email_sign_in_bodies.
        const row = await db().maybeOne<MessageRow>(
          `select l.id, l.created_at, l.sent_at, l.recipient_email, l.from_address, l.reply_to,
             l.subject, l.email_type, l.send_status, l.error_message, l.attempts,
             coalesce(b.html, l.html) as html, coalesce(b.text_body, l.text_body) as text_body
           from public.email_logs l
           left join public.email_sign_in_bodies b on b.email_log_id = l.id
           where l.id = $1`,
          [route.id],
        );
        if (!row) throw noSuchMessage(route.id);
        const message = messageOf(row);
        return answer(
          200,
          route.json ? JSON.stringify(message) : messagePage(message),
          route.json,
        );
      }
      throw noSuchMessage(route.segment);
    } catch (error) {
      if (error instanceof HttpError && error.status < 500) return fail(error);
      log.error("mail viewer failed", { request_id: requestId, ...describeError(error) });
      return fail(
        error instanceof HttpError
          ? error
          : new HttpError(500, "internal_error", "The mail viewer failed (see the log)"),
      );
    }
  };
}

type Route =
  | { kind: "list"; json: boolean }
  | { kind: "message"; id: string; json: boolean }
  | { kind: "samples"; json: boolean }
  | { kind: "sample"; type: string; json: boolean }
  | { kind: "unknown"; segment: string; json: boolean };

function routeOf(url: URL): Route {
  const asJson = url.searchParams.get("format") === "json";
  const rest = url.pathname.slice(MAIL_VIEWER_PATH.length);
  if (rest === "" || rest === "/") return { kind: "list", json: asJson };
  if (rest === ".json") return { kind: "list", json: true };
  if (rest === "/samples" || rest === "/samples/") return { kind: "samples", json: asJson };
  if (rest === "/samples.json") return { kind: "samples", json: true };
  const sample = /^\/samples\/([^/]+?)(\.json)?$/.exec(rest);
  if (sample) return { kind: "sample", type: sample[1]!, json: asJson || !!sample[2] };
  const segment = rest.slice(1);
  const match = /^([^/]+?)(\.json)?$/.exec(segment);
  if (match && UUID.test(match[1]!)) {
    return { kind: "message", id: match[1]!.toLowerCase(), json: asJson || !!match[2] };
  }
  return { kind: "unknown", segment, json: asJson || segment.endsWith(".json") };
}

function noSuchMessage(id: string): HttpError {
  return new HttpError(404, "not_found", `No e-mail "${id}" in email_logs`);
}

function noSuchSample(type: string): HttpError {
  return new HttpError(
    404,
    "not_found",
    `No sample e-mail "${type}": the types are listed at ${MAIL_SAMPLES_PATH}`,
  );
}

function statusFilter(value: string | null): EmailSendStatus | null {
  if (value === null || value === "") return null;
  const known = EMAIL_SEND_STATUSES.find((status) => status === value);
  if (!known) {
    throw new HttpError(
      400,
      "invalid_input",
      `Unknown status "${value}": use one of ${EMAIL_SEND_STATUSES.join(", ")}`,
    );
  }
  return known;
}

async function readList(sql: Sql, status: EmailSendStatus | null): Promise<MailList> {
  const rows = await sql.query<SummaryRow>(
    `select id, created_at, sent_at, recipient_email, subject, email_type, send_status,
       (count(*) over ())::int as total
     from public.email_logs
     where $1::text is null or send_status = $1::text
     order by created_at desc, id desc
     limit ${MAIL_LIST_LIMIT}`,
    [status],
  );
  return {
    messages: rows.map((row) => ({
      id: row.id,
      createdAt: row.created_at.toISOString(),
      sentAt: row.sent_at?.toISOString() ?? null,
      to: row.recipient_email,
      subject: row.subject,
      type: row.email_type,
      status: row.send_status,
      url: `${MAIL_VIEWER_PATH}/${row.id}`,
    })),
    total: rows[0]?.total ?? 0,
    limit: MAIL_LIST_LIMIT,
    status,
  };
}

function sampleSummary(sample: MailSample, subject: string): MailSampleSummary {
  return {
    type: sample.type,
    description: sample.description,
    subject,
    preference: EMAIL_TYPES[sample.type],
    url: `${MAIL_SAMPLES_PATH}/${sample.type}`,
  };
}

function sampleList(): MailSampleList {
  return {
    samples: Object.values(MAIL_SAMPLES).map((sample) =>
      sampleSummary(sample, sample.render().subject)
    ),
    siteUrl: SAMPLE_SITE_URL,
  };
}

function sampleOf(sample: MailSample): MailSampleMessage {
  const rendered = sample.render();
  return { ...sampleSummary(sample, rendered.subject), html: rendered.html, text: rendered.text };
}

function messageOf(row: MessageRow): MailMessage {
  return {
    id: row.id,
    createdAt: row.created_at.toISOString(),
    sentAt: row.sent_at?.toISOString() ?? null,
    from: row.from_address,
    to: row.recipient_email,
    replyTo: row.reply_to,
    subject: row.subject,
    type: row.email_type,
    status: row.send_status,
    error: row.error_message,
    attempts: row.attempts,
    html: row.html,
    text: row.text_body,
  };
}

// ---------------------------------------------------------------------------
// Pages (every interpolation goes through `html`, which escapes it)
// ---------------------------------------------------------------------------

/**
 * A mail page: the console's page (its header, styles and the Mail link
 * marked) with the viewer's own links first.
 */
function page(title: string, nav: SafeHtml, body: SafeHtml): string {
  return consolePage(
    title,
    MAIL_VIEWER_PATH,
    html`<p class="filters">${nav}</p>
${body}`,
  );
}

function statusBadge(status: string): SafeHtml {
  return html`<span class="status status-${status}">${status}</span>`;
}

function listPage(list: MailList): string {
  const query = list.status ? `?status=${list.status}` : "";
  const nav = html`<a href="${MAIL_VIEWER_PATH}">All</a>
<a href="${MAIL_VIEWER_PATH}?status=captured">Captured</a>
<a href="${MAIL_SAMPLES_PATH}">Samples</a>
<a href="${MAIL_VIEWER_PATH}${query}">Refresh</a>
<a href="${MAIL_VIEWER_PATH}.json${query}">JSON</a>`;
  const rows = list.messages.map((m) => [
    time(m.createdAt),
    html`${m.to}`,
    html`<a href="${m.url}">${m.subject}</a>`,
    html`${m.type}`,
    statusBadge(m.status),
  ]);
  const shown = list.total > list.messages.length
    ? html`<p class="muted">Showing the newest ${list.messages.length} of ${list.total}.</p>`
    : html`<p class="muted">${list.total} message(s)${
      list.status
        ? html`
          with status ${list.status}
        `
        : ""
    }, newest first.</p>`;
  const body = list.messages.length === 0
    ? html`<p>No e-mails${
      list.status
        ? html`
          with status ${list.status}
        `
        : ""
    } yet.
With <code>LOCAL_DEV=true</code> and no <code>RESEND_API_KEY</code> every e-mail the functions
send is captured here instead of being delivered.</p>`
    : html`${shown}${table(["Time", "To", "Subject", "Type", "Status"], rows, "")}`;
  return page("Mail", nav, body);
}

/**
 * The message's HTML as the iframe's document: links open in a new tab
 * (`<base target="_blank">`, placed in its head so a doctype stays first).
 */
function srcdocOf(markup: string): string {
  const base = '<base target="_blank">';
  const head = /<head(\s[^>]*)?>/i.exec(markup);
  if (head) {
    return markup.slice(0, head.index + head[0].length) + base +
      markup.slice(head.index + head[0].length);
  }
  const doctype = /^\s*<!doctype[^>]*>/i.exec(markup);
  if (doctype) return doctype[0] + base + markup.slice(doctype[0].length);
  return base + markup;
}

function messagePage(m: MailMessage): string {
  const nav = html`<a href="${MAIL_VIEWER_PATH}">All mail</a>
<a href="${MAIL_VIEWER_PATH}/${m.id}.json">JSON</a>`;
  const field = (label: string, value: SafeHtml | string | null) =>
    html`
      <dt>${label}</dt>
      <dd>${value ?? html`<span class="muted">—</span>`}</dd>
    `;
  const body = html`<dl>
${field("From", m.from)}
${field("To", m.to)}
${field("Reply-To", m.replyTo)}
${field("Subject", m.subject)}
${field("Type", m.type)}
${field("Status", statusBadge(m.status))}
${field("Written", time(m.createdAt))}
${field("Sent", time(m.sentAt))}
${m.error ? field("Error", m.error) : ""}
</dl>
${bodyParts(m.html, m.text)}`;
  return page(m.subject, nav, body);
}

/**
 * A message's two parts: the HTML in the sandboxed frame, the text part as
 * preformatted text (null: not kept).
 */
function bodyParts(markup: string | null, text: string | null): SafeHtml {
  return html`<h2>HTML</h2>
${
    markup === null
      ? html`<p class="muted">No HTML body kept (the sender clears it once the provider has the message).</p>`
      : html`
        <iframe sandbox="${MAIL_IFRAME_SANDBOX}" referrerpolicy="no-referrer" title="HTML body of the message"
          srcdoc="${srcdocOf(markup)}"></iframe>
      `
  }
<h2>Text</h2>
${
    text === null ? html`<p class="muted">No text part kept.</p>` : html`<pre>
${text}</pre>`
  }`;
}

function samplesPage(list: MailSampleList): string {
  const nav = html`<a href="${MAIL_VIEWER_PATH}">All mail</a>
<a href="${MAIL_SAMPLES_PATH}.json">JSON</a>`;
  const rows = list.samples.map((s) => [
    html`<a href="${s.url}">${s.type}</a>`,
    html`${s.subject}`,
    html`${s.description}`,
  ]);
  const body = html`<p class="muted">One sample of each of the ${list.samples.length} e-mail types,
rendered from the templates with made-up data (links on ${list.siteUrl}); nothing is sent or
stored.</p>
${table(["Type", "Subject", "Sent when"], rows, "No e-mail types.")}`;
  return page("Sample e-mails", nav, body);
}

function samplePage(s: MailSampleMessage): string {
  const nav = html`<a href="${MAIL_VIEWER_PATH}">All mail</a>
<a href="${MAIL_SAMPLES_PATH}">Samples</a>
<a href="${s.url}.json">JSON</a>`;
  const field = (label: string, value: string) =>
    html`
      <dt>${label}</dt>
      <dd>${value}</dd>
    `;
  const body = html`<dl>
${field("Subject", s.subject)}
${field("Type", s.type)}
${field("Sent when", s.description)}
${field("Preference", s.preference ?? "none: always sent")}
</dl>
${bodyParts(s.html, s.text)}`;
  return page(`${s.subject} (sample)`, nav, body);
}

function errorPage(error: HttpError): string {
  const nav = html`<a href="${MAIL_VIEWER_PATH}">All mail</a>`;
  return page(`${error.status} ${error.code}`, nav, html`<p>${error.message}</p>`);
}
