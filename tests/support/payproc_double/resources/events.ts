/**
 * Events recorded by the double (those built with `double.event`), so code
 * that re-fetches an event by id (`GET /v1/events/:id`) or lists them works.
 *
 * @module
 */
import { filterCreated, listPage } from "../lists.ts";
import { optString, stringArray } from "../params.ts";
import { type Route, route } from "../router.ts";

/** The event endpoints. */
export const eventRoutes: Route[] = [
  route(
    "GET",
    "/v1/events",
    ["created", "delivery_success", "ending_before", "limit", "starting_after", "type", "types"],
    ({ store, params }) => {
      const type = optString(params, "type");
      const types = stringArray(params, "types");
      const matchesType = (t: string) =>
        (type === undefined ||
          (type.endsWith("*") ? t.startsWith(type.slice(0, -1)) : t === type)) &&
        (types.length === 0 || types.includes(t));
      const events = filterCreated(store.all("event"), params).filter((e) => matchesType(e.type));
      return listPage(events, params, "/v1/events");
    },
  ),
  route("GET", "/v1/events/:id", [], ({ store, path }) => store.require("event", path.id)),
];
