/**
 * `deno task token --email you@example.com [--admin] [--hours N]`: creates the
 * user in `auth.users` (its profile follows by trigger) if needed, grants
 * admin through `user_roles` when asked, and prints an ES256 bearer token the
 * local server accepts. Uses `SUPABASE_DB_URL`, else the local database.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { loadOrCreateSigningKey, signUserToken } from "./keys.ts";
import { DEFAULT_DB_URL, SIGNING_KEY_PATH } from "./paths.ts";
import { withClient } from "./pg_client.ts";

/** Creates or finds the user by e-mail and returns its id; grants admin when asked. */
export async function ensureUser(
  databaseUrl: string,
  email: string,
  admin: boolean,
): Promise<string> {
  // A failure closes the client before commit, which rolls the transaction back.
  return await withClient(databaseUrl, async (client) => {
    await client.query("begin");
    const { rows } = await client.query<{ id: string }>(
      `insert into auth.users (email, email_confirmed_at) values ($1, now())
       on conflict (email) do update set updated_at = now() returning id`,
      [email],
    );
    const id = rows[0]!.id;
    if (admin) {
      await client.query(
        "insert into public.user_roles (user_id, role) values ($1, 'admin') on conflict do nothing",
        [id],
      );
    }
    await client.query("commit");
    return id;
  });
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      email: { type: "string" },
      admin: { type: "boolean", default: false },
      hours: { type: "string", default: "24" },
    },
  });
  const email = values.email?.trim().toLowerCase();
  if (!email || !/^[^@\s]+@[^@\s]+$/.test(email)) {
    console.error("Usage: deno task token --email you@example.com [--admin] [--hours N]");
    Deno.exit(2);
  }
  const databaseUrl = Deno.env.get("SUPABASE_DB_URL") ?? DEFAULT_DB_URL;
  let id: string;
  try {
    id = await ensureUser(databaseUrl, email, values.admin);
  } catch (error) {
    console.error(
      `Cannot create the user: ${error instanceof Error ? error.message : error}` +
        " (is `deno task start` running?)",
    );
    Deno.exit(1);
  }
  const port = Deno.env.get("PORT") ?? "54321";
  const key = await loadOrCreateSigningKey(SIGNING_KEY_PATH);
  const token = await signUserToken(key, {
    sub: id,
    email,
    issuer: `http://127.0.0.1:${port}/auth/v1`,
    expiresIn: Number(values.hours) * 3600,
  });
  console.log(token);
}
