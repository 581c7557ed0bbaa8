/**
 * Currencies as the processor counts them: which have no minor unit. The
 * database's `currency_minor_digits()` lists the same codes (a test keeps
 * them equal).
 *
 * @module
 */

/** Currencies whose minor unit is the major unit (the processor's zero-decimal list). */
export const ZERO_DECIMAL_CURRENCIES: ReadonlySet<string> = new Set([
  "BIF",
  "CLP",
  "DJF",
  "GNF",
  "JPY",
  "KMF",
  "KRW",
  "MGA",
  "PYG",
  "RWF",
  "UGX",
  "VND",
  "VUV",
  "XAF",
  "XOF",
  "XPF",
]);

/** Decimal places of `currency`'s smallest unit: 0 for zero-decimal currencies (JPY, KRW, ...), else 2. */
export function currencyMinorDigits(currency: string): 0 | 2 {
  return ZERO_DECIMAL_CURRENCIES.has(currency.toUpperCase()) ? 0 : 2;
}
