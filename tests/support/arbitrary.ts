/**
 * fast-check arbitraries for request bodies: values shaped by a function's
 * zod input (through `z.toJSONSchema`, turned into arbitraries by
 * {@linkcode arbitraryFromJsonSchema}), random mutations of them, and
 * malformed bodies (not JSON, not an object, huge, deeply nested, NUL and
 * lone surrogates, stray bytes). The fuzz test of every function
 * (`tests/functions/_fuzz/any_input.test.ts`) sends them.
 *
 * @module
 */
import fc from "fast-check";
import { z } from "zod";

/**
 * The part of JSON Schema that `z.toJSONSchema` writes for our input
 * schemas; keywords none of them has are not read (a value whose schema the
 * generator cannot read is drawn as any JSON, and a catalog schema drawn
 * that way too often fails `tests/support/arbitrary.test.ts`).
 */
interface JsonSchema {
  type?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: JsonSchema | boolean;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  enum?: unknown[];
  const?: unknown;
  format?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  anyOf?: JsonSchema[];
}

/** What the generator may draw on besides the schema. */
export interface ShapeOptions {
  /** Ids that exist in the test's world, mixed into every uuid field. */
  uuids?: readonly string[];
  /** Addresses mixed into every `uri` field (e.g. pages of the site's own origin). */
  urls?: readonly string[];
  /**
   * Every free-text string (no format but `uri`, no enum, no pattern) and
   * every free key gets a NUL or a lone surrogate at a random place: values
   * a schema accepts but PostgreSQL cannot store.
   */
  refused?: boolean;
}

/** The characters PostgreSQL cannot store: NUL, and lone high and low surrogates. */
export const REFUSED_CHARACTERS = ["\u0000", "\uD800", "\uDBFF", "\uDC00", "\uDFFF"] as const;

/**
 * `text` with `char` inserted at `at` (modulo its length + 1). Inserting a
 * lone surrogate into well-formed text always leaves one unpaired: a high
 * one before a pair's low half orphans the pair's high half, and a low one
 * after a pair's high half orphans the pair's low half.
 */
export function insertRefused(text: string, at: number, char: string): string {
  const index = at % (text.length + 1);
  return text.slice(0, index) + char + text.slice(index);
}

/** Free text up to `maxLength`; with `refused`, it carries a refused character somewhere. */
export function textArbitrary(
  constraints: { minLength?: number; maxLength?: number; refused?: boolean } = {},
): fc.Arbitrary<string> {
  const minLength = constraints.minLength ?? 0;
  const maxLength = Math.max(minLength, constraints.maxLength ?? 20);
  const text = fc.oneof(
    { weight: 4, arbitrary: fc.string({ minLength, maxLength, unit: "grapheme" }) },
    { weight: 1, arbitrary: fc.string({ minLength, maxLength, unit: "binary" }) },
  );
  if (!constraints.refused) return text;
  return fc.tuple(text, fc.nat(), fc.constantFrom(...REFUSED_CHARACTERS))
    .map(([base, at, char]) => insertRefused(base, at, char));
}

/** The JSON Schema of a zod input, as a client would send it (defaults optional). */
function jsonSchemaOf(schema: z.ZodType): JsonSchema {
  return z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as JsonSchema;
}

/** Longest string a schema-shaped value gets (a 500 000-character limit is not worth filling). */
const MAX_GENERATED_LENGTH = 80;

/** Values of the JSON Schema `schema`: mostly valid, never beyond what JSON can carry. */
function arbitraryFromJsonSchema(
  schema: JsonSchema,
  options: ShapeOptions = {},
): fc.Arbitrary<unknown> {
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  if (schema.anyOf) {
    return fc.oneof(...schema.anyOf.map((alt) => arbitraryFromJsonSchema(alt, options)));
  }
  switch (schema.type) {
    case "object":
      return objectArbitrary(schema, options);
    case "array":
      return fc.array(arbitraryFromJsonSchema(schema.items ?? {}, options), {
        minLength: schema.minItems ?? 0,
        maxLength: Math.max(schema.minItems ?? 0, Math.min(schema.maxItems ?? 4, 4)),
      });
    case "string":
      return stringArbitrary(schema, options);
    case "integer":
      return fc.integer({ min: schema.minimum ?? -1e9, max: schema.maximum ?? 1e9 });
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    default:
      // `{}`: anything JSON.
      return fc.jsonValue({ maxDepth: 2 });
  }
}

