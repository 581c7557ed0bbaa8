/**
 * The one conversion of processor amounts (integer minor units) into our
 * money columns (`numeric(12,2)` in major units of an upper-case currency).
 *
 * @module
 */

/** Currencies whose minor unit is the major unit (the processor's zero-decimal list). */
const ZERO_DECIMAL = new Set([
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

/** `1999, "usd"` → `"19.99"`; `500, "jpy"` → `"500.00"`. Exact (string arithmetic), for numeric columns. */
export function fromMinorUnits(amount: number, currency: string): string {
  if (!Number.isSafeInteger(amount)) {
    throw new RangeError(`Cannot convert amount ${amount}: it is not an integer of minor units`);
  }
  if (ZERO_DECIMAL.has(currency.toUpperCase())) return `${amount}.00`;
  const sign = amount < 0 ? "-" : "";
  const digits = String(Math.abs(amount)).padStart(3, "0");
  return `${sign}${digits.slice(0, -2)}.${digits.slice(-2)}`;
}

/** The processor's lower-case currency as our ISO 4217 upper-case code. */
export function currencyCode(currency: string): string {
  return currency.toUpperCase();
}
