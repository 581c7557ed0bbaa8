import assert from "node:assert/strict";
import { currencyCode, fromMinorUnits } from "../../../supabase/functions/_shared/money.ts";

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