function objectArbitrary(schema: JsonSchema, options: ShapeOptions): fc.Arbitrary<unknown> {
  const properties = schema.properties ?? {};
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [key, property] of Object.entries(properties)) {
    model[key] = arbitraryFromJsonSchema(property, options);
  }
  const known = fc.record(model, { requiredKeys: schema.required ?? [] });
  const extra = schema.additionalProperties;
  if (Object.keys(properties).length > 0 || extra === undefined || extra === false) return known;
  // A record (`z.record(z.string(), …)`): free keys.
  const values = extra === true || Object.keys(extra).length === 0
    ? fc.jsonValue({ maxDepth: 2 })
    : arbitraryFromJsonSchema(extra, options);
  return fc.dictionary(textArbitrary({ maxLength: 12, refused: options.refused }), values, {
    minKeys: options.refused ? 1 : 0,
    maxKeys: 4,
  });
}

function stringArbitrary(schema: JsonSchema, options: ShapeOptions): fc.Arbitrary<string> {
  const min = schema.minLength ?? 0;
  const max = Math.max(
    min,
    Math.min(schema.maxLength ?? MAX_GENERATED_LENGTH, MAX_GENERATED_LENGTH),
  );
  switch (schema.format) {
    case "uuid":
      return options.uuids?.length
        ? fc.oneof(fc.constantFrom(...options.uuids), fc.uuid())
        : fc.uuid();
    case "email":
      return fc.oneof(
        { weight: 3, arbitrary: simpleAddress() },
        { weight: 1, arbitrary: fc.emailAddress() },
      );
    case "uri": {
      const urls = fc.oneof(
        { weight: 3, arbitrary: fc.webUrl({ validSchemes: ["https", "http"] }) },
        ...(options.urls?.length
          ? [{ weight: 2, arbitrary: fc.constantFrom(...options.urls) }]
          : []),
      );
      // A URL is text a handler may store (a redirect, a page address).
      if (!options.refused) return urls;
      return fc.tuple(urls, fc.nat(), fc.constantFrom(...REFUSED_CHARACTERS))
        .map(([url, at, char]) => insertRefused(url, at, char));
    }
    case "date-time":
      return fc.date({
        min: new Date("2000-01-01T00:00:00Z"),
        max: new Date("2100-01-01T00:00:00Z"),
        noInvalidDate: true,
      }).map((date) => date.toISOString());
  }
  if (schema.pattern) {
    const pattern = new RegExp(schema.pattern);
    return fc.stringMatching(pattern).filter((text) => text.length >= min && text.length <= max);
  }
  // One character short of the limit, so a refused one still fits.
  const room = options.refused ? Math.max(min, max - 1) : max;
  return textArbitrary({ minLength: min, maxLength: room, refused: options.refused });
}

function simpleAddress(): fc.Arbitrary<string> {
  return fc.tuple(
    fc.stringMatching(/^[a-z0-9]{1,12}$/),
    fc.constantFrom("example.test", "mail.example.com", "b.example.org"),
  ).map(([local, domain]) => `${local}@${domain}`);
}

/** Values that break a field: wrong types, edge numbers, refused and odd text. */
const NASTY_VALUES: readonly unknown[] = [
  null,
  0,
  -1,
  1.5,
  1e308,
  -1e308,
  Number.MAX_SAFE_INTEGER + 2,
  true,
  false,
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "\uD800",
  "x\uDFFF",
  "😀",
  "\u202e\u200b",
  "null",
  "0",
  "-1",
  "NaN",
  "1e999",
  "00000000-0000-0000-0000-000000000000",
  "ffffffff-ffff-ffff-ffff-ffffffffffff",
  "' or 1=1; --",
  "<script>alert(1)</script>",
  "../../etc/passwd",
  "%00",
  "\\u0000",
  "javascript:alert(1)",
  "http://127.0.0.1:9/",
  "x".repeat(10_000),
  [],
  [null],
  ["\u0000"],
  {},
  { nested: { deeper: "\uDC00" } },
  { ["key\u0000"]: 1 },
];

/** A placeholder a mutation puts where {@linkcode deepJson} text goes once the body is serialized. */
const DEEP_MARKER = "\u0001fuzz-deep\u0001";

