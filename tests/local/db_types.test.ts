/**
 * `deno task types` (local/generators/db_types.ts): the committed
 * `shared/database.types.ts` is what the migrations give, so CI fails when
 * a migration changed the database and the file was not regenerated; and
 * `Insert`/`Update` follow the `authenticated` role's column privileges.
 */
import assert from "node:assert/strict";
import {
  DATABASE_TYPES_PATH,
  generateDatabaseTypes,
  joinGenerations,
} from "../../local/generators/db_types.ts";
import { REPO_ROOT } from "../../local/paths.ts";
import { createTestDatabase, sqlTest } from "../support/db.ts";

/** The lines of `text` from the one starting with `start` to the next `Relationships`, exclusive. */
function tableBlock(text: string, table: string): string {
  const start = text.indexOf(`\n      ${table}: {\n`);
  assert.ok(start >= 0, `the types have a block for ${table}`);
  const end = text.indexOf("        Relationships:", start);
  return text.slice(start + 1, end).trimEnd();
}

sqlTest(
  "shared/database.types.ts is what the migrations give (else: deno task types)",
  async () => {
    const db = await createTestDatabase();
    try {
      const generated = await generateDatabaseTypes(db.url);
      const committed = await Deno.readTextFile(`${REPO_ROOT}${DATABASE_TYPES_PATH}`);
      if (generated !== committed) {
        const a = committed.split("\n");
        const b = generated.split("\n");
        let line = 0;
        while (line < Math.max(a.length, b.length) && a[line] === b[line]) line++;
        assert.fail(
          `${DATABASE_TYPES_PATH} is stale: run \`deno task types\` and commit the file ` +
            `(first difference at line ${line + 1}: committed ${
              JSON.stringify(a[line] ?? "<end>")
            }, migrations give ${JSON.stringify(b[line] ?? "<end>")})`,
        );
      }
    } finally {
      await db.close();
    }
  },
);

sqlTest(
  "Insert and Update name as writable only what authenticated may insert or update",
  async () => {
    const db = await createTestDatabase();
    try {
      await db.pool.query(`
      create table public.typegen_probe (
        id uuid primary key default gen_random_uuid(),
        owner_id uuid not null default gen_random_uuid(),
        title text not null,
        note text,
        title_length int generated always as (length(title)) stored
      );
      revoke all on table public.typegen_probe from anon, authenticated;
      grant select on table public.typegen_probe to authenticated;
      grant insert (title, note) on table public.typegen_probe to authenticated;
      grant update (note) on table public.typegen_probe to authenticated;

      create table public.typegen_sealed (id int primary key, body text);
      revoke all on table public.typegen_sealed from anon, authenticated;
      grant select on table public.typegen_sealed to authenticated;

      create table public.typegen_open (id int primary key, body text);
      grant select, insert, update on table public.typegen_open to authenticated;
    `);
      const text = await generateDatabaseTypes(db.url);

      // Granted columns keep the CLI's types; the rest, like the generated column, are never.
      assert.equal(
        tableBlock(text, "typegen_probe"),
        `      typegen_probe: {
        Row: {
          id: string;
          note: string | null;
          owner_id: string;
          title: string;
          title_length: number | null;
        };
        Insert: {
          id?: never;
          note?: string | null;
          owner_id?: never;
          title: string;
          title_length?: never;
        };
        Update: {
          id?: never;
          note?: string | null;
          owner_id?: never;
          title?: never;
          title_length?: never;
        };`,
      );
      // No insert or update grant at all: every column is never, the Row as the CLI has it.
      assert.equal(
        tableBlock(text, "typegen_sealed"),
        `      typegen_sealed: {
        Row: {
          body: string | null;
          id: number;
        };
        Insert: {
          body?: never;
          id?: never;
        };
        Update: {
          body?: never;
          id?: never;
        };`,
      );
      // Table-wide grants: exactly what `supabase gen types` writes.
      assert.equal(
        tableBlock(text, "typegen_open"),
        `      typegen_open: {
        Row: {
          body: string | null;
          id: number;
        };
        Insert: {
          body?: string | null;
          id: number;
        };
        Update: {
          body?: string | null;
          id?: number;
        };`,
      );
    } finally {
      await db.close();
    }
  },
);

Deno.test("joinGenerations() takes Insert lines from the first text and Update lines from the second", () => {
  const text = (insert: string, update: string, row = "a: string") =>
    `t: {\n  Row: {\n    ${row}\n  }\n  Insert: {\n    ${insert}\n  }\n  Update: {\n    ${update}\n  }\n}`;
  assert.equal(
    joinGenerations(text("a: string", "a?: never"), text("a?: never", "a?: string")),
    text("a: string", "a?: string"),
  );
  assert.throws(
    () => joinGenerations(text("a: string", "a?: string"), text("a: string", "a?: string", "b: 1")),
    /differ outside Insert and Update, at line 3/,
  );
  assert.throws(
    () => joinGenerations(text("a: string", "a?: string"), `${text("a", "a")}\n`),
    /differ in line count/,
  );
});
