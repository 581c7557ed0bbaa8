/**
 * The one conversion between processor amounts (integer minor units of a
 * lower-case currency) and our money columns (`numeric(12,2)` in major units
 * of an upper-case currency), both ways.
 *
 * @module
 */
import { ZERO_DECIMAL_CURRENCIES as ZERO_DECIMAL } from "../../../../shared/currencies.ts";

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

/**
 * `"19.99", "USD"` → `1999`; `"500.00", "JPY"` → `500`. Exact (string
 * arithmetic). Throws for a malformed amount and for a fraction of a
 * zero-decimal currency's unit, which the processor cannot charge.
 */
export function toMinorUnits(amount: string, currency: string): number {
  const match = /^(-?)(\d+)(?:\.(\d{1,2}))?$/.exec(amount.trim());
  if (!match) {
    throw new RangeError(`Cannot convert amount "${amount}": not a decimal of major units`);
  }
  const [, sign, whole, fraction = ""] = match;
  const cents = fraction.padEnd(2, "0");
  let minor: number;
  if (ZERO_DECIMAL.has(currency.toUpperCase())) {
    if (Number(cents) !== 0) {
      throw new RangeError(`Cannot convert amount "${amount}": ${currency} has no minor unit`);
    }
    minor = Number(whole);
  } else {
    minor = Number(whole) * 100 + Number(cents);
  }
  if (!Number.isSafeInteger(minor)) {
    throw new RangeError(`Cannot convert amount "${amount}": too large`);
  }
  return sign === "-" ? -minor : minor;
}

/** Our upper-case ISO 4217 code as the processor's lower-case currency. */
export function processorCurrency(currency: string): string {
  return currency.toLowerCase();
}

/** The processor's lower-case currency as our ISO 4217 upper-case code. */
export function currencyCode(currency: string): string {
  return currency.toUpperCase();
}
