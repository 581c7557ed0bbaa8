/**
 * The local console at `/_local/`: one server-rendered page per area of the
 * backend (Functions, Requests, Webhooks, Jobs, Deals, Access,
 * Conversations; Mail is the mail viewer, `mail_viewer.ts`), served by
 * `deno task start` only — the gateway hands it every `/_local/` path the
 * mail viewer does not answer; nothing here is deployed.
 *
 * - No page needs JavaScript, and none has any: the actions (call a
 *   function, replay a webhook event, run a job) are plain forms the console
 *   carries out itself, through the gateway, so each is one real request
 *   with its own request id and log lines. After an action the browser is
 *   sent back to the page (303) with the outcome shown once.
 * - Every value is escaped (`html`), the CSP allows no script at all, the
 *   gateway lets through only a loopback `Host` (DNS rebinding) and pages
 *   the CORS policy admits, and the console takes a form only from its own
 *   origin (`Origin` / `Sec-Fetch-Site`: another site's page cannot make the
 *   console run a job).
 *
 * @module
 */
import { HttpError } from "../../supabase/functions/_shared/platform/errors.ts";
import {
  type HeaderPairs,
  requestIdOf,
} from "../../supabase/functions/_shared/platform/headers.ts";
import { describeError } from "../../supabase/functions/_shared/platform/log.ts";
import { localPageHeaders } from "../local_pages.ts";
import { CONSOLE_PATH, html, page, PAGES, type SafeHtml } from "./layout.ts";
import type { ConsoleContext, ConsoleOptions, PageAnswer, Route } from "./types.ts";
import { functionsRoutes } from "./functions_page.ts";
import { requestsRoutes } from "./requests_page.ts";
import { webhooksRoutes } from "./webhooks_page.ts";
import { jobsRoutes } from "./jobs_page.ts";
import { dealsRoutes } from "./deals_page.ts";
import { accessRoutes } from "./access_page.ts";
import { conversationsRoutes } from "./conversations_page.ts";

/**
 * The console's Content-Security-Policy: no script, inline styles, forms to
 * the console itself, and no framing by another site.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "style-src 'unsafe-inline'",
  "img-src data:",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join("; ");

/** The most outcomes kept for pages not yet shown (each is shown once). */
const FLASH_LIMIT = 100;

/** Builds the console's handler. */
export function createConsole(options: ConsoleOptions): (req: Request) => Promise<Response> {
  const { runtime } = options;
  const log = runtime.log.with({ component: "console" });
  const context: ConsoleContext = { ...options, db: options.db ?? (() => runtime.database) };
  const routes: Route[] = [
    ...functionsRoutes(context),
    ...requestsRoutes(context),
    ...webhooksRoutes(context),
    ...jobsRoutes(context),
    ...dealsRoutes(context),
    ...accessRoutes(context),
    ...conversationsRoutes(context),
  ];
  const flashes = new Map<string, SafeHtml>();

  const headersOf = (req: Request, requestId: string, contentType: string): HeaderPairs =>
    localPageHeaders(runtime, req, requestId, {
      csp: CONSOLE_CSP,
      frameOptions: "DENY",
      referrerPolicy: "same-origin",
    }, contentType);

  return async (req) => {
    const requestId = requestIdOf(req);
    const url = new URL(req.url);
    const wantsJson = url.pathname.endsWith(".json");
    const respond = (answer: PageAnswer): Response => {
      if (answer instanceof Response) return answer;
      const json = "json" in answer;
      const body = json ? JSON.stringify(answer.json, null, 2) + "\n" : answer.html;
      return new Response(req.method === "HEAD" ? null : body, {
        status: answer.status ?? 200,
        headers: headersOf(
          req,
          requestId,
          json ? "application/json; charset=utf-8" : "text/html; charset=utf-8",
        ),
      });
    };
    const fail = (error: HttpError): Response => {
      const response = respond(
        wantsJson ? { json: error.toBody(), status: error.status } : {
          html: page(
            `${error.status} ${error.code}`,
            null,
            html`
              <p>${error.message}</p>
              <p><a href="${CONSOLE_PATH}/">The console</a></p>
            `,
          ),
          status: error.status,
        },
      );
      for (const [name, value] of Object.entries(error.headers ?? {})) {
        response.headers.set(name, value);
      }
      return response;
    };

    const method = req.method === "HEAD" ? "GET" : req.method;
    if (method === "POST" && !sameOrigin(req, url)) {
      return fail(
        new HttpError(
          403,
          "forbidden",
          "The local console takes forms from its own pages only (Origin or Sec-Fetch-Site)",
        ),
      );
    }
    const path = url.pathname.slice(CONSOLE_PATH.length) || "/";
    if (path === "/") return respond({ html: indexPage() });
    const matching = routes.filter((route) => route.pattern.test(path));
    const route = matching.find((r) => r.method === method);
    if (!route) {
      if (matching.length === 0) {
        return fail(new HttpError(404, "not_found", `The console has no page "${url.pathname}"`));
      }
      const allow = [...new Set(matching.map((r) => r.method))].join(", ");
      return fail(
        new HttpError(
          405,
          "method_not_allowed",
          `Cannot ${req.method} ${url.pathname}: use ${allow}`,
          undefined,
          { Allow: allow.replace("GET", "GET, HEAD") },
        ),
      );
    }
    try {
      const form = method === "POST"
        ? new URLSearchParams(await readForm(req))
        : new URLSearchParams();
      const flashId = url.searchParams.get("shown");
      const flash = flashId ? flashes.get(flashId) ?? null : null;
      if (flashId) flashes.delete(flashId);
      const answer = await route.handle({
        req,
        url,
        path,
        form,
        flash,
        origin: url.origin,
        redirect(location, outcome) {
          const id = crypto.randomUUID();
          flashes.set(id, outcome);
          if (flashes.size > FLASH_LIMIT) flashes.delete(flashes.keys().next().value!);
          const target = new URL(location, url.origin);
          target.searchParams.set("shown", id);
          return new Response(null, {
            status: 303,
            headers: [
              ...headersOf(req, requestId, "text/plain; charset=utf-8"),
              ["Location", target.pathname + target.search + target.hash],
            ],
          });
        },
      }, route.pattern.exec(path)!);
      return respond(answer);
    } catch (error) {
      if (error instanceof HttpError && error.status < 500) return fail(error);
      log.error("console page failed", {
        request_id: requestId,
        path: url.pathname,
        ...describeError(error),
      });
      return fail(
        error instanceof HttpError
          ? error
          : new HttpError(500, "internal_error", "The console failed (see the log)"),
      );
    }
  };
}

