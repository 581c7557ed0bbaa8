/**
 * `deno task test`: starts one embedded PostgreSQL for the run (or uses
 * `TEST_DATABASE_URL`; as root it runs as the "postgres" user, which works
 * from a private clone too), builds a migrated template database once, then runs
 * `deno test` with the arguments given (default: the whole `tests/` tree).
 * Each test file clones the template (see `tests/support/db.ts`).
 *
 * @module
 */
import { withClient } from "../local/db/pg_client.ts";
import { withDatabase } from "./support/db.ts";
import { freePort, PostgresStartError, startPostgres } from "../local/db/postgres.ts";
import { migrate } from "../local/db/migrate.ts";

const runId = crypto.randomUUID().slice(0, 8);
const template = `template_${runId}`;

const external = Deno.env.get("TEST_DATABASE_URL");
const server = external ? undefined : await startPostgres({
  dataDir: await Deno.makeTempDir({ prefix: "market-test-pg-" }),
  port: freePort(),
  persistent: false,
}).catch((error) => {
  if (!(error instanceof PostgresStartError)) throw error;
  console.error(error.message);
  Deno.exit(1);
});
const adminUrl = external ?? server!.url;

let code = 1;
try {
  await withClient(adminUrl, (c) => c.query(`create database "${template}"`));
  await migrate(withDatabase(adminUrl, template), { includePlatform: true });

  const args = Deno.args.length > 0 ? Deno.args : ["tests/"];
  const child = new Deno.Command(Deno.execPath(), {
    args: ["test", "-A", "--parallel", ...args],
    env: {
      TEST_DATABASE_URL: adminUrl,
      TEST_TEMPLATE_DATABASE: template,
      TEST_RUN_ID: runId,
    },
    stdin: "null",
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  const stop = () => child.kill("SIGTERM");
  Deno.addSignalListener("SIGINT", stop);
  code = (await child.status).code;
  Deno.removeSignalListener("SIGINT", stop);
} finally {
  if (external) {
    await withClient(adminUrl, async (c) => {
      const { rows } = await c.query<{ datname: string }>(
        "select datname from pg_database where datname like $1 or datname = $2",
        [`t\\_${runId}\\_%`, template],
      );
      for (const row of rows) {
        await c.query(`drop database if exists "${row.datname}" with (force)`);
      }
    });
  }
  await server?.stop();
}
Deno.exit(code);
