/**
 * No input makes a 500: every function of the catalog, called by every kind
 * of caller, gets generated bodies — malformed ones (not JSON, not an
 * object, huge, deeply nested, NUL and lone surrogates, stray bytes) and
 * ones shaped by its zod `input` (`tests/support/arbitrary.ts`), sometimes
 * mutated — against one real database, the payment-processor, e-mail and AI
 * doubles, the local Storage API and a project site on 127.0.0.1. Every
 * answer must be below 500 or a documented 503; a failure must be the
 * documented error body, a success must match the function's `output`; and
 * the processor double must never have been asked to move money.
 *
 * The run is fixed by `FUZZ_SEED` (default below) and bounded by
 * `FUZZ_RUNS` (bodies per admitted caller and function); a failure names
 * the seed and fast-check's counterexample. Reproduce with
 * `FUZZ_SEED=<seed> deno task test tests/functions/_fuzz/any_input.test.ts`.
 *
 * @module
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { Webhook } from "standardwebhooks";
import type { z } from "zod";
import { loadFunctions } from "../../../local/functions.ts";
import { FUNCTION_NAMES, type FunctionName, FUNCTIONS } from "../../../shared/functions.ts";
import { ErrorBody } from "../../../shared/schemas.ts";
import { AuthHookPayload } from "../../../supabase/functions/_shared/email/auth_hook_payload.ts";
import { PAYPROC_API_VERSION } from "../../../supabase/functions/_shared/platform/payproc.ts";
import type { EdgeFunction } from "../../../supabase/functions/_shared/platform/function.ts";
import { createListing } from "../../db/core_fixtures.ts";
import { AiDouble, TEST_AI_KEY } from "../../support/ai_double.ts";
import {
  FALLBACK,
  PRIMARY,
  projectPage,
  PUBLIC_ADDRESS,
  validAnalysis,
} from "../../support/analysis.ts";
import {
  type FuzzBody,
  malformedBodies,
  refusedTextBodies,
  serialize,
  shapedBodies,
  shapedFromArbitrary,
  type ShapeOptions,
  textArbitrary,
} from "../../support/arbitrary.ts";
import { CONNECT_WEBHOOK_SECRET, payprocEnv, WEBHOOK_SECRET } from "../../support/billing.ts";
import { testCredentials } from "../../support/credentials.ts";
import { createTestDatabase, sqlTest } from "../../support/db.ts";
import { createDeal } from "../../support/deals.ts";
import { EmailDouble } from "../../support/email_double.ts";
import { HttpDouble } from "../../support/http_double.ts";
import { emailEnv } from "../../support/notifications.ts";
import { PayprocDouble } from "../../support/payproc_double.ts";
import { testRuntime } from "../../support/runtime.ts";
import { createUser } from "../../support/sql.ts";
import { startLocalStorage } from "../../support/storage.ts";

/** The seed of the whole run (`FUZZ_SEED`); each function and caller derives its own from it. */
const SEED = Number(Deno.env.get("FUZZ_SEED") ?? "20261126");
/** Bodies per function for each caller its access rule admits (`FUZZ_RUNS`); refused callers get 1. */
const RUNS = Number(Deno.env.get("FUZZ_RUNS") ?? "3");
if (!Number.isInteger(SEED) || !Number.isInteger(RUNS) || RUNS < 1) {
  throw new Error("FUZZ_SEED and FUZZ_RUNS must be whole numbers (FUZZ_RUNS from 1)");
}

/** The 5xx answers docs/functions.md documents as "come back later" (everything else is a bug). */
const DOCUMENTED_503 = new Set(["not_configured", "upstream_unavailable", "ai_unavailable"]);

/** Processor endpoints that move money (or start to): none may be called by a fuzzed request. */
const MONEY_MOVING = [
  /^\/v1\/refunds$/,
  /^\/v1\/transfers$/,
  /^\/v1\/transfers\/[^/]+\/reversals$/,
  /^\/v1\/payouts$/,
  /^\/v1\/payment_intents$/,
  /^\/v1\/payment_intents\/[^/]+\/(confirm|capture)$/,
  /^\/v1\/checkout\/sessions$/,
  /^\/v1\/subscriptions$/,
  /^\/v1\/invoices\/[^/]+\/pay$/,
];

