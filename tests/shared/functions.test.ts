import assert from "node:assert/strict";
import type { Access } from "../../shared/access.ts";
import { FUNCTION_NAMES, type FunctionName, FUNCTIONS } from "../../shared/functions.ts";
import { parsePlanIntervalKey, PLAN_INTERVAL_KEYS, PLANS } from "../../shared/plans.ts";

/**
 * The interface's role rules, as the interface writes them: the "Who may
 * call" column of its table of documented payloads, and its role table.
 * `connect-*` and `send-admin-*` stand for every catalog function they match.
 */
const INTERFACE_WHO_MAY_CALL: Record<string, string> = {
  "send-email": "System-controlled use",
  "get-price-id": "Public/user",
  "create-checkout": "Authenticated user",
  "customer-portal": "Authenticated user",
  "create-deal-payment": "Deal participant",
  "release-deal-payout": "Admin",
  "refund-deal-payment": "Admin",
  "connect-onboarding-link": "Seller",
  "connect-dashboard-link": "Seller",
  "refresh-kyc-status": "Seller",
  "check-subscription": "Authenticated user",
  "analyze-project": "Authenticated user",
  "run-daily-tasks": "Scheduled or admin",
};
const INTERFACE_ROLE_TABLE: Record<string, string[]> = {
  "Public or user": [
    "get-price-id",
    "create-checkout (authenticated)",
    "customer-portal (authenticated)",
    "create-deal-payment (deal participant)",
    "send-email (system-controlled use)",
    "refresh-kyc-status (seller)",
    "connect-* (seller)",
    "analyze-project (authenticated)",
  ],
  "Admin": [
    "release-deal-payout",
    "refund-deal-payment",
    "send-admin-* functions",
    "cleanup-duplicates",
    "process-sponsored-activations",
  ],
  "Scheduled": [
    "run-daily-tasks",
    "run-price-alerts",
    "daily-subscription-sync",
    "payproc-sync",
    "sync-invoices",
    "update-views-count",
  ],
};

/** The catalog's access rule for each of the interface's phrases (lower case). */
const RULE_OF_PHRASE: Record<string, Access> = {
  "public/user": "public",
  "public or user": "public",
  "authenticated user": "user",
  "authenticated": "user",
  "deal participant": "deal-participant",
  "seller": "seller",
  "admin": "admin",
  "scheduled": "scheduled",
  // The scheduled rule admits admins too (shared/access.ts).
  "scheduled or admin": "scheduled",
  "system-controlled use": "system",
};

/**
 * Where the catalog departs from the interface's rule on purpose, with why.
 * Each is stated apart so that it is a decision, not a drift.
 */
const EXCEPTIONS: Record<string, { access: Access; why: string }> = {
  "connect-onboarding-link": {
    access: "user",
    why:
      "a seller is a user with a listing or a payout account (public.is_seller); starting payout onboarding is how a user becomes one, so every signed-in user may",
  },
};

/**
 * Admin functions the schedule starts too (catalog `scheduler: true`): the
 * service-role key and SCHEDULER_TOKEN are accepted besides an admin, the
 * anon key never (not even with LOCAL_DEV=true).
 */
const STARTED_BY_SCHEDULER: Record<string, string> = {
  "send-admin-listing-notification":
    "the review digest goes out on admin_notification_types.cron_schedule",
  "send-admin-contact-notification":
    "the contact digest goes out on admin_notification_types.cron_schedule",
  "process-sponsored-activations": "placements start on the hour they were booked for",
};

