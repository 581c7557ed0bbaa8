/**
 * Payment-processor (Stripe API) test double; see `payproc_double/double.ts`.
 *
 * ```ts
 * await using double = new PayprocDouble();
 * const price = double.addPrice({ lookupKey: "pro_monthly", unitAmount: 1500, interval: "month" });
 * const stripe = payprocClient(double);
 * ```
 *
 * @module
 */
export * from "./payproc_double/mod.ts";
