/**
 * List and search envelopes with the API's cursor pagination
 * (`limit`, `starting_after`, `ending_before`) and `created` range filters.
 *
 * @module
 */
import type { FormObject } from "../http_double.ts";
import { invalidRequest } from "./errors.ts";
import { optInt, optObject, optString } from "./params.ts";
import type { PayprocList } from "./types.ts";

/** A search envelope as the API sends it. */
export interface PayprocSearchResult<T> {
  object: "search_result";
  data: T[];
  has_more: boolean;
  next_page: string | null;
  url: string;
}

function pageSize(params: FormObject): number {
  const limit = optInt(params, "limit") ?? 10;
  if (limit < 1 || limit > 100) {
    throw invalidRequest(
      "This value must be greater than or equal to 1 and less than or equal to 100.",
      "limit",
    );
  }
  return limit;
}

/** One page of `items` (already newest first) as a list envelope at `url`. */
export function listPage<T extends { id: string }>(
  items: T[],
  params: FormObject,
  url: string,
): PayprocList<T> {
  const limit = pageSize(params);
  const after = optString(params, "starting_after");
  const before = optString(params, "ending_before");
  if (after && before) {
    throw invalidRequest(
      "You may only specify one of these parameters: ending_before, starting_after.",
    );
  }
  const cursor = after ?? before;
  if (cursor === undefined) {
    return { object: "list", data: items.slice(0, limit), has_more: items.length > limit, url };
  }
  const at = items.findIndex((item) => item.id === cursor);
  if (at < 0) {
    throw invalidRequest(
      `No such object: '${cursor}'`,
      after ? "starting_after" : "ending_before",
      "resource_missing",
    );
  }
  if (after) {
    const rest = items.slice(at + 1);
    return { object: "list", data: rest.slice(0, limit), has_more: rest.length > limit, url };
  }
  const start = Math.max(0, at - limit);
  return { object: "list", data: items.slice(start, at), has_more: start > 0, url };
}

/** Keeps items whose `created` satisfies the `created` parameter (exact or gt/gte/lt/lte). */
export function filterCreated<T extends { created?: number }>(items: T[], params: FormObject): T[] {
  const exact = params.created;
  if (exact === undefined) return items;
  if (typeof exact === "string") {
    const at = optInt(params, "created");
    return items.filter((item) => item.created === at);
  }
  const range = optObject(params, "created") ?? {};
  const bound = (key: string) => optInt(range, key);
  const [gt, gte, lt, lte] = [bound("gt"), bound("gte"), bound("lt"), bound("lte")];
  return items.filter((item) => {
    const c = item.created ?? 0;
    return (gt === undefined || c > gt) && (gte === undefined || c >= gte) &&
      (lt === undefined || c < lt) && (lte === undefined || c <= lte);
  });
}

/** One page of search results; `page` is an opaque offset token. */
export function searchPage<T>(items: T[], params: FormObject, url: string): PayprocSearchResult<T> {
  const limit = pageSize(params);
  const page = optString(params, "page");
  const offset = page ? Number(page.replace(/^page_/, "")) : 0;
  if (!Number.isInteger(offset) || offset < 0) {
    throw invalidRequest(`Invalid page: ${page}`, "page");
  }
  const data = items.slice(offset, offset + limit);
  const hasMore = items.length > offset + limit;
  return {
    object: "search_result",
    data,
    has_more: hasMore,
    next_page: hasMore ? `page_${offset + limit}` : null,
    url,
  };
}
