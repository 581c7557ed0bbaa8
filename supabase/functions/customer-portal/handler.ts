/**
 * `customer-portal` (signed-in user, at most 10 calls a minute): a billing
 * portal session for the user's processor customer that returns to
 * `SITE_URL`. 404 while the user has no customer (no checkout yet). Answers
 * `{ url }`.
 *
 * @module
 */
import { storedCustomerId } from "../_shared/billing/customers.ts";
import { isMissing } from "../_shared/billing/processor.ts";
import { notFound } from "../_shared/errors.ts";
import { defineFunction } from "../_shared/function.ts";

/** How long a repeated request returns the same portal session. */
const SESSION_REUSE_MS = 60_000;

function noCustomer() {
  return notFound("Cannot open the billing portal: you have no billing account yet");
}

export default defineFunction("customer-portal", {
  // Each call creates a portal session at the processor.
  rateLimit: { limit: 10, windowSeconds: 60 },
  async handle({ caller, ctx }) {
    const customer = await storedCustomerId(ctx.db, caller.id);
    if (!customer) throw noCustomer();
    const returnUrl = ctx.env.require("SITE_URL");
    const bucket = Math.floor(Date.now() / SESSION_REUSE_MS);
    const payproc = await ctx.payproc();
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
