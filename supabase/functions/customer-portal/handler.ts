/**
 * `customer-portal` (signed-in user, at most 10 calls a minute): a billing
 * portal session for the user's processor customer that returns to
 * `SITE_URL`. 404 while the user has no customer (no checkout yet). Answers
 * `{ url }`.
 *
 * @module
 */
import { storedCustomerId } from "../_shared/billing/customers.ts";
import { isMissing } from "../_shared/platform/payproc_calls.ts";
import { notFound } from "../_shared/platform/errors.ts";
import { defineFunction } from "../_shared/platform/function.ts";
import { payprocFor } from "../_shared/platform/payproc.ts";

/** How long a repeated request returns the same portal session. */
const SESSION_REUSE_MS = 60_000;

function noCustomer() {
  return notFound("Cannot open the billing portal: you have no billing account yet");
}

export default defineFunction({
  name: "customer-portal",
  access: "user",
  group: "checkout",
  summary: "Creates a billing portal session",
  output: "CustomerPortalOutput",
  // Each call creates a portal session at the processor.
  rateLimit: { limit: 10, windowSeconds: 60 },
  async handle({ caller, ctx }) {
    const customer = await storedCustomerId(ctx.db, caller.id);
    if (!customer) throw noCustomer();
    const returnUrl = ctx.env.require("SITE_URL");
    const bucket = Math.floor(Date.now() / SESSION_REUSE_MS);
    const payproc = await payprocFor(ctx);
    try {
      const session = await payproc.billingPortal.sessions.create(
        { customer, return_url: returnUrl },
        { idempotencyKey: `portal:${caller.id}:${customer}:${bucket}` },
      );
      return { url: session.url };
    } catch (error) {
      if (isMissing(error)) throw noCustomer();
      throw error;
    }
  },
});
