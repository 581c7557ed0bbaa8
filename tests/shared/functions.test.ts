import assert from "node:assert/strict";
import type { Access } from "../../shared/access.ts";
import { FUNCTION_NAMES, FUNCTIONS } from "../../shared/functions.ts";
import { parsePlanIntervalKey, PLAN_INTERVAL_KEYS, PLANS } from "../../shared/plans.ts";

/** Who may call what, as the team decided it for the interface's 46 functions. */
const EXPECTED: Record<Access, string[]> = {
  public: ["get-price-id", "security-headers"],
  user: [
    "create-checkout",
    "customer-portal",
    "check-subscription",
    "analyze-project",
    // A seller is a user with a listing or a payout account (public.is_seller);
    // starting onboarding is how a user becomes one, so any user may.
    "connect-onboarding-link",
  ],
  seller: ["connect-dashboard-link", "refresh-kyc-status"],
  "deal-participant": [
    "create-deal-payment",
    "create-deal-checkout",
    "payment-status",
    "deal-create-upload-url",
    "generate-apa-pdf",
  ],
  admin: [
    "release-deal-payout",
    "refund-deal-payment",
    "send-admin-message",
    "cleanup-duplicates",
    "process-sponsored-activations",
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
    "run-daily-tasks",
    "run-price-alerts",
    "daily-subscription-sync",
    "payproc-sync",
    "sync-invoices",
    "update-views-count",
    "auto-fix-subscription-dates",
    "send-listing-notifications",
    "send-sponsored-notifications",
    "apa-auto-handover",
    // Admin digests: admins call them, and so does the scheduler while
    // admin_notification_types.cron_schedule is set (checked by the handler).
    "send-admin-listing-notification",
    "send-admin-contact-notification",
  ],
  system: [
    "send-email",
    "send-notification",
    "send-payment-email",
    "send-new-user-notification",
    "send-auth-email",
  ],
  webhook: ["payproc-webhook", "auth-email-webhook"],
};

/**
 * Functions the team added beyond the interface's 46, each with its access
 * rule and why it exists.
 */
const ADDED: Record<string, { access: Access; why: string }> = {
  // Cancelling a deal whose payment was started must stop the payment at the
  // processor first, which SQL (the cancel_deal RPC) cannot do. The buyer,
  // the seller and admins may; the function checks which deal is theirs.
  "cancel-deal": { access: "user", why: "a cancel must not race the buyer's payment" },
};

Deno.test("FUNCTIONS lists the interface's 46 functions with their access rules, and the team's additions", () => {
  const interfaceNames = Object.values(EXPECTED).flat().sort();
  assert.equal(new Set(interfaceNames).size, 46);
  assert.deepEqual(
    [...FUNCTION_NAMES].sort(),
    [...interfaceNames, ...Object.keys(ADDED)].sort(),
  );
  for (const [access, names] of Object.entries(EXPECTED)) {
    for (const name of names) {
      assert.equal(FUNCTIONS[name as keyof typeof FUNCTIONS].access, access, name);
    }
  }
  for (const [name, added] of Object.entries(ADDED)) {
    assert.ok(!interfaceNames.includes(name), `${name} is in the interface already`);
    assert.equal(FUNCTIONS[name as keyof typeof FUNCTIONS].access, added.access, name);
  }
});

Deno.test("the catalog carries the documented payloads and accepts their examples", () => {
  const documented = FUNCTION_NAMES.filter((name) => "input" in FUNCTIONS[name]).sort();
  assert.deepEqual(documented, [
    "analyze-project",
    "auto-fix-subscription-dates",
    "cancel-deal",
    "cleanup-duplicates",
    "create-checkout",
    "create-deal-checkout",
    "create-deal-payment",
    "deal-create-upload-url",
    "fix-subscription-dates",
    "fix-user-subscription",
    "generate-apa-pdf",
    "get-price-id",
    "payment-status",
    "refund-deal-payment",
    "release-deal-payout",
    "run-daily-tasks",
    "send-admin-message",
    "send-auth-email",
    "send-email",
    "send-listing-approval-notification",
    "send-new-user-notification",
    "send-notification",
    "send-payment-email",
    "send-resubmission-notification",
    "set-starter-subscriptions",
    "test-sponsored-activation",
  ]);
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
