/**
 * zod schemas of the deal functions (`docs/deals.md`):
 * the deal's states, and the requests and answers of payment, payout and
 * refund. Amounts are decimal strings in major units of `currency`
 * (`"1250.00"` USD, `"5000.00"` JPY), as stored.
 *
 * @module
 */
import { z } from "zod";
import { DealId } from "./schemas.ts";

/**
 * A deal's state (the state table is in docs/deals.md and the deal_states
 * and letters of intent migrations). `in_diligence`: an accepted letter of
 * intent's exclusivity window, before payment.
 */
export const DealStatus = z.enum([
  "in_diligence",
  "pending_payment",
  "funded",
  "in_handover",
  "completed",
  "cancelled",
  "refunded",
  "disputed",
]);
/** A deal's state. */
export type DealStatus = z.infer<typeof DealStatus>;

/** An amount in major units, as a decimal string. */
const Money = z.string().regex(/^-?\d+\.\d{2}$/);

/** `create-deal-checkout` request: the deal and optional redirects (allow-listed origins). */
export const CreateDealCheckoutInput = z.object({
  dealId: DealId,
  successUrl: z.url().optional(),
  cancelUrl: z.url().optional(),
});
/** `create-deal-checkout` response: the hosted checkout to open. */
export const CreateDealCheckoutOutput = z.object({ url: z.url() });

/** `cancel-deal` request: the deal, and why (kept on the deal's audit). */
export const CancelDealInput = z.object({
  dealId: DealId,
  reason: z.string().trim().min(1).max(500).optional(),
});
/**
 * `cancel-deal` response: the deal, now cancelled; `payment` says what was
 * stopped at the processor first (the payment intent cancelled, the hosted
 * checkout expired), `alreadyCancelled` that an earlier call did it.
 */
export const CancelDealOutput = z.object({
  dealId: DealId,
  status: z.literal("cancelled"),
  alreadyCancelled: z.boolean(),
  payment: z.object({
    paymentIntent: z.enum(["cancelled", "none"]),
    checkoutSession: z.enum(["expired", "none"]),
  }),
});

/** `release-deal-payout` request; `force` releases before the handover is complete. */
export const ReleaseDealPayoutInput = z.object({
  dealId: DealId,
  force: z.boolean().default(false),
});

/** `refund-deal-payment` request; `reverseTransfer` takes a released payout back first. */
export const RefundDealPaymentInput = z.object({
  dealId: DealId,
  reason: z.string().trim().min(1).max(500).optional(),
  reverseTransfer: z.boolean().default(false),
});

/** A transfer to the seller, or a refund to the buyer, as the deal functions report it. */
export const Settlement = z.object({
  status: z.enum(["pending", "succeeded", "failed", "reversed"]),
  amount: Money,
  /** The processor's transfer (payout) or refund id, once made. */
  payprocId: z.string().nullable(),
  /** The transfer reversal (payout taken back for a refund). */
  reversalId: z.string().nullable(),
  /** Why the last attempt failed, when it did. */
  error: z.string().nullable(),
  updatedAt: z.string(),
});

/** `payment-status` response: the deal's money, reconciled with the processor. */
export const PaymentStatusOutput = z.object({
  dealId: DealId,
  status: DealStatus,
  amount: Money,
  currency: z.string().length(3),
  /** Our commission: frozen when the deal was funded, else what it would be now. */
  commission: Money,
  commissionFrozen: z.boolean(),
  /** amount − commission. */
  sellerPayout: Money,
  payment: z.object({
    /** The processor's payment intent status (`requires_payment_method`, `succeeded`, …), null before any payment. */
    status: z.string().nullable(),
    paymentIntentId: z.string().nullable(),
    checkoutSessionId: z.string().nullable(),
    fundedAt: z.string().nullable(),
  }),
  payout: Settlement.nullable(),
  refund: Settlement.nullable(),
});

/**
 * `release-deal-payout`, `refund-deal-payment` and `resolve-deal-case`
 * response: the deal's new state and its settlements with the processor ids
 * — the payout at release, the refund of the whole charge, the holdback
 * paid later, a dispute case's partial refund, and a payout paid again
 * after a chargeback the platform won.
 */
export const DealSettlementOutput = z.object({
  dealId: DealId,
  status: DealStatus,
  payout: Settlement.nullable(),
  refund: Settlement.nullable(),
  holdback: Settlement.nullable(),
  partialRefund: Settlement.nullable(),
  repayout: Settlement.nullable(),
});

/** How a dispute case ends: the money goes on to the seller, back to the buyer, or split. */
export const DealCaseOutcome = z.enum(["release", "refund", "partial_refund"]);
/** A dispute case's outcome. */
export type DealCaseOutcome = z.infer<typeof DealCaseOutcome>;

/**
 * `resolve-deal-case` request (admin): the outcome of an open or escalated
 * case, with `refundAmount` (a decimal string in major units, like every
 * amount of the API) exactly when it is `partial_refund`.
 */
export const ResolveDealCaseInput = z.object({
  caseId: z.uuid(),
  outcome: DealCaseOutcome,
  refundAmount: z.string().regex(/^\d{1,10}(\.\d{1,2})?$/, 'a decimal string like "250.00"')
    .optional(),
}).refine((input) => (input.outcome === "partial_refund") === (input.refundAmount !== undefined), {
  message: "refundAmount is given with outcome partial_refund, and only with it",
  path: ["refundAmount"],
});

/** A dispute case (`public.deal_cases`) as `resolve-deal-case` reports it. */
export const DealCase = z.object({
  id: z.uuid(),
  dealId: DealId,
  status: z.enum(["open", "escalated", "resolved"]),
  reason: z.string(),
  openedBySide: z.enum(["buyer", "seller"]),
  negotiateUntil: z.string(),
  escalatedAt: z.string().nullable(),
  outcome: DealCaseOutcome.nullable(),
  refundAmount: Money.nullable(),
  /** escrow: nothing was paid out when it was resolved; holdback: the payout was. */
  phase: z.enum(["escrow", "holdback"]).nullable(),
  resolution: z.enum(["settled", "admin", "deal_refunded", "deal_completed"]).nullable(),
  resolvedAt: z.string().nullable(),
  /** When the outcome's money finished moving; null while some still has to. */
  moneyMovedAt: z.string().nullable(),
});

/** `resolve-deal-case` response: the case, and the deal's state and settlements after its money moved. */
export const ResolveDealCaseOutput = DealSettlementOutput.extend({ case: DealCase });
