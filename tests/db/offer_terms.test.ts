/**
 * One rule for letter-of-intent terms: `offerTermsSchema` (shared/, what a
 * form checks) and `public.offer_terms_checked()` (what the database
 * enforces) give every case the same verdict and the same stored form; and
 * the zero-decimal currencies of shared/currencies.ts are the database's.
 */
import assert from "node:assert/strict";
import { ZERO_DECIMAL_CURRENCIES } from "../../shared/currencies.ts";
import { offerTermsSchema } from "../../shared/offer_terms_schemas.ts";
import { createTestDatabase, sqlTest } from "../support/db.ts";

const db = await createTestDatabase();

/** Today and tomorrow in UTC, as the database sees them. */
const { rows: [dates] } = await db.pool.query<
  { today: string; tomorrow: string; yesterday: string }
>(
  `select to_char((now() at time zone 'UTC')::date, 'YYYY-MM-DD') as today,
          to_char((now() at time zone 'UTC')::date + 1, 'YYYY-MM-DD') as tomorrow,
          to_char((now() at time zone 'UTC')::date - 1, 'YYYY-MM-DD') as yesterday`,
);

/** [amount, currency, terms] */
const CASES: Array<[string, string, unknown]> = [
  ["1000.00", "USD", {}],
  ["1000.00", "USD", { cash_at_close: "900.5", holdback_days: 30 }],
  ["1000.00", "USD", { cash_at_close: "0900", holdback_days: 1 }],
  ["1000.00", "USD", { cash_at_close: "1000", holdback_days: 0 }],
  ["1000.00", "USD", { cash_at_close: "1000.00", holdback_days: 1 }],
  ["1000.00", "USD", { cash_at_close: "1000.01" }],
  ["1000.00", "USD", { cash_at_close: "900.00" }],
  ["1000.00", "USD", { cash_at_close: "900.00", holdback_days: 60 }],
  ["1000.00", "USD", { cash_at_close: "900.00", holdback_days: 61 }],
  ["1000.00", "USD", { cash_at_close: "500.00", holdback_days: 10 }],
  ["1000.00", "USD", { cash_at_close: "499.99", holdback_days: 10 }],
  ["1000.00", "USD", { cash_at_close: "900.00", holdback_days: 50, inspection_days: 30 }],
  ["1000.00", "USD", { cash_at_close: "900.00", holdback_days: 51, inspection_days: 30 }],
  ["1000.00", "USD", { cash_at_close: "900.00", holdback_days: 60, inspection_days: 20 }],
  ["1000.00", "USD", { cash_at_close: "900.00", holdback_days: 60, inspection_days: 21 }],
  ["1000.00", "USD", { cash_at_close: "0.00" }],
  ["1000.00", "USD", { cash_at_close: "0.01", holdback_days: 3 }],
  ["1000.00", "USD", { cash_at_close: "9.999" }],
  ["1000.00", "USD", { cash_at_close: 900 }],
  ["1000.00", "USD", { cash_at_close: "-5" }],
  ["1000.00", "USD", { cash_at_close: null, holdback_days: null }],
  ["5000.00", "JPY", { cash_at_close: "4000.50", holdback_days: 5 }],
  ["5000.00", "JPY", { cash_at_close: "4000", holdback_days: 5 }],
  ["1000.00", "USD", { inspection_days: 1 }],
  ["1000.00", "USD", { inspection_days: 30 }],
  ["1000.00", "USD", { inspection_days: 0 }],
  ["1000.00", "USD", { inspection_days: 31 }],
  ["1000.00", "USD", { inspection_days: 2.5 }],
  ["1000.00", "USD", { inspection_days: "7" }],
  ["1000.00", "USD", { exclusivity_days: 0 }],
  ["1000.00", "USD", { exclusivity_days: 45 }],
  ["1000.00", "USD", { exclusivity_days: 46 }],
  ["1000.00", "USD", { exclusivity_days: -1 }],
  ["1000.00", "USD", { proposed_close_date: dates!.today }],
  ["1000.00", "USD", { proposed_close_date: dates!.tomorrow }],
  ["1000.00", "USD", { proposed_close_date: dates!.yesterday }],
  ["1000.00", "USD", { proposed_close_date: "2027-02-30" }],
  ["1000.00", "USD", { proposed_close_date: "2027-2-3" }],
  ["1000.00", "USD", { proposed_close_date: null }],
  ["1000.00", "USD", { conditions: [] }],
  ["1000.00", "USD", { conditions: ["  Keep the domain \r\n for a year  "] }],
  ["1000.00", "USD", { conditions: ["Line one\nLine two\twith a tab"] }],
  ["1000.00", "USD", { conditions: Array.from({ length: 10 }, (_, i) => `C${i}`) }],
  ["1000.00", "USD", { conditions: Array.from({ length: 11 }, (_, i) => `C${i}`) }],
  ["1000.00", "USD", { conditions: [" \n "] }],
  ["1000.00", "USD", { conditions: ["é".repeat(500)] }],
  ["1000.00", "USD", { conditions: ["é".repeat(501)] }],
  ["1000.00", "USD", { conditions: ["\u0007"] }],
  ["1000.00", "USD", { conditions: [7] }],
  ["1000.00", "USD", { conditions: "one" }],
  ["1000.00", "USD", { conditions: null }],
  ["1000.00", "USD", { extra: 1 }],
  ["1000.00", "USD", [1, 2]],
  ["1000.00", "USD", "terms"],
];

sqlTest("offer terms: the zod schema and offer_terms_checked() agree on every case", async () => {
  for (const [amount, currency, terms] of CASES) {
    const label = `${amount} ${currency} ${JSON.stringify(terms)}`;
    const zod = offerTermsSchema(amount, currency, dates!.today).safeParse(terms);
    const sql = await db.pool.query<{ terms: unknown }>(
      "select public.offer_terms_checked($1::jsonb, $2, $3) as terms",
      [JSON.stringify(terms), amount, currency],
    ).then(
      (r) => ({ ok: true as const, terms: r.rows[0]!.terms }),
      (e) => ({ ok: false as const, code: e.code }),
    );
    if (sql.ok) {
      assert.ok(zod.success, `${label}: the database takes it, zod refuses: ${zod.error?.message}`);
      assert.deepEqual(zod.data, sql.terms, label);
    } else {
      assert.equal(sql.code, "23514", label);
      assert.ok(!zod.success, `${label}: the database refuses it, zod takes it`);
    }
  }
});

sqlTest(
  "currencies: shared/currencies.ts lists the database's zero-decimal currencies",
  async () => {
    const codes = [...ZERO_DECIMAL_CURRENCIES, "USD", "EUR", "GBP", "jpy"];
    const { rows } = await db.pool.query<{ code: string; digits: number }>(
      "select code, public.currency_minor_digits(code) as digits from unnest($1::text[]) code",
      [codes],
    );
    for (const { code, digits } of rows) {
      assert.equal(digits, ZERO_DECIMAL_CURRENCIES.has(code.toUpperCase()) ? 0 : 2, code);
    }
    // And no zero-decimal code the database knows is missing here: every ISO code it treats as 0.
    const { rows: [zero] } = await db.pool.query<{ n: number }>(
      `select count(*)::int as n from (
       select chr(a) || chr(b) || chr(c) as code
       from generate_series(65, 90) a, generate_series(65, 90) b, generate_series(65, 90) c
     ) x where public.currency_minor_digits(code) = 0`,
    );
    assert.equal(zero!.n, ZERO_DECIMAL_CURRENCIES.size);
  },
);