/** Who may call the functions the interface gives no rule, as the team decided. */
const TEAM_DECIDED: Record<Access, string[]> = {
  public: ["security-headers"],
  user: [],
  seller: [],
  "deal-participant": ["create-deal-checkout", "deal-create-upload-url", "generate-apa-pdf"],
  // Reading a deal's payment is read-only; admins look into any deal.
  "deal-participant-or-admin": ["payment-status"],
  admin: [
    "fix-subscription-dates",
    "fix-user-subscription",
    "set-starter-subscriptions",
    "send-listing-approval-notification",
    "send-resubmission-notification",
    "test-env",
    "test-sponsored-activation",
    "test-payproc",
  ],
  scheduled: [
    "auto-fix-subscription-dates",
    "send-listing-notifications",
    "send-sponsored-notifications",
    "apa-auto-handover",
    // The schedule drains the new-user welcome queue every minute (no body);
    // a call naming a user stays the service role's and admins' (handler).
    "send-new-user-notification",
  ],
  system: [
    "send-notification",
    "send-payment-email",
    "send-auth-email",
  ],
  webhook: ["payproc-webhook", "auth-email-webhook"],
};

/** The catalog functions a name of the interface stands for (`connect-*`, `send-admin-* functions`). */
function expand(written: string): string[] {
  const name = written.replace(/ \(.*\)$/, "").replace(/ functions$/, "");
  if (!name.endsWith("*")) return [name];
  const matched = FUNCTION_NAMES.filter((n) => n.startsWith(name.slice(0, -1)));
  assert.ok(matched.length > 0, `${written} matches no function`);
  return matched;
}

/** The interface's rule for every function it gives one, from both of its tables. */
function interfaceRules(): Map<string, Access> {
  const rules = new Map<string, Access>();
  const set = (name: string, phrase: string, where: string) => {
    const rule = RULE_OF_PHRASE[phrase.toLowerCase()];
    assert.ok(rule, `no access rule for the phrase "${phrase}"`);
    const before = rules.get(name);
    assert.ok(
      before === undefined || before === rule,
      `${name}: the interface's tables disagree (${before} vs ${rule}, ${where})`,
    );
    rules.set(name, rule);
  };
  for (const [name, phrase] of Object.entries(INTERFACE_WHO_MAY_CALL)) {
    set(name, phrase, "payload table");
  }
  for (const [role, written] of Object.entries(INTERFACE_ROLE_TABLE)) {
    for (const entry of written) {
      // "create-checkout (authenticated)": the parenthesis narrows the row's role.
      const narrowed = /\(([^)]+)\)$/.exec(entry)?.[1];
      for (const name of expand(entry)) set(name, narrowed ?? role, "role table");
    }
  }
  return rules;
}

Deno.test("the catalog follows the interface's role tables, except where the team says why", () => {
  const rules = interfaceRules();
  for (const [name, rule] of rules) {
    assert.ok(name in FUNCTIONS, `${name} is not in the catalog`);
    const access = FUNCTIONS[name as FunctionName].access;
    const exception = EXCEPTIONS[name];
    if (exception) {
      assert.notEqual(exception.access, rule, `${name}: the exception is the interface's rule`);
      assert.equal(access, exception.access, `${name}: ${exception.why}`);
    } else {
      assert.equal(access, rule, `${name}: the interface says ${rule}`);
    }
  }
  for (const name of Object.keys(EXCEPTIONS)) assert.ok(rules.has(name), name);
  // The interface's admin functions include all three send-admin-* ones.
  assert.deepEqual(
    [...rules].filter(([name]) => name.startsWith("send-admin-")).map(([n, r]) => [n, r]).sort(),
    [
      ["send-admin-contact-notification", "admin"],
      ["send-admin-listing-notification", "admin"],
      ["send-admin-message", "admin"],
    ],
  );
});

Deno.test("only the admin functions the schedule starts take the scheduler's credentials", () => {
  const started = FUNCTION_NAMES.filter((name) =>
    (FUNCTIONS[name] as { scheduler?: true }).scheduler === true
  ).sort();
  assert.deepEqual(started, Object.keys(STARTED_BY_SCHEDULER).sort());
  for (const name of started) assert.equal(FUNCTIONS[name].access, "admin", name);
});

