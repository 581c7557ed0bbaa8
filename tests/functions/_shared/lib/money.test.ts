import assert from "node:assert/strict";
import {
  currencyCode,
  fromMinorUnits,
  processorCurrency,
  toMinorUnits,
} from "../../../../supabase/functions/_shared/lib/money.ts";

Deno.test("fromMinorUnits() converts minor units exactly, zero-decimal currencies as they are", () => {
  assert.equal(fromMinorUnits(1999, "usd"), "19.99");
  assert.equal(fromMinorUnits(5, "eur"), "0.05");
  assert.equal(fromMinorUnits(0, "usd"), "0.00");
  assert.equal(fromMinorUnits(-250, "usd"), "-2.50");
  assert.equal(fromMinorUnits(123456789012, "usd"), "1234567890.12");
  assert.equal(fromMinorUnits(500, "jpy"), "500.00");
  assert.throws(() => fromMinorUnits(1.5, "usd"), RangeError);
  assert.equal(currencyCode("usd"), "USD");
});

Deno.test("toMinorUnits() converts major units exactly and refuses what cannot be charged", () => {
  assert.equal(toMinorUnits("19.99", "USD"), 1999);
  assert.equal(toMinorUnits("1250.00", "EUR"), 125000);
  assert.equal(toMinorUnits("0.1", "USD"), 10);
  assert.equal(toMinorUnits("7", "USD"), 700);
  assert.equal(toMinorUnits("5000.00", "JPY"), 5000);
  assert.equal(toMinorUnits("-3.05", "usd"), -305);
  assert.throws(() => toMinorUnits("5000.50", "JPY"), RangeError);
  assert.throws(() => toMinorUnits("1.999", "USD"), RangeError);
  assert.throws(() => toMinorUnits("abc", "USD"), RangeError);
  for (const minor of [1, 99, 100, 123456789]) {
    assert.equal(toMinorUnits(fromMinorUnits(minor, "usd"), "USD"), minor);
  }
  assert.equal(processorCurrency("USD"), "usd");
});
