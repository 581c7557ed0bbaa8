import assert from "node:assert/strict";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import {
  ACCESS_MODES,
  BLUR_FIELDS,
  type BlurField,
  COMPLETELY_BLOCKED_FIELDS_IF_BLURRED,
  DEFAULT_CONFIDENTIAL_FIELDS,
  FIELD_TO_COLUMN_MAP,
  fieldPresentation,
  hiddenBecause,
  hiddenFieldsOf,
  isFieldHidden,
  VISUALLY_BLURRED_FIELDS_TO_FETCH,
} from "../../shared/blur.ts";

const db = await createTestDatabase();

interface BlurRow {
  field_key: string;
  column_name: string;
  when_hidden: "blur" | "omit";
}

const { rows } = await db.pool.query<BlurRow>(
  "select field_key, column_name, when_hidden from public.blurred_fields order by field_key",
);

sqlTest(
  "shared/blur.ts: FIELD_TO_COLUMN_MAP is listing_fields' field_key -> column_name, blurred_fields' included",
  async () => {
    const { rows: fields } = await db.pool.query<{ field_key: string; column_name: string }>(
      "select field_key, column_name from public.listing_fields",
    );
    const fromDb = Object.fromEntries(fields.map((r) => [r.field_key, r.column_name]));
    assert.deepEqual({ ...FIELD_TO_COLUMN_MAP }, fromDb);
    assert.deepEqual([...BLUR_FIELDS].sort(), rows.map((r) => r.field_key));
    for (const row of rows) {
      assert.equal(FIELD_TO_COLUMN_MAP[row.field_key as BlurField], row.column_name, row.field_key);
    }
  },
);

sqlTest("shared/blur.ts: the two presentation lists split the fields as when_hidden does", () => {
  const byMode = (mode: BlurRow["when_hidden"]) =>
    rows.filter((r) => r.when_hidden === mode).map((r) => r.field_key);
  assert.deepEqual([...VISUALLY_BLURRED_FIELDS_TO_FETCH].sort(), byMode("blur"));
  assert.deepEqual([...COMPLETELY_BLOCKED_FIELDS_IF_BLURRED].sort(), byMode("omit"));
  const overlap = VISUALLY_BLURRED_FIELDS_TO_FETCH.filter((f) =>
    (COMPLETELY_BLOCKED_FIELDS_IF_BLURRED as readonly string[]).includes(f)
  );
  assert.deepEqual(overlap, []);
  return Promise.resolve();
});

sqlTest("shared/blur.ts: every mapped column is a column of listing_view_secure", async () => {
  const { rows: columns } = await db.pool.query<{ column_name: string }>(
    `select column_name from information_schema.columns
     where table_schema = 'public' and table_name = 'listing_view_secure'`,
  );
  const names = new Set(columns.map((c) => c.column_name));
  for (const column of Object.values(FIELD_TO_COLUMN_MAP)) {
    assert.ok(names.has(column), column);
  }
  assert.ok(names.has("blurred_fields"));
});

sqlTest("shared/blur.ts: fieldPresentation() shows, blurs or omits", () => {
  assert.equal(fieldPresentation("url", []), "value");
  assert.equal(fieldPresentation("title", ["url", "seller"]), "value");
  assert.equal(fieldPresentation("monthly_profit", ["monthly_profit"]), "placeholder");
  assert.equal(fieldPresentation("url", ["url", "seller"]), "omit");
  return Promise.resolve();
});

sqlTest(
  "shared/blur.ts: hiddenFieldsOf, hiddenBecause and fieldPresentation name both layers of a row",
  () => {
    const row = {
      blurred_fields: ["monthly_profit", "url"] as BlurField[],
      confidential_fields_hidden: ["seller", "url"] as BlurField[],
    };
    assert.deepEqual(hiddenFieldsOf(row), ["monthly_profit", "seller", "url"]);
    assert.equal(hiddenBecause("monthly_profit", row), "plan");
    assert.equal(hiddenBecause("seller", row), "confidential");
    assert.equal(hiddenBecause("url", row), "plan_and_confidential");
    assert.equal(hiddenBecause("asking_price", row), null);
    assert.equal(hiddenBecause("title", row), null);
    const hidden = hiddenFieldsOf(row);
    assert.equal(fieldPresentation("seller", hidden), "omit");
    assert.equal(fieldPresentation("monthly_profit", hidden), "placeholder");
    assert.equal(fieldPresentation("asking_price", hidden), "value");
    // The rule itself: the seller and admins see everything; access lifts only confidentiality.
    const base = {
      planHidden: ["url"],
      accessMode: "nda" as const,
      confidentialFields: [...DEFAULT_CONFIDENTIAL_FIELDS],
      seesEverything: false,
      hasAccess: false,
    };
    assert.deepEqual(BLUR_FIELDS.filter((f) => isFieldHidden(f, base)).sort(), ["seller", "url"]);
    assert.deepEqual(BLUR_FIELDS.filter((f) => isFieldHidden(f, { ...base, hasAccess: true })), [
      "url",
    ]);
    assert.deepEqual(
      BLUR_FIELDS.filter((f) => isFieldHidden(f, { ...base, seesEverything: true })),
      [],
    );
    assert.deepEqual(
      BLUR_FIELDS.filter((f) => isFieldHidden(f, { ...base, accessMode: "open" })),
      ["url"],
    );
    assert.deepEqual(ACCESS_MODES, ["open", "nda"]);
    return Promise.resolve();
  },
);

sqlTest(
  "shared/blur.ts: DEFAULT_CONFIDENTIAL_FIELDS and ACCESS_MODES are the listings table's",
  async () => {
    const { rows: [defaults] } = await db.pool.query<{ fields: string; mode: string }>(
      `select pg_get_expr(f.adbin, f.adrelid) as fields, pg_get_expr(m.adbin, m.adrelid) as mode
     from pg_attrdef f, pg_attrdef m
     where f.adrelid = 'public.listings'::regclass and m.adrelid = f.adrelid
       and f.adnum = (select attnum from pg_attribute where attrelid = f.adrelid and attname = 'confidential_fields')
       and m.adnum = (select attnum from pg_attribute where attrelid = m.adrelid and attname = 'access_mode')`,
    );
    assert.equal(defaults!.fields, `'{${DEFAULT_CONFIDENTIAL_FIELDS.join(",")}}'::text[]`);
    assert.equal(defaults!.mode, "'open'::text");
    const { rows: [check] } = await db.pool.query<{ def: string }>(
      `select pg_get_constraintdef(oid) as def from pg_constraint
     where conrelid = 'public.listings'::regclass and conname = 'listings_access_mode_known'`,
    );
    assert.deepEqual([...check!.def.matchAll(/'([a-z]+)'/g)].map((m) => m[1]), [...ACCESS_MODES]);
  },
);