/** `depth` nested arrays (or objects) as JSON text, without building the value. */
function deepJson(depth: number, kind: "array" | "object" = "array"): string {
  return kind === "array"
    ? "[".repeat(depth) + "]".repeat(depth)
    : '{"a":'.repeat(depth) + "1" + "}".repeat(depth);
}

/** A request body to send: its text (or bytes) and a short label for reports. */
export class FuzzBody {
  constructor(
    /** What kind of body this is (for reports). */
    readonly label: string,
    /** The exact body sent. */
    readonly content: string | Uint8Array<ArrayBuffer>,
    /**
     * False when the value it was made from missed its schema (a drawing the
     * generator could not shape): a property skips it with `fc.pre`, so a
     * schema the generator cannot satisfy fails as "too many skips" instead
     * of looping.
     */
    readonly usable = true,
  ) {}

  /** How fast-check prints it in a counterexample: the label and the first 300 characters. */
  [fc.toStringMethod](): string {
    const text = typeof this.content === "string"
      ? this.content
      : `<${this.content.length} bytes: ${[...this.content.slice(0, 16)].join(",")}>`;
    const shown = JSON.stringify(text.length > 300 ? `${text.slice(0, 300)}…` : text);
    return `${this.label}(${text.length} chars: ${shown})`;
  }
}

/** Serializes `value`, splicing {@linkcode deepJson} where a mutation asked for deep nesting. */
export function serialize(label: string, value: unknown, usable = true): FuzzBody {
  let text = JSON.stringify(value) ?? "null";
  const marker = JSON.stringify(DEEP_MARKER);
  if (text.includes(marker)) text = text.split(marker).join(deepJson(20_000));
  return new FuzzBody(label, text, usable);
}

/** One random change to a schema-shaped body. */
type Mutation =
  | { kind: "none" }
  | { kind: "drop"; at: number }
  | { kind: "replace"; at: number; value: unknown }
  | { kind: "add"; key: string; value: unknown }
  | { kind: "deep"; at: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 6, arbitrary: fc.constant({ kind: "none" as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("drop" as const), at: fc.nat() }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("replace" as const),
      at: fc.nat(),
      value: fc.oneof(fc.constantFrom(...NASTY_VALUES), fc.jsonValue({ maxDepth: 2 })),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("add" as const),
      key: fc.oneof(fc.string({ maxLength: 10 }), fc.constantFrom("__proto__", "constructor")),
      value: fc.constantFrom(...NASTY_VALUES),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("deep" as const), at: fc.nat() }) },
);

/** Applies `change` to a copy of `body` (a field picked by index among its keys). */
function mutate(body: unknown, change: Mutation): unknown {
  if (change.kind === "none" || typeof body !== "object" || body === null) return body;
  const copy = { ...(body as Record<string, unknown>) };
  const keys = Object.keys(copy);
  const key = (at: number) => keys[at % keys.length];
  switch (change.kind) {
    case "drop": {
      const victim = keys.length ? key(change.at) : undefined;
      if (victim !== undefined) delete copy[victim];
      return copy;
    }
    case "replace": {
      const victim = keys.length ? key(change.at) : "extra";
      copy[victim!] = change.value;
      return copy;
    }
    case "add":
      // A JSON `__proto__` key is an own property once parsed; defineProperty keeps it one here.
      Object.defineProperty(copy, change.key, {
        value: change.value,
        enumerable: true,
        writable: true,
        configurable: true,
      });
      return copy;
    case "deep": {
      const victim = keys.length ? key(change.at) : "extra";
      copy[victim!] = DEEP_MARKER;
      return copy;
    }
  }
}

/** A drawn value and whether its schema accepts it. */
interface Drawn {
  value: unknown;
  valid: boolean;
}

/**
 * Values shaped by `schema`'s JSON Schema (input side, with enums the
 * output side names: a `z.string().transform(…).pipe(z.enum(…))` is a plain
 * string on input), each marked with whether `schema` accepts it.
 */
function drawn(schema: z.ZodType, options: ShapeOptions): fc.Arbitrary<Drawn> {
  const shape = withOutputEnums(jsonSchemaOf(schema), outputSchemaOf(schema));
  return arbitraryFromJsonSchema(shape, options)
    .map((value) => ({ value, valid: schema.safeParse(value).success }));
}

