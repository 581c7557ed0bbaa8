/**
 * `create-checkout` (signed-in user, at most 10 calls a minute): a
 * subscription-mode checkout session for one of our plans' prices, for the
 * user's one processor customer (created once, idempotently, and stored),
 * with `client_reference_id` = the user's id. Redirects go only to
 * `SITE_URL`'s origin or `ALLOWED_REDIRECT_ORIGINS`. A user who already pays
 * gets 409 pointing to the customer portal. Answers `{ url }`.
 *
 * A user has at most one open subscription checkout (two could both be
 * paid): a call for the same price while the stored session is open and has
 * more than 10 minutes left answers that session's url — its redirects are
 * the first call's, whatever this call asked for, for the session's
 * lifetime. Otherwise the stored session, if still open, is expired before a
 * new one is made (see `_shared/billing/subscription_checkouts.ts`); 409
 * `conflict` with `details.reason = "changed_meanwhile"` when a concurrent
 * call stored another session first.
 *
 * @module
 */
import type { FunctionInput } from "../../../shared/functions.ts";
import { ensureCustomer } from "../_shared/billing/customers.ts";
import { allowedRedirectOrigins, checkRedirect, siteUrl } from "../_shared/billing/redirects.ts";
import {
  type CheckoutRedirects,
  checkStoredSession,
  closeSession,
  createSession,
  storeCheckout,
  storedCheckout,
} from "../_shared/billing/subscription_checkouts.ts";
import { type SubscriptionRow, subscriptionRow } from "../_shared/billing/subscription_rows.ts";
import { LIVE_STATUSES } from "../_shared/billing/subscription_state.ts";
import { syncSubscription } from "../_shared/billing/subscription_sync.ts";
import { findUser } from "../_shared/billing/users.ts";
import type { Context } from "../_shared/platform/context.ts";
import { conflict, type HttpError, invalidInput } from "../_shared/platform/errors.ts";
import { defineFunction } from "../_shared/platform/function.ts";
import { ourPlans } from "../_shared/billing/plan_prices.ts";
import { payprocFor } from "../_shared/platform/payproc.ts";

/** Statuses of a paid subscription a new checkout would duplicate (incomplete may retry). */
const PAYING = LIVE_STATUSES.filter((status) => status !== "incomplete");

export default defineFunction({
  name: "create-checkout",
  access: "user",
  group: "checkout",
  summary: "Creates a subscription checkout",
  input: () => import("../../../shared/schemas.ts").then((schemas) => schemas.CreateCheckoutInput),
  output: "CreateCheckoutOutput",
  // Each call may read, expire and create sessions (and a customer) at the processor.
  rateLimit: { limit: 10, windowSeconds: 60 },
  async handle({ input, caller, ctx }) {
    await requireOurPrice(ctx, input.priceId);
    const redirects = checkoutRedirects(ctx, input);
    refuseIfPaying(await subscriptionRow(ctx.db, caller.id));

    const stored = await storedCheckout(ctx.db, caller.id);
    const current = await checkStoredSession(ctx, stored, input.priceId);
    if (current.url) return { url: current.url };

    const user = await findUser(ctx.db, { userId: caller.id }) ??
      { id: caller.id, email: caller.email, email_confirmed: false };
    const { customer } = await ensureCustomer(ctx, user);
    await refuseIfPayingAtProcessor(ctx, caller.id, customer.id);

    const replaces = stored?.sessionId ?? null;
    if (replaces && await closeSession(ctx, replaces, current.read) === "completed") {
      throw alreadySubscribed();
    }
    const session = await createSession(ctx, {
      userId: caller.id,
      customerId: customer.id,
      priceId: input.priceId,
      redirects,
      replaces,
    });
    if (!(await storeCheckout(ctx.db, caller.id, session, replaces))) {
      // Ours lost: it must not stay payable beside the stored one.
      if (await closeSession(ctx, session.sessionId) === "completed") throw alreadySubscribed();
      throw changedMeanwhile();
    }
    return { url: session.url };
  },
});

async function requireOurPrice(ctx: Context, priceId: string): Promise<void> {
  const { priceIdByKey } = await ourPlans(ctx);
  if (![...priceIdByKey.values()].includes(priceId)) {
    throw invalidInput(`Cannot create a checkout: price "${priceId}" is not one of our plans`);
  }
}

/** The redirects asked for, or our defaults; 400 for one outside the allowed origins. */
function checkoutRedirects(
  ctx: Context,
  input: FunctionInput<"create-checkout">,
): CheckoutRedirects {
  const allowed = allowedRedirectOrigins(ctx.env);
  const action = "create a checkout";
  return {
    successUrl: checkRedirect(
      input.successUrl ??
        siteUrl(ctx.env, "/subscription/success?session_id={CHECKOUT_SESSION_ID}"),
      "successUrl",
      allowed,
      action,
    ),
    cancelUrl: checkRedirect(
      input.cancelUrl ?? siteUrl(ctx.env, "/pricing"),
      "cancelUrl",
      allowed,
      action,
    ),
  };
}

function alreadySubscribed(): HttpError {
  return conflict(
    "Cannot create a checkout: you already have a paid subscription; manage it in the customer portal",
    { portal: "customer-portal" },
  );
}

function changedMeanwhile(): HttpError {
  return conflict("Cannot create the checkout: your checkout changed meanwhile; try again", {
    reason: "changed_meanwhile",
  });
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
  const payproc = await payprocFor(ctx);
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
