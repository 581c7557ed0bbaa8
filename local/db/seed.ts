/**
 * The local database's demo data (`supabase/seed.sql`) and the test for a
 * database that was never migrated.
 *
 * @module
 */
import { SEED_PATH } from "../paths.ts";
import { withClient } from "./pg_client.ts";

/** Applies `supabase/seed.sql` (it is safe to re-run). */
export async function seedDatabase(url: string): Promise<void> {
  await withClient(url, async (client) => {
    await client.query(await Deno.readTextFile(SEED_PATH));
  });
}

/** Whether the database has the migrations table, i.e. was migrated before. */
export function hasMigrationsTable(url: string): Promise<boolean> {
  return withClient(url, async (client) => {
    const { rows } = await client.query<{ present: boolean }>(
      "select to_regclass('supabase_migrations.schema_migrations') is not null as present",
    );
    return rows[0]?.present === true;
  });
}
