/**
 * What the console's pages are built with and answer (`server.ts` routes
 * requests to them).
 *
 * @module
 */
import type { EdgeFunction } from "../../supabase/functions/_shared/platform/function.ts";
import type { Runtime } from "../../supabase/functions/_shared/platform/runtime.ts";
import type { Sql } from "../../supabase/functions/_shared/platform/db.ts";
import type { SafeHtml } from "./layout.ts";
import type { LogTap } from "./log_tap.ts";

/** The tokens the Functions page's form offers, by caller kind. */
export interface ConsoleTokens {
  anon: string;
  service: string;
  scheduler: string;
  /** Mints a token for a local user (created on first use; `admin`: with the admin role). */
  user(email: string, admin: boolean): Promise<string>;
}

/** What the console reads and acts through. */
export interface ConsoleOptions {
  runtime: Runtime;
  /** The local stack's log lines (the Requests page). */
  tap: LogTap;
  /** The loaded functions (their declarations). */
  functions: ReadonlyMap<string, EdgeFunction>;
  /** The gateway's handler: the console's actions are requests through it. */
  gateway: (req: Request) => Promise<Response>;
  tokens: ConsoleTokens;
  /** Where the OpenAPI document is read from (default: `docs/openapi.json`). */
  openApiPath?: URL;
  /** Overrides where the pages read the database (default: the runtime's). */
  db?: () => Sql;
}

/** What a page handler gets. */
export interface PageRequest {
  req: Request;
  url: URL;
  /** The path after `/_local`, e.g. `/jobs/price-alerts/run`. */
  path: string;
  /** A form's fields (POST only). */
  form: URLSearchParams;
  /** The outcome of the action this page was sent back from (shown once), if any. */
  flash: SafeHtml | null;
  /** Sends the browser to `location` (303) showing `outcome` there once. */
  redirect(location: string, outcome: SafeHtml): Response;
  /** The origin the stack is served at, e.g. `http://127.0.0.1:54321`. */
  origin: string;
}

/** What a page answers: HTML (a whole page), JSON, or a response of its own. */
export type PageAnswer =
  | { html: string; status?: number }
  | { json: unknown; status?: number }
  | Response;

/** One page's routes: `match` claims a path (and method); `handle` answers it. */
export interface Route {
  method: "GET" | "POST";
  /** Matches the path after `/_local`; the groups are handed to `handle`. */
  pattern: RegExp;
  handle(request: PageRequest, match: RegExpExecArray): Promise<PageAnswer>;
}

/** The context every page's routes are built with. */
export interface ConsoleContext extends ConsoleOptions {
  db: () => Sql;
}
