/**
 * Formatting shared by e-mails and documents: counted nouns, money in a currency,
 * times, and "A, B and 3 more" lists.
 *
 * @module
 */

/** How many names a list spells out before "and N more". */
const NAMES_SHOWN = 5;

/** `3, "listing"` → "3 listings"; `1, "message"` → "1 message". */
export function countOf(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

/**
 * `amount` in major units (as stored, e.g. "1500.00") formatted in
 * `currency`: "$1,500.00", "¥1,500"; "1500.00 XYZ" for a code the runtime
 * does not know.
 */
export function formatMoney(amount: string, currency: string): string {
  try {
    return new Intl.NumberFormat("en-US", { style: "currency", currency }).format(Number(amount));
  } catch {
    return `${amount} ${currency}`;
  }
}

/** A time as "2026-11-23 08:05 UTC". */
export function formatUtc(at: Date): string {
  return `${at.toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

/** `"A", "B" and 3 more`: the first few quoted names of `total`. */
export function namesOf(names: string[], total: number): string {
  const shown = names.slice(0, NAMES_SHOWN).map((name) => `"${name}"`);
  const rest = total - shown.length;
  if (rest <= 0) {
    return shown.length <= 1
      ? shown.join("")
      : `${shown.slice(0, -1).join(", ")} and ${shown.at(-1)}`;
  }
  return `${shown.join(", ")} and ${rest} more`;
}
