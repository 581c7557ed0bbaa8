/**
 * Route table for the payment-processor double: method + path pattern
 * (`/v1/customers/:id`) + the parameters the endpoint accepts.
 *
 * @module
 */
import type { FormObject, RecordedRequest } from "../http_double.ts";
import type { PayprocStore } from "./store.ts";

/** Named path segments; `id` is present on every route that declares `:id`. */
export type PathParams = Readonly<{ id: string } & Record<string, string>>;

/** What a route handler gets. */
export interface RouteContext {
  /** The double's state. */
  readonly store: PayprocStore;
  /** Query and body parameters, bracket-decoded. */
  readonly params: FormObject;
  /** Named path segments, e.g. `{ id: "cus_123" }`. */
  readonly path: PathParams;
  /** The recorded request. */
  readonly request: RecordedRequest;
  /** The double's base URL (for hosted-page links). */
  readonly baseUrl: string;
}

/** One endpoint. */
export interface Route {
  readonly method: "GET" | "POST" | "DELETE";
  readonly pattern: string;
  /** Top-level parameters accepted (besides `expand`); others get `parameter_unknown`. */
  readonly params: readonly string[];
  /** Returns the JSON body of a 200 answer, or throws `PayprocApiError`. */
  readonly handle: (context: RouteContext) => unknown;
}

/** Declares a route. */
export function route(
  method: Route["method"],
  pattern: string,
  params: readonly string[],
  handle: Route["handle"],
): Route {
  return { method, pattern, params, handle };
}

/** Finds the first route matching `method` and `path`, with its path parameters. */
export function matchRoute(
  routes: readonly Route[],
  method: string,
  path: string,
): { route: Route; path: PathParams } | undefined {
  const actual = path.replace(/\/+$/, "").split("/");
  for (const candidate of routes) {
    if (candidate.method !== method) continue;
    const expected = candidate.pattern.split("/");
    if (expected.length !== actual.length) continue;
    const named: Record<string, string> = {};
    const ok = expected.every((segment, i) => {
      const value = actual[i] ?? "";
      if (segment.startsWith(":")) {
        named[segment.slice(1)] = decodeURIComponent(value);
        return value !== "";
      }
      return segment === value;
    });
    if (ok) return { route: candidate, path: { id: "", ...named } };
  }
  return undefined;
}