/** The hook secret as the dashboard shows it (`v1,whsec_<base64>`) and its signer. */
const HOOK_SECRET = btoa("fuzz-auth-hook-secret-0123456789");
const hookSigner = new Webhook(HOOK_SECRET);

// The world: one database, the doubles, a seller with a listing, a payout
// account and a deal awaiting payment, strangers with a deal of their own,
// and an admin. No payment was ever started, so nothing can legitimately be
// refunded, paid out or captured.
const db = await createTestDatabase();
const payproc = new PayprocDouble();
for (
  const [lookupKey, unitAmount, interval] of [
    ["starter_monthly", 900, "month"],
    ["starter_yearly", 9000, "year"],
    ["pro_monthly", 2900, "month"],
    ["pro_yearly", 29000, "year"],
  ] as const
) {
  payproc.addPrice({ lookupKey, unitAmount, interval });
}
const email = new EmailDouble();
const ai = new AiDouble();
ai.respondWith({ toolInput: validAnalysis() });
const site = new HttpDouble({
  handler: () =>
    new Response(projectPage(), { headers: { "content-type": "text/html; charset=utf-8" } }),
});
const storage = await startLocalStorage(db);
const functions = await loadFunctions();
const keys = await testCredentials();

const admin = await createUser(db.pool, { admin: true, confirmed: true });
const seller = await createUser(db.pool, { confirmed: true });
const buyer = await createUser(db.pool, { confirmed: true });
const listing = await createListing(db.pool, seller.id);
const { rows: [ownDeal] } = await db.pool.query<{ id: string }>(
  `insert into public.deals (listing_id, buyer_id, seller_id, amount, currency)
   values ($1, $2, $3, '1250.00', 'USD') returning id`,
  [listing.id, buyer.id, seller.id],
);
const strangersDeal = await createDeal(db.pool);
const account = payproc.addAccount({ metadata: { user_id: seller.id } });
payproc.completeOnboarding(account.id);
await db.pool.query(
  "insert into public.connect_accounts (user_id, payproc_account_id) values ($1, $2)",
  [seller.id, account.id],
);

// Every declared rate limit raised, so the run reaches the handlers (429 is
// tested elsewhere; here it would only hide them).
const rateLimits = [...functions.values()]
  .filter((fn) => fn.definition.rateLimit)
  .map((fn) => `${fn.definition.name}=100000/60`)
  .join(",");

const runtime = await testRuntime(db, {
  ...payprocEnv(payproc),
  ...emailEnv(email),
  ...storage.env,
  AIMODEL_API_KEY: TEST_AI_KEY,
  AIMODEL_BASE_URL: ai.url,
  AIMODEL_PRIMARY: PRIMARY,
  AIMODEL_FALLBACK: FALLBACK,
  SEND_EMAIL_HOOK_SECRET: `v1,whsec_${HOOK_SECRET}`,
  RATE_LIMITS: rateLimits,
}, {
  // Every name resolves to a public address and every connection goes to
  // the local site: analyze-project fetches what it is given, on 127.0.0.1.
  pageFetch: {
    resolver: () => Promise.resolve([PUBLIC_ADDRESS]),
    connect: () => Deno.connect({ hostname: "127.0.0.1", port: site.port }),
  },
});

/** Who calls. */
type CallerKind = "none" | "anon" | "service" | "scheduler" | "user" | "admin" | "webhook";

const tokens: Record<Exclude<CallerKind, "none" | "webhook">, string> = {
  anon: keys.anonKey,
  service: keys.serviceKey,
  scheduler: keys.schedulerToken,
  user: await keys.userToken(seller),
  admin: await keys.userToken(admin),
};

/** Which callers each access rule admits in this world (the user is a seller and a deal's seller). */
const ADMITTED: Record<string, readonly CallerKind[]> = {
  public: ["anon", "service", "user", "admin"],
  user: ["user", "admin"],
  seller: ["user"],
  "deal-participant": ["user"],
  "deal-participant-or-admin": ["user", "admin"],
  admin: ["admin"],
  scheduled: ["service", "scheduler", "admin"],
  system: ["service", "admin"],
  webhook: ["webhook"],
};

