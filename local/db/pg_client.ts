/**
 * One short-lived `pg` client for the local tools (migrations, seed, token
 * minting, the test runner): connected, used, and always closed.
 *
 * @module
 */
import pg from "pg";

/** Connects to `url`, runs `fn` with the client, then closes it (also when `fn` throws). */
export async function withClient<T>(
  url: string,
  fn: (client: pg.Client) => Promise<T>,
): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