Deno.test("FUNCTIONS lists the interface's 46 functions, and the team's additions say why", () => {
  const ruled = [...interfaceRules().keys()];
  const decided = Object.values(TEAM_DECIDED).flat();
  for (const name of decided) assert.ok(!ruled.includes(name), `${name}: the interface rules it`);
  const interfaceNames = [...ruled, ...decided].sort();
  assert.equal(new Set(interfaceNames).size, 46);
  // A function beyond the interface says why the team added it, in its own
  // declaration (`beyondInterface`): nothing else lists it.
  for (const name of FUNCTION_NAMES) {
    const why = (FUNCTIONS[name] as { beyondInterface?: string }).beyondInterface;
    if (interfaceNames.includes(name)) {
      assert.equal(why, undefined, `${name} is in the interface: it needs no beyondInterface`);
    } else {
      assert.ok(
        why,
        `${name} is not in the interface: declare beyondInterface (why the team added it)`,
      );
    }
  }
  for (const name of interfaceNames) assert.ok(name in FUNCTIONS, `${name} is not in the catalog`);
  for (const [access, names] of Object.entries(TEAM_DECIDED)) {
    for (const name of names) {
      assert.equal(FUNCTIONS[name as FunctionName].access, access, name);
    }
  }
});

Deno.test("the catalog carries the documented payloads and accepts their examples", () => {
  // The interface's table of documented payloads: these take a body, those
  // whose request is "none" take none (the others are the team's to shape).
  const withBody = [
    "send-email",
    "get-price-id",
    "create-checkout",
    "create-deal-payment",
    "release-deal-payout",
    "refund-deal-payment",
    "analyze-project",
    "run-daily-tasks",
  ] as const;
  const withoutBody = [
    "customer-portal",
    "connect-onboarding-link",
    "connect-dashboard-link",
    "refresh-kyc-status",
    "check-subscription",
  ] as const;
  for (const name of withBody) assert.ok("input" in FUNCTIONS[name], `${name} takes a body`);
  for (const name of withoutBody) assert.ok(!("input" in FUNCTIONS[name]), `${name} takes none`);
  const dealId = crypto.randomUUID();
  assert.ok(FUNCTIONS["get-price-id"].input.safeParse({ plan: "starter_monthly" }).success);
  assert.ok(FUNCTIONS["create-checkout"].input.safeParse({ priceId: "price_1" }).success);
  assert.ok(FUNCTIONS["create-deal-payment"].input.safeParse({ dealId }).success);
  assert.ok(!FUNCTIONS["create-deal-payment"].input.safeParse({ dealId: "42" }).success);
  assert.ok(FUNCTIONS["run-daily-tasks"].input.safeParse({}).success);
  assert.ok(FUNCTIONS["run-daily-tasks"].input.safeParse({ force: true, slot: "manual" }).success);
  assert.ok(!FUNCTIONS["run-daily-tasks"].input.safeParse({ slot: "two words" }).success);
  assert.ok(FUNCTIONS["cleanup-duplicates"].input.parse({}).dryRun, "a dry run by default");
  assert.ok(
    FUNCTIONS["refresh-kyc-status"].output.safeParse({
      summary: {
        currently_due_count: 2,
        past_due_count: 0,
        disabled_reason: "",
        payouts_enabled: false,
      },
    }).success,
  );
  assert.ok(
    FUNCTIONS["payproc-sync"].output.safeParse({
      job: "payproc-sync",
      skipped: true,
      reason: "already_running",
      runId: crypto.randomUUID(),
      startedAt: new Date().toISOString(),
    }).success,
  );
});

Deno.test("plans: four viewer plans and the payment processor's plan-interval keys", () => {
  assert.deepEqual([...PLANS], ["unauth", "free", "starter", "pro"]);
  assert.deepEqual([...PLAN_INTERVAL_KEYS], [
    "starter_monthly",
    "starter_yearly",
    "pro_monthly",
    "pro_yearly",
  ]);
  assert.deepEqual(parsePlanIntervalKey("pro_yearly"), { plan: "pro", interval: "yearly" });
  assert.equal(parsePlanIntervalKey("free_monthly"), null);
});
