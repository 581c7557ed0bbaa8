/**
 * Dispute cases and delivery acceptance (the escrow release migration,
 * 20261128200000_escrow_release): open_deal_case, settle_deal_case,
 * escalate_deal_case, resolve_deal_case and accept_delivery — every move of
 * the case state table and every refused one with its SQLSTATE and hint, the
 * deal event and the queued notices of each move, a deal that ends closing
 * its cases (close_cases_with_deal), the money functions (deal_held_amount,
 * deal_transfer_amount, deal_release_hold) against the header's money plan,
 * the races between the moves, and who reads and writes deal_cases.
 *
 * Deals are made on the service connection: inserted, then moved with
 * transition_deal() (funding freezes the commission); a payout that went out
 * is a `deal_settlements` row with status succeeded and a fake processor id.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { createLoiDeal, LOI_TERMS, type LoiTerms } from "../support/loi.ts";
import {
  asRole,
  createUser,
  failureAs,
  raceCalls,
  settledCode,
  type SqlIdentity,
  type TestUser,
  valueAs,
} from "../support/sql.ts";
import { createListing } from "./core_fixtures.ts";

const db = await createTestDatabase();

const stranger = await createUser(db.pool);
const admin = await createUser(db.pool, { admin: true });

const SERVICE: SqlIdentity = { role: "service_role" };
const ANON: SqlIdentity = { role: "anon" };
const DAY = 86_400_000;

const OPEN = "select public.open_deal_case($1, $2, $3) as id";
const SETTLE = "select * from public.settle_deal_case($1, $2, $3)";
const ESCALATE = "select * from public.escalate_deal_case($1)";
const RESOLVE = "select * from public.resolve_deal_case($1, $2, $3, $4)";
const ACCEPT = "select * from public.accept_delivery($1)";

/** A signed-in user's identity. */
function as(user: TestUser): SqlIdentity {
  return { role: "authenticated", userId: user.id };
}

/** Runs `sql` as `who` and commits; answers the first column of its first row. */
function callAs<T = unknown>(who: SqlIdentity, sql: string, params: unknown[] = []): Promise<T> {
  return valueAs<T>(db.pool, who, sql, params);
}

/** Runs `sql` as `who` and commits; answers its first row. */
function rowAs<T>(who: SqlIdentity, sql: string, params: unknown[] = []): Promise<T> {
  return asRole(db.pool, who, async (c) => {
    const { rows } = await c.query(sql, params);
    await c.query("commit");
    return rows[0] as T;
  });
}

/** The error `sql` fails with as `who` (nothing is committed). */
function errorOf(who: SqlIdentity, sql: string, params: unknown[] = []) {
  return failureAs(db.pool, who, sql, params);
}

/** Asserts `sql` as `who` fails with `code` and exactly `hint` (undefined: none). */
async function refused(
  who: SqlIdentity,
  code: string,
  hint: string | undefined,
  sql: string,
  params: unknown[],
  label = "",
): Promise<{ code: string; message: string; hint?: string }> {
  const error = await errorOf(who, sql, params);
  assert.equal(error.code, code, `${label} ${sql}: ${error.message}`);
  assert.equal(error.hint ?? undefined, hint, `${label} ${sql}: ${error.message}`);
  return error;
}

async function count(sql: string, params: unknown[] = []): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(`select (${sql})::int as n`, params);
  return rows[0]!.n;
}

async function scalar<T>(sql: string, params: unknown[] = []): Promise<T> {
  const { rows } = await db.pool.query(sql, params);
  return Object.values(rows[0] ?? {})[0] as T;
}

// -----------------------------------------------------------------------------
// Deals
// -----------------------------------------------------------------------------

/** Terms with a holdback (cash 900.00 of 1000.00, 30 days) and no exclusivity. */
const HOLDBACK_TERMS: LoiTerms = { ...LOI_TERMS, exclusivity_days: 0 };

interface Deal {
  id: string;
  buyer: TestUser;
  seller: TestUser;
}

type Stage =
  | "pending_payment"
  | "in_diligence"
  | "cancelled"
  | "funded"
  | "in_handover"
  | "handed_over"
  | "disputed"
  | "completed"
  | "refunded";

const PATHS: Record<Exclude<Stage, "in_diligence">, string[]> = {
  pending_payment: [],
  cancelled: ["cancelled"],
  funded: ["funded"],
  in_handover: ["funded", "in_handover"],
  handed_over: ["funded", "in_handover"],
  disputed: ["funded", "in_handover", "disputed"],
  completed: ["funded", "in_handover", "completed"],
  refunded: ["funded", "in_handover", "refunded"],
};

/** Moves deal `id` through `states` on the service connection. */
async function move(id: string, ...states: string[]): Promise<void> {
  for (const to of states) {
    await db.pool.query("select public.transition_deal($1, $2, 'test')", [id, to]);
  }
}

/** Stamps deal `id`'s handover complete, its inspection window ending in `days`. */
async function completeHandover(id: string, days = 7): Promise<void> {
  await db.pool.query(
    `update public.deals set handover_completed_at = now(), handover_completion = 'buyer_confirmed',
       inspection_ends_at = now() + make_interval(days => $2)
     where id = $1`,
    [id, days],
  );
}

/**
 * A new deal at `stage`. `holdback`: a letter of intent with
 * {@linkcode HOLDBACK_TERMS} made through offers and accept_offer (1000.00);
 * `terms`: inserted with the deal; else a plain deal of `amount` (1250.00).
 */
async function newDeal(
  stage: Stage,
  options: {
    amount?: string;
    holdback?: boolean;
    terms?: LoiTerms;
    buyer?: TestUser;
    seller?: TestUser;
  } = {},
): Promise<Deal> {
  const seller = options.seller ?? await createUser(db.pool);
  const buyer = options.buyer ?? await createUser(db.pool);
  if (stage === "in_diligence") {
    const loi = await createLoiDeal(db.pool, { seller, buyer, terms: LOI_TERMS });
    return { id: loi.dealId, buyer, seller };
  }
  let id: string;
  if (options.holdback) {
    id = (await createLoiDeal(db.pool, { seller, buyer, terms: HOLDBACK_TERMS })).dealId;
  } else {
    const listing = await createListing(db.pool, seller.id, "approved");
    const amount = options.amount ?? "1250.00";
    const { rows } = await db.pool.query<{ id: string }>(
      `insert into public.deals (listing_id, buyer_id, seller_id, amount, currency, terms)
       values ($1, $2, $3, $4::numeric, 'USD',
               public.offer_terms_checked($5::jsonb, $4::numeric, 'USD'))
       returning id`,
      [
        listing.id,
        buyer.id,
        seller.id,
        amount,
        options.terms ? JSON.stringify(options.terms) : null,
      ],
    );
    id = rows[0]!.id;
  }
  await move(id, ...PATHS[stage]);
  if (stage === "handed_over") await completeHandover(id);
  return { id, buyer, seller };
}

/**
 * Records a settlement of deal `id` as the processor's webhook would leave it:
 * `kind` with `status`, of `amount` (default: what deal_transfer_amount says
 * for a transfer, else 1.00).
 */
async function settlement(
  id: string,
  kind: "payout" | "holdback" | "repayout" | "refund" | "partial_refund",
  status: "pending" | "succeeded" | "reversed" | "failed" = "succeeded",
  amount?: string,
): Promise<string> {
  const transfer = kind === "payout" || kind === "holdback" || kind === "repayout";
  const priced = amount ??
    (transfer
      ? await scalar<string | null>("select public.deal_transfer_amount($1, $2)::text", [id, kind])
      : null) ??
    "1.00";
  const tag = crypto.randomUUID().slice(0, 12);
  const { rows } = await db.pool.query<{ amount: string }>(
    `insert into public.deal_settlements (deal_id, kind, status, amount, currency,
       destination_account, payproc_id, payproc_reversal_id, settled_at)
     values ($1, $2, $3, $4::numeric, 'USD', $5, $6, $7, $8) returning amount::text as amount`,
    [
      id,
      kind,
      status,
      priced,
      transfer ? `acct_${tag}` : null,
      status === "pending" ? null : `${transfer ? "tr" : "re"}_${tag}`,
      status === "reversed" ? `trr_${tag}` : null,
      status === "succeeded" || status === "reversed" ? new Date() : null,
    ],
  );
  return rows[0]!.amount;
}

