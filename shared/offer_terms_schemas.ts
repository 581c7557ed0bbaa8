/**
 * zod schemas of letters of intent (`docs/deals.md`, "Letters of intent"):
 * the terms as a form sends them and as stored, and each RPC's arguments.
 * The database is the authority (`public.offer_terms_checked()` in the
 * letters of intent migration refuses broken terms with SQLSTATE 23514);
 * {@linkcode offerTermsSchema} gives a form the same verdict and the same
 * stored form before the call (`tests/db/offer_terms.test.ts` holds the two
 * equal). The plain types, bounds and moves are in `offer_terms.ts`.
 *
 * @module
 */
import { z } from "zod";
import { currencyMinorDigits } from "./currencies.ts";
import {
  EXCLUSIVITY_MAX_DAYS,
  fromHundredths,
  hundredths,
  INSPECTION_AND_HOLDBACK_MAX_DAYS,
  OFFER_TERM_LIMITS,
  type OfferTerms,
  WITHDRAW_REASON_MAX,
} from "./offer_terms.ts";
import { UserText } from "./schemas.ts";

/** A decimal amount in major units as the terms take it: `"900"`, `"900.5"`, `"900.50"`. */
const DecimalAmount = z.string().regex(/^[0-9]{1,10}(\.[0-9]{1,2})?$/, {
  message: 'A decimal amount in major units, like "900.00"',
});

/** Whole days from `min` to `max`, or absent/null for the default. */
function days(min: number, max: number) {
  return z.number().int().min(min).max(max).nullable().optional();
}

/**
 * The terms as a form sends them: every key optional (null or absent takes
 * the default), no other key. {@linkcode offerTermsSchema} adds the rules
 * that depend on the offer's amount and currency.
 */
export const OfferTermsInput = z.strictObject({
  /** Paid to the seller when escrow releases; the rest of the amount is the holdback. Default: the amount. */
  cash_at_close: DecimalAmount.nullable().optional(),
  /** Days the holdback is kept after the release: 1–60 with a holdback, 0 without. */
  holdback_days: days(OFFER_TERM_LIMITS.holdbackDays.min, OFFER_TERM_LIMITS.holdbackDays.max),
  /** The buyer's inspection period after the handover, 1–30 days (default 7). */
  inspection_days: days(OFFER_TERM_LIMITS.inspectionDays.min, OFFER_TERM_LIMITS.inspectionDays.max),
  /** The buyer's exclusivity for due diligence, 0–45 days (default 14; 0: straight to payment). */
  exclusivity_days: days(
    OFFER_TERM_LIMITS.exclusivityDays.min,
    OFFER_TERM_LIMITS.exclusivityDays.max,
  ),
  /** The proposed closing date, `YYYY-MM-DD`, today (UTC) or later. */
  proposed_close_date: z.iso.date().nullable().optional(),
  /** Up to 10 conditions of 1–500 characters of plain text. */
  conditions: z.array(UserText(OFFER_TERM_LIMITS.conditions.maxLength, true))
    .max(OFFER_TERM_LIMITS.conditions.max)
    .nullable()
    .optional(),
});
/** Terms as a form sends them. */
export type OfferTermsInput = z.input<typeof OfferTermsInput>;

/** The terms as stored (`offers.terms`, `deals.terms`): every key present, defaults filled. */
export const StoredOfferTerms: z.ZodType<OfferTerms> = z.object({
  cash_at_close: z.string().regex(/^[0-9]+\.[0-9]{2}$/),
  holdback_days: z.number().int(),
  inspection_days: z.number().int(),
  exclusivity_days: z.number().int(),
  proposed_close_date: z.iso.date().nullable(),
  conditions: z.array(z.string()),
});
/** Today's date in UTC, `YYYY-MM-DD`. */
function todayUtc(): string {
  return new Date().toISOString().slice(0, 10);
}

/**
 * The terms of an offer of `amount` (a decimal string in major units)
 * `currency`, as the database checks them: parses what a form sends into
 * the stored {@linkcode OfferTerms}, or fails with an issue naming the term
 * — the same verdict as `offer_terms_checked()`. `today` (UTC,
 * `YYYY-MM-DD`) is for tests.
 */
