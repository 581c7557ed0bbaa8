import assert from "node:assert/strict";
import type Stripe from "stripe";
import {
  kycStatus,
  kycSummary,
} from "../../../../supabase/functions/_shared/connect/connect_accounts.ts";
import { PayprocDouble } from "../../../support/payproc_double.ts";

Deno.test("kycSummary() and kycStatus() follow onboarding from pending to verified, and rejection to disabled", async () => {
  await using double = new PayprocDouble();
  const id = double.addAccount().id;
  const read = () => double.get("account", id) as unknown as Stripe.Account;
  assert.deepEqual(kycSummary(read()), {
    currently_due_count: 4,
    past_due_count: 4,
    disabled_reason: "requirements.past_due",
    payouts_enabled: false,
  });
  assert.equal(kycStatus(read()), "pending");
  double.setAccount(id, {
    details_submitted: true,
    requirements: { currently_due: ["external_account"], past_due: [], disabled_reason: null },
  });
  assert.equal(kycStatus(read()), "restricted");
  double.completeOnboarding(id);
  assert.deepEqual(kycSummary(read()), {
    currently_due_count: 0,
    past_due_count: 0,
    disabled_reason: "",
    payouts_enabled: true,
  });
  assert.equal(kycStatus(read()), "verified");
  double.setAccount(id, {
    payouts_enabled: false,
    requirements: { disabled_reason: "rejected.fraud" },
  });
  assert.equal(kycStatus(read()), "disabled");
});