interface DealRow {
  status: string;
  amount: string;
  commission: string | null;
  handover_completed_at: Date | null;
  inspection_ends_at: Date | null;
  delivery_accepted_at: Date | null;
}

async function dealOf(id: string): Promise<DealRow> {
  const { rows } = await db.pool.query<DealRow>(
    `select status, amount::text as amount, commission::text as commission, handover_completed_at,
            inspection_ends_at, delivery_accepted_at
     from public.deals where id = $1`,
    [id],
  );
  return rows[0]!;
}

// -----------------------------------------------------------------------------
// Cases, events and notices
// -----------------------------------------------------------------------------

interface CaseRow {
  id: string;
  deal_id: string;
  opened_by: string | null;
  opened_by_side: string;
  reason: string;
  details: string;
  status: string;
  negotiate_until: Date;
  escalated_at: Date | null;
  escalated_by: string | null;
  buyer_outcome: string | null;
  buyer_refund_amount: string | null;
  seller_outcome: string | null;
  seller_refund_amount: string | null;
  outcome: string | null;
  refund_amount: string | null;
  phase: string | null;
  resolved_by: string | null;
  resolution: string | null;
  resolved_at: Date | null;
  money_moved_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

async function caseOf(id: string): Promise<CaseRow> {
  const { rows } = await db.pool.query<CaseRow>("select * from public.deal_cases where id = $1", [
    id,
  ]);
  return rows[0]!;
}

/** `who` opens a case on deal `dealId`; answers its id. */
function openCase(
  who: TestUser,
  dealId: string,
  reason = "not_as_described",
  details = "The traffic is half of what the listing showed",
): Promise<string> {
  return callAs<string>(as(who), OPEN, [dealId, reason, details]);
}

/** Resolves case `id` on the service connection as `admin` would (resolve-deal-case). */
function resolveCase(id: string, outcome = "release", amount: string | null = null) {
  return rowAs<CaseRow>(SERVICE, RESOLVE, [id, outcome, amount, admin.id]);
}

interface EventRow {
  from_status: string | null;
  to_status: string;
  cause: string;
  payproc_object_id: string | null;
  actor_id: string | null;
  detail: Record<string, unknown>;
}

const CASE_CAUSES = [
  "case_opened",
  "case_settlement_proposed",
  "case_escalated",
  "case_resolved",
  "delivery_accepted",
];

/** Deal `id`'s case and delivery events, oldest first. */
async function caseEvents(id: string): Promise<EventRow[]> {
  const { rows } = await db.pool.query<EventRow>(
    `select from_status, to_status, cause, payproc_object_id, actor_id, detail
     from public.deal_events where deal_id = $1 and cause = any ($2) order by id`,
    [id, CASE_CAUSES],
  );
  return rows;
}

/** The notices queued about `subject` (of `kind`), as sorted `[kind, user]` pairs. */
async function notices(subject: string, kind?: string): Promise<string[][]> {
  const { rows } = await db.pool.query<{ kind: string; user_id: string }>(
    `select kind, user_id from public.notice_queue
     where subject_id = $1 and ($2::text is null or kind = $2)`,
    [subject, kind ?? null],
  );
  return rows.map((r) => [r.kind, r.user_id]).sort();
}

/** `[kind, user]` pairs for `users`, sorted. */
function told(kind: string, ...users: TestUser[] | string[]): string[][] {
  return users.map((u) => [kind, typeof u === "string" ? u : u.id]).sort();
}

async function admins(): Promise<string[]> {
  const { rows } = await db.pool.query<{ user_id: string }>(
    "select user_id from public.user_roles where role = 'admin'",
  );
  return rows.map((r) => r.user_id);
}

/** The release hold of deal `id` (deal_release_hold). */
function releaseHold(id: string): Promise<string | null> {
  return scalar<string | null>("select public.deal_release_hold($1)", [id]);
}

function held(id: string): Promise<string> {
  return scalar<string>("select public.deal_held_amount($1)::numeric(12, 2)::text", [id]);
}

function transfer(id: string, kind: string): Promise<string | null> {
  return scalar<string | null>("select public.deal_transfer_amount($1, $2)::text", [id, kind]);
}

// Money in cents, for the plan's arithmetic.
const cents = (amount: string) => Math.round(Number(amount) * 100);
const money = (c: number) => (c / 100).toFixed(2);
/** round(c · part / whole) half away from zero, in cents (positive values). */
const share = (c: number, part: number, whole: number) =>
  Math.floor((2 * c * part + whole) / (2 * whole));

// -----------------------------------------------------------------------------
// open_deal_case()
// -----------------------------------------------------------------------------

sqlTest(
  "open_deal_case(): the buyer in handover opens a case, open for 7 days, with one event and both sides told",
  async () => {
    const deal = await newDeal("in_handover");
    const caseId = await openCase(
      deal.buyer,
      deal.id,
      "not_delivered",
      "  The repository was never shared \r\nStill waiting  ",
    );
    const row = await caseOf(caseId);
    assert.deepEqual(
      {
        deal: row.deal_id,
        by: row.opened_by,
        side: row.opened_by_side,
        reason: row.reason,
        details: row.details,
        status: row.status,
        proposals: [row.buyer_outcome, row.seller_outcome],
        outcome: row.outcome,
        resolved_at: row.resolved_at,
        escalated_at: row.escalated_at,
      },
      {
        deal: deal.id,
        by: deal.buyer.id,
        side: "buyer",
        reason: "not_delivered",
        details: "The repository was never shared \nStill waiting",
        status: "open",
        proposals: [null, null],
        outcome: null,
        resolved_at: null,
        escalated_at: null,
      },
    );
    assert.equal(row.negotiate_until.getTime(), row.created_at.getTime() + 7 * DAY);
    assert.deepEqual(await caseEvents(deal.id), [{
      from_status: "in_handover",
      to_status: "in_handover",
      cause: "case_opened",
      payproc_object_id: caseId,
      actor_id: deal.buyer.id,
      detail: { case: caseId, reason: "not_delivered", by: "buyer" },
    }]);
    assert.deepEqual(await notices(caseId), told("deal_case_opened", deal.buyer, deal.seller));
    assert.equal(await releaseHold(deal.id), "case_open");
    assert.equal((await dealOf(deal.id)).status, "in_handover", "a case moves no deal state");

    // The seller may open one as soon as the deal is funded.
    const funded = await newDeal("funded");
    const sellers = await openCase(funded.seller, funded.id, "payment_terms", "Wrong amount");
    assert.equal((await caseOf(sellers)).opened_by_side, "seller");
    assert.deepEqual(await caseEvents(funded.id), [{
      from_status: "funded",
      to_status: "funded",
      cause: "case_opened",
      payproc_object_id: sellers,
      actor_id: funded.seller.id,
      detail: { case: sellers, reason: "payment_terms", by: "seller" },
    }]);
    assert.deepEqual(
      await notices(sellers),
      told("deal_case_opened", funded.buyer, funded.seller),
    );
  },
);

sqlTest(
  "open_deal_case(): strangers and unknown deals get PT404; admins, anonymous sessions and anon 42501; nothing is written",
  async () => {
    const deal = await newDeal("in_handover");
    const params = [deal.id, "other", "Something is off"];
    await refused(as(stranger), "PT404", undefined, OPEN, params, "stranger");
    await refused(as(admin), "42501", undefined, OPEN, params, "admin");
    await refused(ANON, "42501", undefined, OPEN, params, "anon");
    await refused(
      { role: "authenticated", userId: deal.buyer.id, anonymous: true },
      "42501",
      undefined,
      OPEN,
      params,
      "anonymous session",
    );
    await refused(as(deal.buyer), "PT404", undefined, OPEN, [
      crypto.randomUUID(),
      "other",
      "x",
    ]);
    assert.equal(
      await count("select count(*) from public.deal_cases where deal_id = $1", [deal.id]),
      0,
    );
    assert.deepEqual(await caseEvents(deal.id), []);
  },
);

sqlTest(
  "open_deal_case(): refused in every deal state that holds no money (not_funded, chargeback_open, deal_closed), and for the buyer before the handover (handover_not_started)",
  async () => {
    const states: Array<[Stage, string]> = [
      ["pending_payment", "not_funded"],
      ["in_diligence", "not_funded"],
      ["cancelled", "not_funded"],
      ["disputed", "chargeback_open"],
      ["completed", "deal_closed"],
      ["refunded", "deal_closed"],
    ];
    for (const [stage, hint] of states) {
      const deal = await newDeal(stage);
      for (const side of [deal.buyer, deal.seller]) {
        await refused(as(side), "PT409", hint, OPEN, [deal.id, "other", "Help"], stage);
      }
      assert.equal(
        await count("select count(*) from public.deal_cases where deal_id = $1", [deal.id]),
        0,
        stage,
      );
    }

    // Funded: the seller may, the buyer only once the handover started.
    const funded = await newDeal("funded");
    await refused(as(funded.buyer), "PT409", "handover_not_started", OPEN, [
      funded.id,
      "other",
      "Help",
    ]);
    await openCase(funded.seller, funded.id);

    // The payout of a deal without a holdback went out: nothing is held any more.
    const paid = await newDeal("handed_over");
    await settlement(paid.id, "payout");
    for (const side of [paid.buyer, paid.seller]) {
      await refused(as(side), "PT409", "deal_closed", OPEN, [paid.id, "other", "Help"]);
    }

    // With a holdback the buyer may until the holdback is paid.
    const holdback = await newDeal("handed_over", { holdback: true });
    await settlement(holdback.id, "payout");
    const during = await openCase(holdback.buyer, holdback.id);
    await resolveCase(during);
    await settlement(holdback.id, "holdback");
    await refused(as(holdback.buyer), "PT409", "deal_closed", OPEN, [
      holdback.id,
      "other",
      "Help",
    ]);
  },
);

sqlTest(
  "open_deal_case(): one active case per deal (case_open), three in all; bad reasons and details are 22023",
  async () => {
    const deal = await newDeal("in_handover");
    const first = await openCase(deal.buyer, deal.id);
    for (const side of [deal.buyer, deal.seller]) {
      await refused(as(side), "PT409", "case_open", OPEN, [deal.id, "other", "Again"]);
    }
    await callAs(as(deal.buyer), ESCALATE, [first]);
    await refused(as(deal.seller), "PT409", "case_open", OPEN, [deal.id, "other", "Again"]);
    await resolveCase(first);

    const second = await openCase(deal.seller, deal.id, "access_problem", "Login refused");
    await resolveCase(second, "release");
    const third = await openCase(deal.buyer, deal.id, "misrepresentation", "Fake revenue");
    await resolveCase(third);
    const fourth = await refused(as(deal.buyer), "PT409", undefined, OPEN, [
      deal.id,
      "other",
      "A fourth",
    ]);
    assert.match(fourth.message, /at most 3 cases/);
    assert.equal(
      await count("select count(*) from public.deal_cases where deal_id = $1", [deal.id]),
      3,
    );

    // A case resolved with a refund settles the money: until it moved, no new case.
    const settling = await newDeal("in_handover");
    await resolveCase(await openCase(settling.buyer, settling.id), "refund");
    await refused(as(settling.buyer), "PT409", "case_settling", OPEN, [
      settling.id,
      "other",
      "Again",
    ]);

    const fresh = await newDeal("in_handover");
    for (const reason of [null, "", "fraud", "NOT_DELIVERED"]) {
      await refused(
        as(fresh.buyer),
        "22023",
        undefined,
        OPEN,
        [fresh.id, reason, "Help"],
        `${reason}`,
      );
    }
    for (
      const details of [
        null,
        "",
        "  \r\n\t ",
        "x".repeat(4001),
        "bell\u0007",
        "escape \u001b[31m",
        "next line\u0085",
        "delete\u007f",
      ]
    ) {
      await refused(
        as(fresh.buyer),
        "22023",
        details?.includes("\u0007") || details?.includes("\u001b") || details?.includes("\u0085") ||
          details?.includes("\u007f")
          ? "Plain text only: letters, punctuation, spaces, tabs and line breaks"
          : undefined,
        OPEN,
        [fresh.id, "other", details],
        JSON.stringify(details?.slice(0, 20)),
      );
    }
    assert.equal(
      await count("select count(*) from public.deal_cases where deal_id = $1", [fresh.id]),
      0,
    );
    // 4000 characters, tabs and line breaks are fine.
    const longest = await openCase(fresh.buyer, fresh.id, "other", `a\tb\n${"x".repeat(3996)}`);
    assert.equal((await caseOf(longest)).details.length, 4000);
  },
);

sqlTest(
  "open_deal_case(): a user opens at most 5 cases a day (client_limits deal_case:per_day), refused calls not counted",
  async () => {
    assert.deepEqual(
      (await db.pool.query(
        "select max_hits, window_seconds from public.client_limits where name = 'deal_case:per_day'",
      )).rows,
      [{ max_hits: 5, window_seconds: 86400 }],
    );
    const seller = await createUser(db.pool);
    const deals: Deal[] = [];
    for (let i = 0; i < 6; i++) deals.push(await newDeal("in_handover", { seller }));
    // Refused calls take nothing from the limit.
    await refused(as(seller), "22023", undefined, OPEN, [deals[0]!.id, "fraud", "x"]);
    await refused(as(seller), "22023", undefined, OPEN, [deals[0]!.id, "other", ""]);
    for (const deal of deals.slice(0, 5)) await openCase(seller, deal.id);
    const limited = await errorOf(as(seller), OPEN, [deals[5]!.id, "other", "The sixth"]);
    assert.equal(limited.code, "PT429", limited.message);
    assert.match(limited.hint ?? "", /client_limits deal_case:per_day/);
    assert.equal(
      await count("select count(*) from public.deal_cases where deal_id = $1", [deals[5]!.id]),
      0,
    );
    assert.deepEqual(await caseEvents(deals[5]!.id), []);
    // The limit is the user's: that deal's buyer still opens one.
    await openCase(deals[5]!.buyer, deals[5]!.id);
  },
);

// -----------------------------------------------------------------------------
// settle_deal_case()
// -----------------------------------------------------------------------------

sqlTest(
  "settle_deal_case(): strangers PT404, admins and anon 42501, bad outcomes and amounts 22023; nothing is written",
  async () => {
    const deal = await newDeal("in_handover");
    const caseId = await openCase(deal.buyer, deal.id);
    const before = await caseOf(caseId);
    await refused(as(stranger), "PT404", undefined, SETTLE, [caseId, "release", null]);
    await refused(as(admin), "42501", undefined, SETTLE, [caseId, "release", null]);
    await refused(ANON, "42501", undefined, SETTLE, [caseId, "release", null]);
    await refused(as(deal.buyer), "PT404", undefined, SETTLE, [
      crypto.randomUUID(),
      "release",
      null,
    ]);

    const bad: Array<[string | null, string | null, string]> = [
      [null, null, "no outcome"],
      ["split", null, "unknown outcome"],
      ["Release", null, "outcomes are lower case"],
      ["partial_refund", null, "partial without an amount"],
      ["partial_refund", "0", "partial of 0"],
      ["partial_refund", "-5.00", "a negative amount"],
      ["partial_refund", "1250.00", "all that is held"],
      ["partial_refund", "1250.01", "more than is held"],
      ["partial_refund", "10.005", "not whole in cents"],
      ["release", "10.00", "an amount for release"],
      ["refund", "10.00", "an amount for refund"],
    ];
    for (const [side, user] of [["buyer", deal.buyer], ["seller", deal.seller]] as const) {
      for (const [outcome, amount, label] of bad) {
        await refused(
          as(user),
          "22023",
          undefined,
          SETTLE,
          [caseId, outcome, amount],
          `${side}: ${label}`,
        );
      }
    }
    assert.deepEqual(await caseOf(caseId), before, "nothing written");
    assert.deepEqual((await caseEvents(deal.id)).map((e) => e.cause), ["case_opened"]);
    assert.deepEqual(await notices(caseId, "deal_case_settlement_proposed"), []);

    // Just under what is held is a partial refund.
    const kept = await rowAs<CaseRow>(as(deal.buyer), SETTLE, [
      caseId,
      "partial_refund",
      "1249.99",
    ]);
    assert.deepEqual([kept.status, kept.buyer_outcome, kept.buyer_refund_amount], [
      "open",
      "partial_refund",
      "1249.99",
    ]);
  },
);

sqlTest(
  "settle_deal_case(): a proposal is kept until the other side proposes the same; then the case is settled in the escrow phase",
  async () => {
    const deal = await newDeal("handed_over");
    const caseId = await openCase(deal.seller, deal.id, "other", "The buyer wants more");

    // The buyer proposes a refund: kept, the seller told.
    const first = await rowAs<CaseRow>(as(deal.buyer), SETTLE, [caseId, "refund", null]);
    assert.deepEqual(
      [first.status, first.buyer_outcome, first.buyer_refund_amount, first.seller_outcome],
      ["open", "refund", null, null],
    );
    assert.deepEqual(await notices(caseId, "deal_case_settlement_proposed"), [
      ["deal_case_settlement_proposed", deal.seller.id],
    ]);

    // The seller proposes something else: still open, both proposals kept, the buyer told.
    const second = await rowAs<CaseRow>(as(deal.seller), SETTLE, [caseId, "partial_refund", "300"]);
    assert.deepEqual(
      [
        second.status,
        second.buyer_outcome,
        second.buyer_refund_amount,
        second.seller_outcome,
        second.seller_refund_amount,
        second.outcome,
      ],
      ["open", "refund", null, "partial_refund", "300.00", null],
    );
    assert.deepEqual(
      await notices(caseId, "deal_case_settlement_proposed"),
      told("deal_case_settlement_proposed", deal.buyer, deal.seller),
    );
    assert.deepEqual(await notices(caseId, "deal_case_resolved"), []);

    // The buyer proposes the same: settled.
    const settled = await rowAs<CaseRow>(as(deal.buyer), SETTLE, [
      caseId,
      "partial_refund",
      "300.00",
    ]);
    assert.deepEqual(
      {
        status: settled.status,
        outcome: settled.outcome,
        refund_amount: settled.refund_amount,
        phase: settled.phase,
        resolution: settled.resolution,
        resolved_by: settled.resolved_by,
        money_moved_at: settled.money_moved_at,
        proposals: [settled.buyer_outcome, settled.buyer_refund_amount, settled.seller_outcome],
      },
      {
        status: "resolved",
        outcome: "partial_refund",
        refund_amount: "300.00",
        phase: "escrow",
        resolution: "settled",
        resolved_by: null,
        money_moved_at: null,
        proposals: ["partial_refund", "300.00", "partial_refund"],
      },
    );
    assert.ok(settled.resolved_at instanceof Date);
    assert.deepEqual(await caseOf(caseId), settled, "the answer is the stored row");
    assert.deepEqual(await caseEvents(deal.id), [
      {
        from_status: "in_handover",
        to_status: "in_handover",
        cause: "case_opened",
        payproc_object_id: caseId,
        actor_id: deal.seller.id,
        detail: { case: caseId, reason: "other", by: "seller" },
      },
      {
        from_status: "in_handover",
        to_status: "in_handover",
        cause: "case_settlement_proposed",
        payproc_object_id: null,
        actor_id: deal.buyer.id,
        detail: { case: caseId, by: "buyer", outcome: "refund", refund_amount: null },
      },
      {
        from_status: "in_handover",
        to_status: "in_handover",
        cause: "case_settlement_proposed",
        payproc_object_id: null,
        actor_id: deal.seller.id,
        detail: { case: caseId, by: "seller", outcome: "partial_refund", refund_amount: "300.00" },
      },
      {
        from_status: "in_handover",
        to_status: "in_handover",
        cause: "case_resolved",
        payproc_object_id: caseId,
        actor_id: deal.buyer.id,
        detail: {
          case: caseId,
          outcome: "partial_refund",
          refund_amount: "300.00",
          phase: "escrow",
          resolution: "settled",
        },
      },
    ]);
    assert.deepEqual(
      await notices(caseId, "deal_case_resolved"),
      told("deal_case_resolved", deal.buyer, deal.seller),
    );
    assert.equal(await releaseHold(deal.id), "case_settling");

    // Resolved is final: the same outcome answers the case unchanged, another is PT409.
    const again = await rowAs<CaseRow>(as(deal.seller), SETTLE, [caseId, "partial_refund", "300"]);
    assert.deepEqual(again, settled);
    for (
      const [user, outcome, amount] of [
        [deal.buyer, "refund", null],
        [deal.seller, "partial_refund", "200.00"],
        [deal.seller, "release", null],
      ] as const
    ) {
      await refused(as(user), "PT409", "case_resolved", SETTLE, [caseId, outcome, amount]);
    }
    await refused(as(deal.buyer), "PT409", "case_resolved", ESCALATE, [caseId]);
    assert.deepEqual(await caseOf(caseId), settled);
    assert.equal((await caseEvents(deal.id)).length, 4, "no second event");
    assert.equal(
      await count("select count(*) from public.notice_queue where subject_id = $1", [caseId]),
      6,
      "opened ×2, proposed ×2, resolved ×2",
    );
  },
);

sqlTest(
  "settle_deal_case(): after the payout a case is settled in the holdback phase, its partial refund below the holdback",
  async () => {
    const deal = await newDeal("handed_over", { holdback: true });
    await settlement(deal.id, "payout");
    assert.equal(await held(deal.id), "100.00");
    const caseId = await openCase(deal.buyer, deal.id, "not_as_described", "Churn hidden");
    for (const amount of ["100.00", "100", "150.00", "1000.00"]) {
      await refused(as(deal.buyer), "22023", undefined, SETTLE, [caseId, "partial_refund", amount]);
    }
    await rowAs(as(deal.seller), SETTLE, [caseId, "partial_refund", "99.99"]);
    const settled = await rowAs<CaseRow>(as(deal.buyer), SETTLE, [
      caseId,
      "partial_refund",
      "99.99",
    ]);
    assert.deepEqual(
      [settled.status, settled.outcome, settled.refund_amount, settled.phase, settled.resolution],
      ["resolved", "partial_refund", "99.99", "holdback", "settled"],
    );
    const resolved = (await caseEvents(deal.id)).at(-1)!;
    assert.equal(resolved.cause, "case_resolved");
    assert.equal(resolved.detail.phase, "holdback");

    // Both agreeing on release settles too.
    const other = await newDeal("in_handover");
    const release = await openCase(other.buyer, other.id);
    await rowAs(as(other.buyer), SETTLE, [release, "release", null]);
    const done = await rowAs<CaseRow>(as(other.seller), SETTLE, [release, "release", null]);
    assert.deepEqual(
      [done.status, done.outcome, done.refund_amount, done.phase, done.resolution],
      ["resolved", "release", null, "escrow", "settled"],
    );
    assert.equal(await releaseHold(other.id), null, "a release holds nothing");
  },
);

// -----------------------------------------------------------------------------
// escalate_deal_case() and resolve_deal_case()
// -----------------------------------------------------------------------------

sqlTest(
  "escalate_deal_case(): either side escalates (escalated_by buyer/seller); both sides and every admin are told; twice answers itself; settling is then refused",
  async () => {
    for (const side of ["buyer", "seller"] as const) {
      const deal = await newDeal("in_handover");
      const caseId = await openCase(deal.buyer, deal.id);
      await refused(as(stranger), "PT404", undefined, ESCALATE, [caseId]);
      await refused(as(admin), "42501", undefined, ESCALATE, [caseId]);
      await refused(ANON, "42501", undefined, ESCALATE, [caseId]);
      await refused(as(deal.buyer), "PT404", undefined, ESCALATE, [crypto.randomUUID()]);
      assert.equal((await caseOf(caseId)).status, "open");

      const by = side === "buyer" ? deal.buyer : deal.seller;
      const escalated = await rowAs<CaseRow>(as(by), ESCALATE, [caseId]);
      assert.deepEqual([escalated.status, escalated.escalated_by], ["escalated", side]);
      assert.ok(escalated.escalated_at instanceof Date);
      assert.deepEqual((await caseEvents(deal.id)).at(-1), {
        from_status: "in_handover",
        to_status: "in_handover",
        cause: "case_escalated",
        payproc_object_id: caseId,
        actor_id: by.id,
        detail: { case: caseId, by: side },
      });
      const everyAdmin = await admins();
      assert.ok(everyAdmin.includes(admin.id));
      assert.deepEqual(
        await notices(caseId, "deal_case_escalated"),
        told("deal_case_escalated", deal.buyer.id, deal.seller.id, ...everyAdmin),
      );

      // Again, by either side: the case as it is, no second event.
      for (const user of [deal.buyer, deal.seller]) {
        assert.deepEqual(await rowAs<CaseRow>(as(user), ESCALATE, [caseId]), escalated);
      }
      assert.equal(
        (await caseEvents(deal.id)).filter((e) => e.cause === "case_escalated").length,
        1,
      );
      // An admin decides now.
      for (const user of [deal.buyer, deal.seller]) {
        await refused(as(user), "PT409", "case_escalated", SETTLE, [caseId, "release", null]);
      }
      assert.deepEqual(await caseOf(caseId), escalated);
      assert.equal(await releaseHold(deal.id), "case_open");
    }
  },
);

sqlTest(
  "escalate_deal_case() on the service connection: PT409 before negotiate_until; after it escalated by the deadline, once",
  async () => {
    const deal = await newDeal("in_handover");
    const caseId = await openCase(deal.buyer, deal.id);
    const early = await refused(SERVICE, "PT409", undefined, ESCALATE, [caseId]);
    assert.match(early.message, /negotiation runs until/);
    assert.equal((await caseOf(caseId)).status, "open");

    await db.pool.query(
      "update public.deal_cases set negotiate_until = now() - interval '1 minute' where id = $1",
      [caseId],
    );
    const escalated = await rowAs<CaseRow>(SERVICE, ESCALATE, [caseId]);
    assert.deepEqual([escalated.status, escalated.escalated_by], ["escalated", "deadline"]);
    assert.deepEqual(await rowAs<CaseRow>(SERVICE, ESCALATE, [caseId]), escalated);
    assert.deepEqual(
      (await caseEvents(deal.id)).filter((e) => e.cause === "case_escalated"),
      [{
        from_status: "in_handover",
        to_status: "in_handover",
        cause: "case_escalated",
        payproc_object_id: caseId,
        actor_id: null,
        detail: { case: caseId, by: "deadline" },
      }],
    );
    assert.deepEqual(
      await notices(caseId, "deal_case_escalated"),
      told("deal_case_escalated", deal.buyer.id, deal.seller.id, ...await admins()),
    );

    // A resolved case is not escalated, on the service connection either.
    await resolveCase(caseId);
    await refused(SERVICE, "PT409", "case_resolved", ESCALATE, [caseId]);
    await refused(SERVICE, "PT404", undefined, ESCALATE, [crypto.randomUUID()]);
  },
);

sqlTest(
  "resolve_deal_case(): the service connection resolves an open or escalated case for an admin (resolution admin, resolved_by); clients may not; unknown cases PT404",
  async () => {
    const deal = await newDeal("in_handover");
    const caseId = await openCase(deal.buyer, deal.id);
    await callAs(as(deal.seller), ESCALATE, [caseId]);
    for (const who of [as(admin), as(deal.buyer), ANON]) {
      await refused(who, "42501", undefined, RESOLVE, [caseId, "refund", null, admin.id]);
    }
    await refused(SERVICE, "PT404", undefined, RESOLVE, [
      crypto.randomUUID(),
      "refund",
      null,
      admin.id,
    ]);
    for (
      const [outcome, amount] of [
        ["split", null],
        ["partial_refund", null],
        ["partial_refund", "1250.00"],
        ["partial_refund", "0.001"],
        ["release", "1.00"],
      ]
    ) {
      await refused(SERVICE, "22023", undefined, RESOLVE, [caseId, outcome, amount, admin.id]);
    }
    assert.equal((await caseOf(caseId)).status, "escalated");

    const resolved = await resolveCase(caseId, "partial_refund", "125.50");
    assert.deepEqual(
      [
        resolved.status,
        resolved.outcome,
        resolved.refund_amount,
        resolved.phase,
        resolved.resolution,
        resolved.resolved_by,
        resolved.money_moved_at,
      ],
      ["resolved", "partial_refund", "125.50", "escrow", "admin", admin.id, null],
    );
    assert.deepEqual((await caseEvents(deal.id)).at(-1), {
      from_status: "in_handover",
      to_status: "in_handover",
      cause: "case_resolved",
      payproc_object_id: caseId,
      actor_id: admin.id,
      detail: {
        case: caseId,
        outcome: "partial_refund",
        refund_amount: "125.50",
        phase: "escrow",
        resolution: "admin",
      },
    });
    assert.deepEqual(
      await notices(caseId, "deal_case_resolved"),
      told("deal_case_resolved", deal.buyer, deal.seller),
    );
    assert.deepEqual(await resolveCase(caseId, "partial_refund", "125.5"), resolved);
    await refused(SERVICE, "PT409", "case_resolved", RESOLVE, [caseId, "refund", null, admin.id]);
    await refused(SERVICE, "PT409", "case_resolved", RESOLVE, [
      caseId,
      "partial_refund",
      "100.00",
      admin.id,
    ]);
    assert.equal(
      (await caseEvents(deal.id)).filter((e) => e.cause === "case_resolved").length,
      1,
    );

    // An open case too: an admin need not wait for the escalation.
    const other = await newDeal("in_handover");
    const open = await openCase(other.seller, other.id);
    const refunded = await resolveCase(open, "refund");
    assert.deepEqual(
      [refunded.status, refunded.outcome, refunded.escalated_at, refunded.resolution],
      ["resolved", "refund", null, "admin"],
    );
  },
);

sqlTest(
  "finish: no case is resolved while a transfer to the seller is pending (PT409 transfer_in_progress); once it succeeded, in the holdback phase",
  async () => {
    const deal = await newDeal("handed_over", { holdback: true });
    const caseId = await openCase(deal.seller, deal.id);
    await settlement(deal.id, "payout", "pending");
    await rowAs(as(deal.seller), SETTLE, [caseId, "release", null]);
    const before = await caseOf(caseId);
    await refused(as(deal.buyer), "PT409", "transfer_in_progress", SETTLE, [
      caseId,
      "release",
      null,
    ]);
    await refused(SERVICE, "PT409", "transfer_in_progress", RESOLVE, [
      caseId,
      "release",
      null,
      admin.id,
    ]);
    assert.deepEqual(await caseOf(caseId), before, "the buyer's proposal was not kept either");
    assert.equal((await caseEvents(deal.id)).filter((e) => e.cause === "case_resolved").length, 0);

    await db.pool.query(
      `update public.deal_settlements set status = 'succeeded', payproc_id = 'tr_' || id,
         settled_at = now() where deal_id = $1 and kind = 'payout'`,
      [deal.id],
    );
    const settled = await rowAs<CaseRow>(as(deal.buyer), SETTLE, [caseId, "release", null]);
    assert.deepEqual([settled.status, settled.phase], ["resolved", "holdback"]);

    // A pending holdback holds the resolution too.
    const second = await openCase(deal.buyer, deal.id);
    await settlement(deal.id, "holdback", "pending");
    await refused(SERVICE, "PT409", "transfer_in_progress", RESOLVE, [
      second,
      "refund",
      null,
      admin.id,
    ]);
  },
);

// -----------------------------------------------------------------------------
// accept_delivery()
// -----------------------------------------------------------------------------

sqlTest(
  "accept_delivery(): the buyer ends the inspection window now; the seller is told; twice answers the deal unchanged",
  async () => {
    const deal = await newDeal("handed_over");
    const window = (await dealOf(deal.id)).inspection_ends_at!;
    assert.ok(window.getTime() > Date.now() + 6 * DAY);

    await refused(as(deal.seller), "42501", undefined, ACCEPT, [deal.id], "seller");
    await refused(as(admin), "42501", undefined, ACCEPT, [deal.id], "admin");
    await refused(as(stranger), "PT404", undefined, ACCEPT, [deal.id], "stranger");
    await refused(ANON, "42501", undefined, ACCEPT, [deal.id], "anon");
    await refused(as(deal.buyer), "PT404", undefined, ACCEPT, [crypto.randomUUID()]);
    assert.equal((await dealOf(deal.id)).delivery_accepted_at, null);

    const accepted = await rowAs<{ delivery_accepted_at: Date; inspection_ends_at: Date }>(
      as(deal.buyer),
      ACCEPT,
      [deal.id],
    );
    const row = await dealOf(deal.id);
    assert.ok(row.delivery_accepted_at instanceof Date);
    assert.equal(row.inspection_ends_at!.getTime(), row.delivery_accepted_at!.getTime());
    assert.ok(Math.abs(row.delivery_accepted_at!.getTime() - Date.now()) < 60_000);
    assert.equal(accepted.inspection_ends_at.getTime(), row.inspection_ends_at!.getTime());
    assert.equal(row.status, "in_handover");
    assert.deepEqual(await caseEvents(deal.id), [{
      from_status: "in_handover",
      to_status: "in_handover",
      cause: "delivery_accepted",
      payproc_object_id: deal.id,
      actor_id: deal.buyer.id,
      detail: {},
    }]);
    assert.deepEqual(await notices(deal.id, "deal_delivery_accepted"), [
      ["deal_delivery_accepted", deal.seller.id],
    ]);

    const again = await rowAs<{ delivery_accepted_at: Date; inspection_ends_at: Date }>(
      as(deal.buyer),
      ACCEPT,
      [deal.id],
    );
    assert.equal(again.delivery_accepted_at.getTime(), row.delivery_accepted_at!.getTime());
    assert.equal(again.inspection_ends_at.getTime(), row.inspection_ends_at!.getTime());
    assert.equal((await caseEvents(deal.id)).length, 1, "one event");
    assert.equal((await notices(deal.id, "deal_delivery_accepted")).length, 1);

    // A window already over stays where it ended.
    const lapsed = await newDeal("handed_over");
    await db.pool.query(
      "update public.deals set inspection_ends_at = now() - interval '1 hour' where id = $1",
      [lapsed.id],
    );
    const ended = (await dealOf(lapsed.id)).inspection_ends_at!;
    await callAs(as(lapsed.buyer), ACCEPT, [lapsed.id]);
    assert.equal((await dealOf(lapsed.id)).inspection_ends_at!.getTime(), ended.getTime());
  },
);

sqlTest(
  "accept_delivery(): refused before the handover is complete (handover_not_complete) and while a case is open or escalated (case_open)",
  async () => {
    for (const stage of ["funded", "in_handover", "completed", "refunded"] as const) {
      const deal = await newDeal(stage);
      await refused(as(deal.buyer), "PT409", "handover_not_complete", ACCEPT, [deal.id], stage);
      assert.equal((await dealOf(deal.id)).delivery_accepted_at, null);
    }
    const deal = await newDeal("handed_over");
    const caseId = await openCase(deal.seller, deal.id);
    await refused(as(deal.buyer), "PT409", "case_open", ACCEPT, [deal.id], "open");
    await callAs(as(deal.buyer), ESCALATE, [caseId]);
    await refused(as(deal.buyer), "PT409", "case_open", ACCEPT, [deal.id], "escalated");
    assert.equal((await dealOf(deal.id)).delivery_accepted_at, null);
    assert.deepEqual(await notices(deal.id, "deal_delivery_accepted"), []);
    // Resolved, the buyer may accept.
    await resolveCase(caseId);
    await callAs(as(deal.buyer), ACCEPT, [deal.id]);
    assert.ok((await dealOf(deal.id)).delivery_accepted_at instanceof Date);
  },
);

// -----------------------------------------------------------------------------
// A deal that ends closes its cases
// -----------------------------------------------------------------------------

sqlTest(
  "close_cases_with_deal: a deal refunded resolves its open case with refund (deal_refunded), completed with release (deal_completed), money moved",
  async () => {
    // A chargeback won during the handover returns to it with the case still open.
    const refundedDeal = await newDeal("in_handover");
    const open = await openCase(refundedDeal.buyer, refundedDeal.id);
    await move(refundedDeal.id, "disputed", "in_handover");
    assert.equal((await caseOf(open)).status, "open");
    await move(refundedDeal.id, "refunded");
    const refunded = await caseOf(open);
    assert.deepEqual(
      [
        refunded.status,
        refunded.outcome,
        refunded.refund_amount,
        refunded.phase,
        refunded.resolution,
        refunded.resolved_by,
      ],
      ["resolved", "refund", null, "escrow", "deal_refunded", null],
    );
    assert.ok(refunded.money_moved_at instanceof Date);
    assert.deepEqual((await caseEvents(refundedDeal.id)).at(-1), {
      from_status: "refunded",
      to_status: "refunded",
      cause: "case_resolved",
      payproc_object_id: open,
      actor_id: null,
      detail: {
        case: open,
        outcome: "refund",
        refund_amount: null,
        phase: "escrow",
        resolution: "deal_refunded",
      },
    });
    assert.deepEqual(
      await notices(open, "deal_case_resolved"),
      told("deal_case_resolved", refundedDeal.buyer, refundedDeal.seller),
    );
    assert.equal(await releaseHold(refundedDeal.id), null);

    // Completed (the holdback paid) with an escalated case: release.
    const completedDeal = await newDeal("handed_over", { holdback: true });
    await settlement(completedDeal.id, "payout");
    const escalated = await openCase(completedDeal.buyer, completedDeal.id);
    await callAs(as(completedDeal.buyer), ESCALATE, [escalated]);
    await move(completedDeal.id, "completed");
    const released = await caseOf(escalated);
    assert.deepEqual(
      [
        released.status,
        released.outcome,
        released.phase,
        released.resolution,
        released.escalated_by,
      ],
      ["resolved", "release", "holdback", "deal_completed", "buyer"],
    );
    assert.ok(released.money_moved_at instanceof Date);
    assert.equal(
      (await caseEvents(completedDeal.id)).filter((e) => e.cause === "case_resolved").length,
      1,
    );

    // A case resolved before stays as it was.
    const earlier = await newDeal("in_handover");
    const settled = await openCase(earlier.buyer, earlier.id);
    const before = await resolveCase(settled, "partial_refund", "10.00");
    await move(earlier.id, "refunded");
    assert.deepEqual(await caseOf(settled), before);
  },
);

// -----------------------------------------------------------------------------
// The money functions
// -----------------------------------------------------------------------------

sqlTest(
  "deal_held_amount(): the whole amount before the payout, the holdback after it, 0 once the holdback went or the deal closed",
  async () => {
    assert.equal(await held((await newDeal("pending_payment")).id), "0.00");
    assert.equal(await held((await newDeal("funded")).id), "1250.00");
    assert.equal(await held((await newDeal("disputed")).id), "1250.00");
    assert.equal(await held((await newDeal("completed")).id), "0.00");
    assert.equal(await held((await newDeal("refunded")).id), "0.00");
    assert.equal(await held((await newDeal("cancelled")).id), "0.00");

    const plain = await newDeal("handed_over");
    await settlement(plain.id, "payout", "pending");
    assert.equal(await held(plain.id), "1250.00", "a pending payout holds everything still");
    await db.pool.query(
      `update public.deal_settlements set status = 'succeeded', payproc_id = 'tr_' || id,
         settled_at = now() where deal_id = $1`,
      [plain.id],
    );
    assert.equal(await held(plain.id), "0.00", "without a holdback the payout was everything");

    const deal = await newDeal("handed_over", { holdback: true });
    assert.equal(await held(deal.id), "1000.00");
    await settlement(deal.id, "payout", "reversed");
    assert.equal(await held(deal.id), "100.00", "a reversed payout was paid out");
    await settlement(deal.id, "holdback");
    assert.equal(await held(deal.id), "0.00");

    const refundedPart = await newDeal("handed_over", { holdback: true });
    await settlement(refundedPart.id, "payout");
    await settlement(refundedPart.id, "partial_refund", "succeeded", "40.00");
    assert.equal(
      await held(refundedPart.id),
      "0.00",
      "the holdback refunded in part, the rest paid",
    );

    // Inserted terms: 1250.00 with 1000.00 at close.
    const inserted = await newDeal("handed_over", {
      terms: { cash_at_close: "1000.00", holdback_days: 20, exclusivity_days: 0 },
    });
    assert.equal(await held(inserted.id), "1250.00");
    await settlement(inserted.id, "payout");
    assert.equal(await held(inserted.id), "250.00");
    await move(inserted.id, "completed");
    assert.equal(await held(inserted.id), "0.00");
  },
);

sqlTest(
  "deal_transfer_amount(): payout, holdback and repayout in every row of the money plan",
  async () => {
    // No case, no holdback: payout A - C.
    const plain = await newDeal("handed_over");
    const a = cents("1250.00");
    const c = cents((await dealOf(plain.id)).commission!);
    assert.ok(c > 0, "funding froze a commission");
    assert.equal(await transfer(plain.id, "payout"), money(a - c));
    assert.equal(await transfer(plain.id, "holdback"), null);
    assert.equal(await transfer(plain.id, "repayout"), null);

    // No case, a holdback: payout cash - C, holdback H.
    const hb = await newDeal("handed_over", { holdback: true });
    const hc = cents((await dealOf(hb.id)).commission!);
    assert.equal(await transfer(hb.id, "payout"), money(90000 - hc));
    assert.equal(await transfer(hb.id, "holdback"), "100.00");
    // Repayout: what was reversed, payout and holdback.
    await settlement(hb.id, "payout", "reversed");
    assert.equal(await transfer(hb.id, "repayout"), money(90000 - hc));
    await settlement(hb.id, "holdback", "reversed");
    assert.equal(await transfer(hb.id, "repayout"), money(90000 - hc + 10000));

    // Escrow phase, partial refund R: payout (A - R) - round(C · (A - R) / A); no holdback.
    const partial = await newDeal("handed_over");
    const pc = cents((await dealOf(partial.id)).commission!);
    await resolveCase(await openCase(partial.buyer, partial.id), "partial_refund", "333.33");
    const rest = a - 33333;
    assert.equal(await transfer(partial.id, "payout"), money(rest - share(pc, rest, a)));
    assert.equal(await transfer(partial.id, "holdback"), null);

    const partialHb = await newDeal("handed_over", { holdback: true });
    const phc = cents((await dealOf(partialHb.id)).commission!);
    await resolveCase(await openCase(partialHb.buyer, partialHb.id), "partial_refund", "250.01");
    const hbRest = 100000 - 25001;
    assert.equal(
      await transfer(partialHb.id, "payout"),
      money(hbRest - share(phc, hbRest, 100000)),
    );
    assert.equal(await transfer(partialHb.id, "holdback"), null, "escrow phase: no holdback after");

    // Escrow phase, refund: nothing is paid out.
    for (const holdback of [false, true]) {
      const refund = await newDeal("handed_over", { holdback });
      await resolveCase(await openCase(refund.buyer, refund.id), "refund");
      assert.equal(await transfer(refund.id, "payout"), null);
      assert.equal(await transfer(refund.id, "holdback"), null);
    }

    // Escrow phase, release: as without a case.
    const release = await newDeal("handed_over", { holdback: true });
    const rc = cents((await dealOf(release.id)).commission!);
    await resolveCase(await openCase(release.buyer, release.id), "release");
    assert.equal(await transfer(release.id, "payout"), money(90000 - rc));
    assert.equal(await transfer(release.id, "holdback"), "100.00");

    // Holdback phase, partial refund R: holdback H - R (the payout as it was).
    const late = await newDeal("handed_over", { holdback: true });
    const lc = cents((await dealOf(late.id)).commission!);
    await settlement(late.id, "payout");
    const lateCase = await resolveCase(
      await openCase(late.buyer, late.id),
      "partial_refund",
      "37.45",
    );
    assert.equal(lateCase.phase, "holdback");
    assert.equal(await transfer(late.id, "holdback"), "62.55");
    assert.equal(await transfer(late.id, "payout"), money(90000 - lc));

    // Holdback phase, refund: no holdback.
    const lateRefund = await newDeal("handed_over", { holdback: true });
    await settlement(lateRefund.id, "payout");
    const refundCase = await resolveCase(
      await openCase(lateRefund.seller, lateRefund.id),
      "refund",
    );
    assert.equal(refundCase.phase, "holdback");
    assert.equal(await transfer(lateRefund.id, "holdback"), null);

    // Terms inserted with the deal (1250.00, 1000.00 at close): cash - C, and H.
    const inserted = await newDeal("handed_over", {
      terms: { cash_at_close: "1000.00", holdback_days: 20, exclusivity_days: 0 },
    });
    const ic = cents((await dealOf(inserted.id)).commission!);
    assert.equal(await transfer(inserted.id, "payout"), money(100000 - ic));
    assert.equal(await transfer(inserted.id, "holdback"), "250.00");

    // A case the deal's end resolved (deal_completed) is not a case's money.
    const ended = await newDeal("in_handover");
    const ec = cents((await dealOf(ended.id)).commission!);
    await openCase(ended.buyer, ended.id);
    await move(ended.id, "completed");
    assert.equal(await transfer(ended.id, "payout"), money(a - ec));

    // No commission yet: nothing; an unknown kind: 22023.
    assert.equal(await transfer((await newDeal("pending_payment")).id, "payout"), null);
    await refused(SERVICE, "22023", undefined, "select public.deal_transfer_amount($1, 'refund')", [
      plain.id,
    ]);
  },
);

sqlTest(
  "deal_release_hold(): case_open while a case is open or escalated, case_settling while a resolved refund's money moves, else null",
  async () => {
    const deal = await newDeal("handed_over");
    assert.equal(await releaseHold(deal.id), null);
    const first = await openCase(deal.buyer, deal.id);
    assert.equal(await releaseHold(deal.id), "case_open");
    await callAs(as(deal.seller), ESCALATE, [first]);
    assert.equal(await releaseHold(deal.id), "case_open");
    await resolveCase(first, "release");
    assert.equal(await releaseHold(deal.id), null, "a release waits for nothing");

    for (const [outcome, amount] of [["partial_refund", "50.00"], ["refund", null]] as const) {
      const other = await newDeal("handed_over");
      const caseId = await openCase(other.seller, other.id);
      await resolveCase(caseId, outcome, amount);
      assert.equal(await releaseHold(other.id), "case_settling", outcome);
      await db.pool.query("update public.deal_cases set money_moved_at = now() where id = $1", [
        caseId,
      ]);
      assert.equal(await releaseHold(other.id), null, outcome);
    }
    // The money functions are the service connection's.
    for (
      const sql of [
        "select public.deal_release_hold($1)",
        "select public.deal_held_amount($1)",
        "select public.deal_transfer_amount($1, 'payout')",
      ]
    ) {
      await refused(as(deal.buyer), "42501", undefined, sql, [deal.id]);
    }
  },
);

// -----------------------------------------------------------------------------
// Races
// -----------------------------------------------------------------------------

sqlTest(
  "races: the buyer and the seller open a case at once — one case, the other PT409 case_open",
  async () => {
    for (let round = 0; round < 4; round++) {
      const deal = await newDeal("in_handover");
      const results = await raceCalls(db.url, [
        { who: as(deal.buyer), sql: OPEN, params: [deal.id, "not_delivered", "Buyer's"] },
        { who: as(deal.seller), sql: OPEN, params: [deal.id, "payment_terms", "Seller's"] },
      ]);
      assert.equal(results.filter((r) => r.status === "fulfilled").length, 1, `round ${round}`);
      const lost = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
      assert.equal(settledCode(lost), "PT409");
      assert.equal((lost.reason as { hint?: string }).hint, "case_open");
      assert.equal(
        await count("select count(*) from public.deal_cases where deal_id = $1", [deal.id]),
        1,
      );
      assert.equal((await caseEvents(deal.id)).length, 1);
    }
  },
);

sqlTest(
  "races: both sides settle with the same outcome at once — resolved once, one case_resolved event",
  async () => {
    for (let round = 0; round < 4; round++) {
      const deal = await newDeal("in_handover");
      const caseId = await openCase(deal.buyer, deal.id);
      const results = await raceCalls(db.url, [
        { who: as(deal.buyer), sql: SETTLE, params: [caseId, "partial_refund", "42.00"] },
        { who: as(deal.seller), sql: SETTLE, params: [caseId, "partial_refund", "42.00"] },
      ]);
      assert.ok(results.every((r) => r.status === "fulfilled"), `round ${round}`);
      const row = await caseOf(caseId);
      assert.deepEqual([row.status, row.outcome, row.refund_amount, row.resolution], [
        "resolved",
        "partial_refund",
        "42.00",
        "settled",
      ]);
      assert.deepEqual((await caseEvents(deal.id)).map((e) => e.cause), [
        "case_opened",
        "case_settlement_proposed",
        "case_resolved",
      ]);
      // The later call answered the resolved case.
      const statuses = results.map((r) =>
        (r as PromiseFulfilledResult<Record<string, unknown>[]>)
          .value[0]!.status
      ).sort();
      assert.deepEqual(statuses, ["open", "resolved"]);
    }
  },
);

sqlTest(
  "races: a settlement racing an escalation — resolved or escalated, never both, the events agreeing",
  async () => {
    for (let round = 0; round < 6; round++) {
      const deal = await newDeal("in_handover");
      const caseId = await openCase(deal.buyer, deal.id);
      await rowAs(as(deal.seller), SETTLE, [caseId, "release", null]);
      const [settle, escalate] = await raceCalls(db.url, [
        { who: as(deal.buyer), sql: SETTLE, params: [caseId, "release", null] },
        { who: as(round % 2 ? deal.seller : deal.buyer), sql: ESCALATE, params: [caseId] },
      ]);
      const row = await caseOf(caseId);
      const causes = (await caseEvents(deal.id)).map((e) => e.cause);
      if (row.status === "resolved") {
        assert.equal(settle!.status, "fulfilled");
        assert.equal(settledCode(escalate!), "PT409");
        assert.equal(
          ((escalate as PromiseRejectedResult).reason as { hint?: string }).hint,
          "case_resolved",
        );
        assert.equal(row.escalated_at, null);
        assert.deepEqual(causes, ["case_opened", "case_settlement_proposed", "case_resolved"]);
      } else {
        assert.equal(row.status, "escalated", `round ${round}`);
        assert.equal(escalate!.status, "fulfilled");
        assert.equal(settledCode(settle!), "PT409");
        assert.equal(
          ((settle as PromiseRejectedResult).reason as { hint?: string }).hint,
          "case_escalated",
        );
        assert.equal(row.outcome, null);
        assert.equal(row.buyer_outcome, null, "the refused proposal was not kept");
        assert.deepEqual(causes, ["case_opened", "case_settlement_proposed", "case_escalated"]);
      }
    }
  },
);

sqlTest(
  "races: accept_delivery racing open_deal_case — the case opens; the delivery is accepted first or refused with case_open",
  async () => {
    const seen = new Set<string>();
    for (let round = 0; round < 6; round++) {
      const deal = await newDeal("handed_over");
      const opener = round % 2 ? deal.seller : deal.buyer;
      const [accept, open] = await raceCalls(db.url, [
        { who: as(deal.buyer), sql: ACCEPT, params: [deal.id] },
        { who: as(opener), sql: OPEN, params: [deal.id, "other", "Raced"] },
      ]);
      assert.equal(open!.status, "fulfilled", `round ${round}: the case opens either way`);
      const caseId = String(
        (open as PromiseFulfilledResult<Record<string, unknown>[]>).value[0]!.id,
      );
      assert.equal((await caseOf(caseId)).status, "open");
      const row = await dealOf(deal.id);
      const causes = (await caseEvents(deal.id)).map((e) => e.cause);
      if (accept!.status === "fulfilled") {
        seen.add("accepted first");
        assert.ok(row.delivery_accepted_at instanceof Date);
        assert.deepEqual(causes, ["delivery_accepted", "case_opened"]);
      } else {
        seen.add("opened first");
        assert.equal(settledCode(accept!), "PT409");
        assert.equal(
          ((accept as PromiseRejectedResult).reason as { hint?: string }).hint,
          "case_open",
        );
        assert.equal(row.delivery_accepted_at, null);
        assert.deepEqual(causes, ["case_opened"]);
      }
      assert.equal(await releaseHold(deal.id), "case_open");
    }
    assert.ok(seen.size >= 1);
  },
);

sqlTest(
  "races: the deadline job escalates one case 10 times at once — escalated once, one event",
  async () => {
    const deal = await newDeal("in_handover");
    const caseId = await openCase(deal.seller, deal.id);
    await db.pool.query(
      "update public.deal_cases set negotiate_until = now() - interval '1 second' where id = $1",
      [caseId],
    );
    const results = await raceCalls(
      db.url,
      Array.from({ length: 10 }, () => ({ who: SERVICE, sql: ESCALATE, params: [caseId] })),
    );
    assert.ok(results.every((r) => r.status === "fulfilled"));
    for (const result of results) {
      const row = (result as PromiseFulfilledResult<Record<string, unknown>[]>).value[0]!;
      assert.deepEqual([row.status, row.escalated_by], ["escalated", "deadline"]);
    }
    assert.equal(
      (await caseEvents(deal.id)).filter((e) => e.cause === "case_escalated").length,
      1,
    );
    assert.deepEqual(
      await notices(caseId, "deal_case_escalated"),
      told("deal_case_escalated", deal.buyer.id, deal.seller.id, ...await admins()),
    );
  },
);

// -----------------------------------------------------------------------------
// RLS
// -----------------------------------------------------------------------------

sqlTest(
  "deal_cases: the buyer, the seller and admins read a deal's cases; strangers and anon do not; no client writes them",
  async () => {
    const deal = await newDeal("in_handover");
    const caseId = await openCase(deal.buyer, deal.id);
    const read = "select count(*)::int from public.deal_cases where id = $1";
    for (
      const [who, n] of [[deal.buyer, 1], [deal.seller, 1], [admin, 1], [stranger, 0]] as const
    ) {
      assert.equal(await callAs<number>(as(who), read, [caseId]), n, who.email);
    }
    await refused(ANON, "42501", undefined, read, [caseId]);

    const before = await caseOf(caseId);
    for (const user of [deal.buyer, deal.seller, admin]) {
      await refused(
        as(user),
        "42501",
        undefined,
        `insert into public.deal_cases (deal_id, opened_by_side, reason, details, negotiate_until)
         values ($1, 'buyer', 'other', 'x', now())`,
        [deal.id],
      );
      await refused(
        as(user),
        "42501",
        undefined,
        "update public.deal_cases set status = 'resolved', outcome = 'refund' where id = $1",
        [caseId],
      );
      await refused(as(user), "42501", undefined, "delete from public.deal_cases where id = $1", [
        caseId,
      ]);
    }
    assert.deepEqual(await caseOf(caseId), before);
    assert.equal(
      await count("select count(*) from public.deal_cases where deal_id = $1", [deal.id]),
      1,
    );
  },
);

sqlTest(
  "settle_deal_case(): the same proposal again answers the case unchanged and tells nobody twice",
  async () => {
    const deal = await newDeal("in_handover");
    const id = await openCase(deal.buyer, deal.id);
    await callAs(as(deal.buyer), SETTLE, [id, "partial_refund", "100.00"]);
    const before = await caseOf(id);
    await callAs(as(deal.buyer), SETTLE, [id, "partial_refund", "100"]);
    const after = await caseOf(id);
    assert.equal(after.updated_at.getTime(), before.updated_at.getTime());
    const proposed = (await caseEvents(deal.id)).filter((e) =>
      e.cause === "case_settlement_proposed"
    );
    assert.equal(proposed.length, 1);
    assert.deepEqual(
      await notices(id, "deal_case_settlement_proposed"),
      told("deal_case_settlement_proposed", deal.seller),
    );
    // A different proposal is news again.
    await callAs(as(deal.buyer), SETTLE, [id, "refund", null]);
    assert.equal(
      (await caseEvents(deal.id)).filter((e) => e.cause === "case_settlement_proposed").length,
      2,
    );
  },
);