const TOKEN_CALLERS: readonly CallerKind[] = [
  "none",
  "anon",
  "service",
  "scheduler",
  "user",
  "admin",
];

/** Ids that exist here, mixed into every generated uuid. */
const shapeOptions: ShapeOptions = {
  uuids: [
    seller.id,
    admin.id,
    ownDeal!.id,
    buyer.id,
    listing.id,
    strangersDeal.id,
    strangersDeal.listingId,
  ],
  urls: ["http://localhost:5173/after", "https://shop.example/", "http://localhost:5173/"],
};

/** Event types payproc-webhook has handlers for, and some it has not. */
const EVENT_TYPES = [
  "account.updated",
  "checkout.session.completed",
  "checkout.session.expired",
  "customer.subscription.created",
  "customer.subscription.updated",
  "customer.subscription.deleted",
  "customer.deleted",
  "invoice.paid",
  "invoice.payment_succeeded",
  "invoice.payment_failed",
  "payment_intent.succeeded",
  "payment_intent.payment_failed",
  "payment_intent.canceled",
  "charge.refunded",
  "charge.refund.updated",
  "refund.failed",
  "charge.dispute.created",
  "charge.dispute.closed",
  "transfer.created",
  "transfer.updated",
  "transfer.reversed",
  "payout.paid",
  "product.created",
];

/**
 * Processor events shaped like the real ones (about ids that mostly do not
 * exist); with `refused`, their text carries a NUL or a lone surrogate.
 */
function processorEvents(refused: boolean): fc.Arbitrary<unknown> {
  const text = (maxLength: number) => textArbitrary({ maxLength, refused });
  const refusedOr = (arbitrary: fc.Arbitrary<string>) => refused ? text(30) : arbitrary;
  return fc.record({
    id: refusedOr(fc.stringMatching(/^evt_[A-Za-z0-9]{8,24}$/)),
    object: fc.constant("event"),
    type: fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...EVENT_TYPES) }, text(30)),
    created: fc.integer({ min: 0, max: 4_000_000_000 }),
    livemode: fc.oneof({ weight: 5, arbitrary: fc.constant(false) }, fc.constant(true)),
    api_version: fc.constant(PAYPROC_API_VERSION),
    account: fc.constantFrom(account.id, "acct_unknown0000", ""),
    data: fc.record({
      object: fc.record({
        id: fc.oneof(
          fc.constantFrom(account.id, "cus_missing", "sub_missing", "pi_missing", "in_missing", ""),
          fc.stringMatching(/^(acct|cus|sub|pi|in|cs|ch|dp|tr|re)_[A-Za-z0-9]{4,14}$/),
          text(20),
        ),
        object: fc.constantFrom(
          "account",
          "checkout.session",
          "subscription",
          "invoice",
          "charge",
          "refund",
        ),
        mode: fc.constantFrom("payment", "subscription"),
        metadata: fc.dictionary(text(8), text(8)),
      }, { requiredKeys: ["id"] }),
    }),
  }, { requiredKeys: ["id", "object", "type", "created", "livemode", "data"] });
}

/** The body schema of a function: its catalog `input`, or a webhook's payload schema. */
function bodySchemaOf(name: FunctionName): z.ZodType | undefined {
  if (name === "auth-email-webhook") return AuthHookPayload;
  return (FUNCTIONS[name] as { input?: z.ZodType }).input;
}

/** The bodies sent to function `name`: malformed ones and ones shaped like what it takes. */
function bodiesFor(name: FunctionName): fc.Arbitrary<FuzzBody> {
  const schema = bodySchemaOf(name);
  const shaped = name === "payproc-webhook"
    ? shapedFromArbitrary(processorEvents(false))
    : schema
    ? shapedBodies(schema, shapeOptions)
    : shapedFromArbitrary(
      fc.oneof(fc.constant({}), fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue())),
    );
  return fc.oneof({ weight: 3, arbitrary: shaped }, { weight: 2, arbitrary: malformedBodies });
}