/** Bodies `schema` accepts, sometimes mutated into ones it refuses. */
export function shapedBodies(
  schema: z.ZodType,
  options: ShapeOptions = {},
): fc.Arbitrary<FuzzBody> {
  return fc.tuple(drawn(schema, { ...options, refused: false }), mutation).map(
    ([{ value, valid }, change]) =>
      serialize(
        change.kind === "none" ? "shaped" : `shaped+${change.kind}`,
        mutate(value, change),
        valid,
      ),
  );
}

/**
 * Bodies `schema` accepts whose free text carries a NUL or a lone surrogate
 * (see {@linkcode ShapeOptions.refused}): what zod lets through to a handler.
 */
export function refusedTextBodies(
  schema: z.ZodType,
  options: ShapeOptions = {},
): fc.Arbitrary<FuzzBody> {
  return drawn(schema, { ...options, refused: true })
    .map(({ value, valid }) => serialize("refused-text", value, valid));
}

/** Bodies made from `values`, sometimes mutated. */
export function shapedFromArbitrary(values: fc.Arbitrary<unknown>): fc.Arbitrary<FuzzBody> {
  return fc.tuple(values, mutation).map(([value, change]) =>
    serialize(change.kind === "none" ? "shaped" : `shaped+${change.kind}`, mutate(value, change))
  );
}

/** The JSON Schema of what `schema` produces, or undefined when zod cannot write it. */
function outputSchemaOf(schema: z.ZodType): JsonSchema | undefined {
  try {
    return z.toJSONSchema(schema, { io: "output", unrepresentable: "any" }) as JsonSchema;
  } catch {
    return undefined;
  }
}

/** `input` with the `enum` of `output` wherever input takes any string and output an enum. */
function withOutputEnums(input: JsonSchema, output: JsonSchema | undefined): JsonSchema {
  if (!output) return input;
  if (input.type === "string" && !input.enum && !input.format && output.enum) {
    return { ...input, enum: output.enum };
  }
  const merged: JsonSchema = { ...input };
  if (input.properties && output.properties) {
    merged.properties = Object.fromEntries(
      Object.entries(input.properties).map((
        [key, property],
      ) => [key, withOutputEnums(property, output.properties?.[key])]),
    );
  }
  if (input.items && output.items) merged.items = withOutputEnums(input.items, output.items);
  return merged;
}

/** Raw bodies no function should accept: broken JSON, non-objects, huge, deep, refused text. */
export const malformedBodies: fc.Arbitrary<FuzzBody> = fc.oneof(
  fc.string({ maxLength: 40, unit: "binary" }).map((text) => new FuzzBody("random-text", text)),
  fc.constantFrom(
    "",
    " ",
    "{",
    "}",
    "[",
    "nope",
    "{'a':1}",
    '{"a":}',
    '{"a":1,}',
    '{"a":1}{"b":2}',
    "\uFEFF{}",
    "\u0000",
    '{"a":"\u0000"}',
    '{"a":"\\u0000"}',
    '{"\\u0000":1}',
    '{"a":"\\ud800"}',
    '{"a":"\\udfff x"}',
    '{"a":["\\ud83d"]}',
    '{"__proto__":{"admin":true}}',
    '{"constructor":{"prototype":{"polluted":1}}}',
    "1e999",
  ).map((text) => new FuzzBody("broken-json", text)),
  fc.jsonValue({ maxDepth: 2 })
    .filter((value) => typeof value !== "object" || value === null || Array.isArray(value))
    .map((value) => new FuzzBody("not-an-object", JSON.stringify(value))),
  fc.constantFrom(
    new FuzzBody("huge-string", `{"k":"${"x".repeat(900_000)}"}`),
    new FuzzBody("over-the-limit", `{"k":"${"y".repeat(1_100_000)}"}`),
    new FuzzBody(
      "many-keys",
      JSON.stringify(Object.fromEntries(
        Array.from({ length: 20_000 }, (_, i) => [`k${i}`, i]),
      )),
    ),
    new FuzzBody("deep-arrays", deepJson(200_000)),
    new FuzzBody("deep-objects", deepJson(100_000, "object")),
    new FuzzBody("deep-in-a-field", `{"data":${deepJson(50_000, "object")}}`),
    new FuzzBody(
      "invalid-utf8",
      new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
    ),
    new FuzzBody(
      "utf8-encoded-surrogate",
      new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d]),
    ),
    new FuzzBody("nul-bytes", new Uint8Array([0x7b, 0x7d, 0x00, 0x00])),
  ),
);
