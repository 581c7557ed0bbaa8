/**
 * `deno task token --email you@example.com [--admin] [--hours N]`: creates the
 * user in `auth.users` (its profile follows by trigger) if needed, grants
 * admin through `user_roles` when asked, and prints an ES256 bearer token the
 * local server accepts. Uses `SUPABASE_DB_URL`, else the local database.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { loadOrCreateSigningKey, type SigningKey, signUserToken } from "./keys.ts";
import { DEFAULT_DB_URL, SIGNING_KEY_PATH } from "./paths.ts";
import { withClient } from "./db/pg_client.ts";

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

/**
 * Tokens as `deno task token` mints them, for a long-running process (the
 * local console's call-it form): each user's token is reused until
 * `renewBeforeSeconds` before it expires, then minted again, so a stack left
 * running for days never offers an expired one. A failed mint is forgotten.
 */
export function userTokenMinter(options: {
  databaseUrl: string;
  key: SigningKey;
  issuer: string;
  lifetimeSeconds?: number;
  renewBeforeSeconds?: number;
}): (email: string, admin: boolean) => Promise<string> {
  const lifetime = options.lifetimeSeconds ?? 24 * 3600;
  const renewBefore = options.renewBeforeSeconds ?? 3600;
  const minted = new Map<string, { token: Promise<string>; renewAt: number }>();
  return (email, admin) => {
    const cacheKey = `${email} ${admin}`;
    const cached = minted.get(cacheKey);
    if (cached && Date.now() < cached.renewAt) return cached.token;
    const token = ensureUser(options.databaseUrl, email, admin).then((sub) =>
      signUserToken(options.key, {
        sub,
        email,
        issuer: options.issuer,
        expiresIn: lifetime,
      })
    );
    const entry = { token, renewAt: Date.now() + (lifetime - renewBefore) * 1000 };
    minted.set(cacheKey, entry);
    token.catch(() => {
      if (minted.get(cacheKey) === entry) minted.delete(cacheKey);
    });
    return token;
  };
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
