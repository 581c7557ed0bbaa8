/**
 * `create-checkout` (signed-in user): a subscription-mode checkout session
 * for one of our plans' prices, for the user's one processor customer
 * (created once, idempotently, and stored), with `client_reference_id` = the
 * user's id. Redirects go only to `SITE_URL`'s origin or
 * `ALLOWED_REDIRECT_ORIGINS`. A user who already pays gets 409 pointing to
 * the customer portal. Answers `{ url }`.
 *
 * @module
 */
import { ensureCustomer } from "../_shared/billing/customers.ts";
import { allowedRedirectOrigins, checkRedirect, siteUrl } from "../_shared/billing/redirects.ts";
import { type SubscriptionRow, subscriptionRow } from "../_shared/billing/subscription_rows.ts";
import { LIVE_STATUSES } from "../_shared/billing/subscription_state.ts";
import { syncSubscription } from "../_shared/billing/subscription_sync.ts";
import { findUser } from "../_shared/billing/users.ts";
import type { Context } from "../_shared/context.ts";
import { conflict, HttpError, invalidInput } from "../_shared/errors.ts";
import { defineFunction } from "../_shared/function.ts";
import { sha256Hex } from "../_shared/hex.ts";
import { ourPlans } from "../_shared/plan_prices.ts";

/** Statuses of a paid subscription a new checkout would duplicate (incomplete may retry). */
const PAYING = LIVE_STATUSES.filter((status) => status !== "incomplete");

/** How long a repeated identical request returns the same session (double clicks). */
const SESSION_REUSE_MS = 60_000;

export default defineFunction("create-checkout", {
  async handle({ input, caller, ctx }) {
    const { priceIdByKey } = await ourPlans(ctx);
    if (![...priceIdByKey.values()].includes(input.priceId)) {
      throw invalidInput(
        `Cannot create a checkout: price "${input.priceId}" is not one of our plans`,
      );
    }
    const allowed = allowedRedirectOrigins(ctx.env);
    const action = "create a checkout";
    const successUrl = checkRedirect(
      input.successUrl ??
        siteUrl(ctx.env, "/subscription/success?session_id={CHECKOUT_SESSION_ID}"),
      "successUrl",
      allowed,
      action,
    );
    const cancelUrl = checkRedirect(
      input.cancelUrl ?? siteUrl(ctx.env, "/pricing"),
      "cancelUrl",
      allowed,
      action,
    );
    refuseIfPaying(await subscriptionRow(ctx.db, caller.id));

    const user = await findUser(ctx.db, { userId: caller.id }) ??
      { id: caller.id, email: caller.email, email_confirmed: false };
    const { customer } = await ensureCustomer(ctx, user);
    await refuseIfPayingAtProcessor(ctx, caller.id, customer.id);

    const payproc = await ctx.payproc();
    const session = await payproc.checkout.sessions.create(
      {
        mode: "subscription",
        customer: customer.id,
        client_reference_id: caller.id,
        line_items: [{ price: input.priceId, quantity: 1 }],
        success_url: successUrl,
        cancel_url: cancelUrl,
        metadata: { user_id: caller.id },
        subscription_data: { metadata: { user_id: caller.id } },
      },
      { idempotencyKey: await checkoutKey(caller.id, input.priceId, successUrl, cancelUrl) },
    );
    if (!session.url) {
      throw new HttpError(
        502,
        "upstream_rejected",
        "The payment processor returned no checkout url",
      );
    }
    return { url: session.url };
  },
});

function alreadySubscribed(): HttpError {
  return conflict(
    "Cannot create a checkout: you already have a paid subscription; manage it in the customer portal",
    { portal: "customer-portal" },
  );
}

function refuseIfPaying(row: SubscriptionRow | null): void {
  if (
    row?.source === "payproc" && row.payproc_subscription_id !== null &&
    PAYING.includes(row.subscription_status)
  ) {
    throw alreadySubscribed();
  }
}

/** A subscription our webhook has not mirrored yet still counts (and is mirrored now). */
async function refuseIfPayingAtProcessor(ctx: Context, userId: string, customer: string) {
  const payproc = await ctx.payproc();
  const readAt = new Date();
  const listed = await payproc.subscriptions.list({
    customer,
    limit: 10,
    expand: ["data.customer"],
  });
  const paying = listed.data.find((s) => PAYING.includes(s.status));
  if (!paying) return;
  await syncSubscription(ctx, paying, { userId, readAt });
  throw alreadySubscribed();
}

/** Same user, price and redirects within a minute → the same session. */
async function checkoutKey(userId: string, priceId: string, success: string, cancel: string) {
  const bucket = Math.floor(Date.now() / SESSION_REUSE_MS);
  const hash = (await sha256Hex(`${priceId}\n${success}\n${cancel}`)).slice(0, 24);
  return `checkout:${userId}:${hash}:${bucket}`;
}