/**
 * Bodies function `name` accepts but for a NUL or lone surrogate in their
 * free text, or undefined when it takes no body (it ignores what it is sent).
 */
function refusedBodiesFor(name: FunctionName): fc.Arbitrary<FuzzBody> | undefined {
  if (name === "payproc-webhook") {
    return processorEvents(true).map((event) => serialize("refused-text", event));
  }
  const schema = bodySchemaOf(name);
  return schema && refusedTextBodies(schema, shapeOptions);
}

/** What else of a request is untrusted text: its path and query, and headers handlers read. */
interface Extras {
  path: string;
  query: string;
  requestId: string | null;
  origin: string | null;
  contentType: string | null;
}

/** Header values as HTTP carries them: bytes 0x20–0xFF (no NUL, CR or LF can be sent). */
const headerText = fc.string({
  maxLength: 40,
  unit: fc.integer({ min: 0x20, max: 0xff }).filter((c) => c !== 0x7f).map((c) =>
    String.fromCharCode(c)
  ),
});
/** Path and query pieces: escaped NUL, bytes that are not UTF-8, an encoded surrogate, dots. */
const urlText = fc.array(
  fc.constantFrom("%00", "%ff", "%ed%a0%80", "%E0%A4%A", "..", "%2e%2e", "é", "😀", "a", "=", "&"),
  { maxLength: 6 },
).map((pieces) => pieces.join(""));
const extras: fc.Arbitrary<Extras> = fc.record({
  path: urlText,
  query: urlText,
  requestId: fc.option(headerText),
  origin: fc.option(fc.oneof(fc.constant("http://localhost:5173"), headerText)),
  contentType: fc.option(fc.oneof(fc.constant("text/plain"), headerText)),
});

/** The request `caller` sends with `body` (a webhook delivery is signed over the text received). */
async function requestFor(
  name: FunctionName,
  caller: CallerKind,
  body: FuzzBody,
  extra: Extras,
) {
  const headers = new Headers({ "content-type": extra.contentType ?? "application/json" });
  if (extra.requestId !== null) headers.set("x-request-id", extra.requestId);
  if (extra.origin !== null) headers.set("origin", extra.origin);
  if (caller !== "none" && caller !== "webhook") {
    headers.set("authorization", `Bearer ${tokens[caller]}`);
  }
  if (caller === "webhook") {
    // The function reads the body as UTF-8 text: signing that text signs what it checks.
    const text = typeof body.content === "string"
      ? body.content
      : new TextDecoder().decode(body.content);
    if (name === "payproc-webhook") {
      const secret = text.includes(`"account":"acct_`) ? CONNECT_WEBHOOK_SECRET : WEBHOOK_SECRET;
      const signed = await payproc.signedWebhook(text, secret);
      for (const [key, value] of Object.entries(signed.headers)) headers.set(key, value);
    } else {
      const id = `msg_${crypto.randomUUID()}`;
      const at = new Date();
      headers.set("webhook-id", id);
      headers.set("webhook-timestamp", String(Math.floor(at.getTime() / 1000)));
      headers.set("webhook-signature", hookSigner.sign(id, at, text));
    }
  }
  const path = extra.path ? `/${extra.path}` : "";
  const query = extra.query ? `?${extra.query}` : "";
  return new Request(`http://127.0.0.1/${name}${path}${query}`, {
    method: "POST",
    headers,
    body: body.content,
  });
}

/** Counts of answers by status, for the closing summary. */
const statuses = new Map<number, number>();