export function offerTermsSchema(amount: string, currency: string, today: string = todayUtc()) {
  const total = hundredths(amount);
  const unit = currencyMinorDigits(currency) === 0 ? 100n : 1n;
  return OfferTermsInput.transform((terms, context): OfferTerms => {
    const problem = (path: string, message: string) => {
      context.addIssue({ code: "custom", path: [path], message });
      return z.NEVER;
    };
    const cash = terms.cash_at_close == null ? total : hundredths(terms.cash_at_close);
    if (cash <= 0n) return problem("cash_at_close", "cash_at_close must be more than 0");
    if (cash > total) {
      return problem("cash_at_close", `cash_at_close is more than the amount (${amount})`);
    }
    if (cash % unit !== 0n) {
      return problem("cash_at_close", `cash_at_close must be whole in ${currency}'s smallest unit`);
    }
    if (cash * 2n < total) {
      return problem("cash_at_close", "at most half the amount is held back");
    }
    const holdbackDays = terms.holdback_days ?? 0;
    if (cash < total && holdbackDays === 0) {
      return problem(
        "holdback_days",
        "holdback_days (1 to 60) is required when cash_at_close is below the amount",
      );
    }
    if (cash === total && holdbackDays > 0) {
      return problem("holdback_days", "holdback_days must be 0 without a holdback");
    }
    const inspectionDays = terms.inspection_days ?? OFFER_TERM_LIMITS.inspectionDays.default;
    if (inspectionDays + holdbackDays > INSPECTION_AND_HOLDBACK_MAX_DAYS) {
      return problem(
        "holdback_days",
        `inspection_days + holdback_days is at most ${INSPECTION_AND_HOLDBACK_MAX_DAYS} (the payment processor holds the money 90 days from payment)`,
      );
    }
    const close = terms.proposed_close_date ?? null;
    if (close !== null && close < today) {
      return problem("proposed_close_date", `proposed_close_date ${close} is in the past`);
    }
    return {
      cash_at_close: fromHundredths(cash),
      holdback_days: holdbackDays,
      inspection_days: inspectionDays,
      exclusivity_days: terms.exclusivity_days ?? OFFER_TERM_LIMITS.exclusivityDays.default,
      proposed_close_date: close,
      // UserText parses an empty text to undefined, which `required` refuses first.
      conditions: (terms.conditions ?? []).filter((text): text is string => text !== undefined),
    };
  });
}

/**
 * `rpc("counter_offer", args)`: the side that did not write `p_offer`
 * answers with a new version; answers its id. `p_terms` null makes it a
 * plain offer; check them with {@linkcode offerTermsSchema} first.
 */
export const CounterOfferArgs = z.object({
  p_offer: z.uuid(),
  p_amount: DecimalAmount,
  p_terms: OfferTermsInput.nullable(),
  p_message: UserText(2000, false).optional(),
});
/** The arguments of `counter_offer`. */
export type CounterOfferArgs = z.input<typeof CounterOfferArgs>;

/** `rpc("confirm_diligence", args)`: the buyer proceeds to payment. */
export const ConfirmDiligenceArgs = z.object({ p_deal: z.uuid() });
/** The arguments of `confirm_diligence`. */
export type ConfirmDiligenceArgs = z.input<typeof ConfirmDiligenceArgs>;

/** `rpc("withdraw_from_deal", args)`: either side walks away during due diligence, saying why. */
export const WithdrawFromDealArgs = z.object({
  p_deal: z.uuid(),
  p_reason: UserText(WITHDRAW_REASON_MAX, true),
});
/** The arguments of `withdraw_from_deal`. */
export type WithdrawFromDealArgs = z.input<typeof WithdrawFromDealArgs>;

/** `rpc("extend_exclusivity", args)`: the seller adds days (the window stays within 45 days of acceptance). */
export const ExtendExclusivityArgs = z.object({
  p_deal: z.uuid(),
  p_days: z.number().int().min(1).max(EXCLUSIVITY_MAX_DAYS),
});
/** The arguments of `extend_exclusivity`. */
export type ExtendExclusivityArgs = z.input<typeof ExtendExclusivityArgs>;