/**
 * Whether a form comes from the console's own pages. A browser says where a
 * request comes from in `Sec-Fetch-Site` (a page cannot forge it) and in
 * `Origin`; a form another site's page submits says `cross-site` and
 * carries that site's origin. `Origin: null` is what a browser sends under
 * a no-referrer policy, so it passes only with `Sec-Fetch-Site:
 * same-origin` (an old browser without that header could be a sandboxed
 * frame). A request with neither header (curl) is the developer's own.
 */
function sameOrigin(req: Request, url: URL): boolean {
  const site = req.headers.get("sec-fetch-site") || null;
  if (site !== null && site !== "same-origin" && site !== "none") return false;
  const origin = req.headers.get("origin") || null;
  if (origin === null) return true;
  if (origin === "null") return site !== null;
  return origin === url.origin;
}

/** The most bytes a console form may carry. */
const FORM_LIMIT = 256 * 1024;

async function readForm(req: Request): Promise<string> {
  const type = req.headers.get("content-type") ?? "";
  if (!/^application\/x-www-form-urlencoded\b/i.test(type)) {
    throw new HttpError(
      415,
      "unsupported_media_type",
      "The console's forms are application/x-www-form-urlencoded",
    );
  }
  const text = await req.text();
  if (text.length > FORM_LIMIT) {
    throw new HttpError(413, "payload_too_large", `A console form is at most ${FORM_LIMIT} bytes`);
  }
  return text;
}

const DESCRIPTIONS: Record<string, string> = {
  Functions: "Every function by group: who may call it, its schemas, a curl example; call it.",
  Requests: "The newest requests the gateway served, with each one's log lines.",
  Webhooks: "The payment processor's event ledger; replay an event through the real handler.",
  Jobs: "Scheduled functions, their last runs, run now; price-alert run durations.",
  Deals: "Deals by state, and one deal's timeline.",
  Access: "Access requests to confidential listings by status, and one request's timeline.",
  Conversations: "Conversations (open, closed, reported), and one conversation's timeline.",
  Mail: "Every e-mail the functions wrote, and a sample of every e-mail type.",
};

function indexPage(): string {
  return page(
    "Local console",
    null,
    html`
      <p>The local stack as a developer sees it. Served by <code>deno task start</code> only,
      to 127.0.0.1 and localhost.</p>
      <table>
        <tbody>
      ${PAGES.map((p) =>
        html`
          <tr>
            <td><a href="${p.path}">${p.title}</a></td>
            <td>${DESCRIPTIONS[p.title] ?? ""}</td>
          </tr>
        `
      )}
      <tr><td><a href="${CONSOLE_PATH}/openapi.json">OpenAPI</a></td><td>The functions as an OpenAPI 3.1 document (<code>docs/openapi.json</code>).</td></tr>
        </tbody>
      </table>
    `,
  );
}