/** Sends one body and holds the answer to the contract; throws a readable reason otherwise. */
async function sendAndCheck(
  fn: EdgeFunction,
  name: FunctionName,
  caller: CallerKind,
  body: FuzzBody,
  extra: Extras,
): Promise<void> {
  const res = await fn.with(runtime)(await requestFor(name, caller, body, extra));
  const text = await res.text();
  statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
  const shown = `${name} as ${caller} answered ${res.status}: ${text.slice(0, 500)}`;
  let answer: unknown;
  try {
    answer = JSON.parse(text);
  } catch {
    throw new Error(`not JSON — ${shown}`);
  }
  if (res.status >= 500) {
    const code = ErrorBody.safeParse(answer).data?.error.code;
    assert.ok(
      res.status === 503 && code !== undefined && DOCUMENTED_503.has(code),
      `a 5xx that is not a documented 503 — ${shown}`,
    );
  }
  if (res.status >= 200 && res.status < 300) {
    const parsed = FUNCTIONS[name].output.safeParse(answer);
    assert.ok(
      parsed.success,
      `a 2xx that breaks the output schema — ${shown}\n${JSON.stringify(parsed.error?.issues)}`,
    );
  } else {
    const parsed = ErrorBody.safeParse(answer);
    assert.ok(parsed.success, `a failure without the documented error body — ${shown}`);
  }
}

/** A 32-bit seed for `name` and `caller`, derived from {@linkcode SEED}. */
function seedFor(name: string, caller: string): number {
  let hash = SEED | 0;
  for (const char of `${name}:${caller}`) hash = Math.imul(hash ^ char.charCodeAt(0), 16777619);
  return hash | 0;
}

/** The money-moving requests the processor double has seen. */
function moneyMoved(): string[] {
  return payproc.requests
    .filter((r) => r.method === "POST" && MONEY_MOVING.some((pattern) => pattern.test(r.path)))
    .map((r) => `${r.method} ${r.path}`);
}

for (const name of FUNCTION_NAMES) {
  sqlTest(`fuzz: ${name} answers any body from any caller with its contract`, async () => {
    const fn = functions.get(name);
    assert.ok(fn, `no handler for ${name}`);
    const access = FUNCTIONS[name].access as string;
    const admitted = ADMITTED[access] ?? [...TOKEN_CALLERS, "webhook"];
    const callers = access === "webhook" ? [...TOKEN_CALLERS, "webhook" as const] : TOKEN_CALLERS;
    const refused = refusedBodiesFor(name);
    for (const caller of callers) {
      const runs: Array<[string, fc.Arbitrary<FuzzBody>, number]> = [
        ["any body", bodiesFor(name), admitted.includes(caller) ? RUNS : 1],
      ];
      // What zod accepts but PostgreSQL cannot store, sent by those admitted.
      if (refused && admitted.includes(caller)) runs.push(["refused text", refused, RUNS]);
      for (const [what, bodies, numRuns] of runs) {
        const seed = seedFor(name, `${caller}:${what}`);
        try {
          await fc.assert(
            fc.asyncProperty(bodies, extras, async (body, extra) => {
              fc.pre(body.usable);
              await sendAndCheck(fn, name, caller, body, extra);
            }),
            { seed, numRuns },
          );
        } catch (error) {
          throw new Error(
            `fuzz: ${name} as ${caller}, ${what} (FUZZ_SEED=${SEED}, fast-check seed ${seed}); ` +
              `reproduce with FUZZ_SEED=${SEED} deno task test tests/functions/_fuzz/any_input.test.ts\n` +
              (error instanceof Error ? error.message : String(error)),
            { cause: error },
          );
        }
      }
    }
    assert.deepEqual(moneyMoved(), [], `${name} moved money (FUZZ_SEED=${SEED})`);
  });
}

sqlTest("fuzz: no request moved money, and the world is torn down", async () => {
  try {
    assert.deepEqual(moneyMoved(), [], `money moved (FUZZ_SEED=${SEED})`);
    assert.deepEqual(payproc.handlerErrors, [], "the processor double had no handler errors");
    // The run reached past validation: the processor and the e-mail provider were called.
    assert.ok(payproc.requests.length > 0, "no request reached the processor double");
    assert.ok(email.requests.length > 0, "no request reached the e-mail double");
    const summary = [...statuses].sort(([a], [b]) => a - b).map(([s, n]) => `${s}×${n}`);
    console.log(`fuzz: FUZZ_SEED=${SEED}, FUZZ_RUNS=${RUNS}: ${summary.join(" ")}`);
  } finally {
    await runtime.close();
    await storage.stop();
    await payproc.close();
    await email.close();
    await ai.close();
    await site.close();
    await db.close();
  }
});
