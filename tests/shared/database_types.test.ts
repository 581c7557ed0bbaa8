/**
 * `shared/database.types.ts` types supabase-js the way the database behaves
 * (see docs/database-types.md). Most of this test is its type-check (`deno
 * test` and `deno task check` compile it): a `// @ts-expect-error` line that
 * compiled would fail the check, and so would an `Equal` that is not `true`.
 * At run time the typed queries are built and sent to a `fetch` that records
 * them and answers nothing, so that the test also shows each becomes the
 * PostgREST request meant; nothing leaves the process.
 */
import assert from "node:assert/strict";
import { createClient } from "@supabase/supabase-js";
import type { Database, Tables, TablesInsert } from "../../shared/database.types.ts";
import type { ListingViewRow } from "../../shared/blur.ts";

/** `true` when `A` and `B` are the same type (not merely assignable either way). */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true
  : false;
/** Compiles only for `true`. */
function expectType<T extends true>(ok: T): T {
  return ok;
}

const LISTING = "7c1f6a52-2d8e-4a57-9a57-8ac0f0a9a001";
const OFFER = "7c1f6a52-2d8e-4a57-9a57-8ac0f0a9a002";

/** A typed client whose `fetch` records each request and fails it: no server, no network. */
function recordingClient() {
  const requests: Request[] = [];
  const client = createClient<Database>("http://127.0.0.1:54321", "anon-key", {
    auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
    // One request per query: a failed GET is otherwise retried.
    db: { retry: false },
    global: {
      fetch: (input: RequestInfo | URL, init?: RequestInit) => {
        requests.push(new Request(input, init));
        return Promise.reject(new TypeError("this test has no server"));
      },
    },
  });
  return { client, requests };
}

Deno.test("a blurred column of listing_view_secure is typed nullable, as the view returns it", async () => {
  const { client, requests } = recordingClient();
  const query = client.from("listing_view_secure")
    .select("id, title, asking_price, monthly_profit, blurred_fields")
    .eq("id", LISTING);
  type Row = NonNullable<Awaited<typeof query>["data"]>[number];
  expectType<Equal<Row["asking_price"], number | null>>(true);
  expectType<Equal<Row["monthly_profit"], number | null>>(true);
  expectType<Equal<Row["blurred_fields"], string[] | null>>(true);
  expectType<
    Equal<keyof Row, "id" | "title" | "asking_price" | "monthly_profit" | "blurred_fields">
  >(
    true,
  );
  // The view's hand-written row type in shared/blur.ts names the same columns.
  expectType<Equal<keyof ListingViewRow, keyof Tables<"listing_view_secure">>>(true);

  const { data, error } = await query;
  assert.equal(data, null);
  assert.match(error?.message ?? "", /this test has no server/);
  assert.equal(requests.length, 1);
  const url = new URL(requests[0]!.url);
  assert.equal(requests[0]!.method, "GET");
  assert.equal(url.pathname, "/rest/v1/listing_view_secure");
  assert.equal(
    url.searchParams.get("select"),
    "id,title,asking_price,monthly_profit,blurred_fields",
  );
  assert.equal(url.searchParams.get("id"), `eq.${LISTING}`);
});

Deno.test("an offer is inserted with the columns a buyer may write, never buyer_id", async () => {
  const { client, requests } = recordingClient();
  const offer = {
    listing_id: LISTING,
    amount: 250_000,
    currency: "usd",
    message: "Cash, closing in 30 days",
  } satisfies TablesInsert<"offers">;
  const insert = client.from("offers").insert(offer);

  // buyer_id is the signed-in user's (its default); the column grant leaves it out.
  // @ts-expect-error buyer_id cannot be named in an insert
  client.from("offers").insert({ ...offer, buyer_id: LISTING });
  // @ts-expect-error nor can status: an offer is accepted through accept_offer
  client.from("offers").insert({ ...offer, status: "accepted" });
  // @ts-expect-error a buyer updates no column of an offer
  client.from("offers").update({ amount: 1 }).eq("id", OFFER);
  // @ts-expect-error amount is required (no default)
  client.from("offers").insert({ listing_id: LISTING, currency: "usd" });
  // Only awaited builders send: the refused ones above were built, never sent.
  assert.equal(requests.length, 0);

  await insert;
  assert.equal(requests.length, 1);
  assert.equal(requests[0]!.method, "POST");
  assert.equal(new URL(requests[0]!.url).pathname, "/rest/v1/offers");
  assert.deepEqual(await requests[0]!.json(), offer);
});

Deno.test("rpc() takes accept_offer's arguments by name and types its answer", async () => {
  const { client, requests } = recordingClient();
  const call = client.rpc("accept_offer", { p_offer: OFFER });
  type Answer = NonNullable<Awaited<typeof call>["data"]>;
  expectType<Equal<Answer, string>>(true);
  expectType<Equal<Database["public"]["Functions"]["accept_offer"]["Args"], { p_offer: string }>>(
    true,
  );
  // @ts-expect-error the argument is p_offer
  client.rpc("accept_offer", { offer: OFFER });
  // @ts-expect-error an offer id is a uuid string
  client.rpc("accept_offer", { p_offer: 42 });
  // @ts-expect-error no such function
  client.rpc("accept_offers", { p_offer: OFFER });

  await call;
  assert.equal(requests.length, 1);
  assert.equal(requests[0]!.method, "POST");
  assert.equal(new URL(requests[0]!.url).pathname, "/rest/v1/rpc/accept_offer");
  assert.deepEqual(await requests[0]!.json(), { p_offer: OFFER });
});
