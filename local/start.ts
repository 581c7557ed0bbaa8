/**
 * `deno task start`: the Docker-free local stack. Starts embedded PostgreSQL
 * on 127.0.0.1:54322 (data in `.local/db`) unless `SUPABASE_DB_URL` is set,
 * applies `local/db/platform.sql` and new migrations, seeds on first init, and
 * serves every function at `http://127.0.0.1:54321/functions/v1/<name>`
 * (`PORT` overrides) and the Storage API subset supabase-js uploads and
 * downloads use at `/storage/v1` (files in `.local/storage`). Ctrl-C or
 * SIGTERM stops everything.
 *
 * @module
 */
import { Runtime } from "../supabase/functions/_shared/platform/runtime.ts";
import { LOCAL_SCHEDULER_TOKEN } from "../supabase/functions/_shared/platform/env.ts";
import { consoleSink } from "../supabase/functions/_shared/platform/log.ts";
import { createConsole } from "./console/server.ts";
import { LogTap } from "./console/log_tap.ts";
import { readVerifyJwt } from "./config_toml.ts";
import { loadFunctions } from "./functions.ts";
import { createGateway } from "./gateway.ts";
import {
  jwksOf,
  loadOrCreateSigningKey,
  LOCAL_JWT_SECRET,
  LOCAL_PUBLISHABLE_KEY,
  LOCAL_SECRET_KEY,
  signProjectKey,
} from "./keys.ts";
import { userTokenMinter } from "./token.ts";
import { AppliedMigrationChangedError, migrate } from "./db/migrate.ts";
import { CONFIG_TOML_PATH, LOCAL_DB_PORT, LOCAL_STATE_DIR, SIGNING_KEY_PATH } from "./paths.ts";
import {
  assertPortFree,
  freePort,
  postgresRoleUrl,
  PostgresStartError,
  startPostgres,
} from "./db/postgres.ts";
import { startScheduler } from "./scheduler.ts";
import { hasMigrationsTable, seedDatabase } from "./db/seed.ts";
import { createStorageApi } from "./storage/api.ts";
import { readLocalSupabaseEnv } from "./supabase_env.ts";

/** One-line failures the stack reports without a stack trace. */
class StartError extends Error {}

async function main(): Promise<void> {
  const env = Deno.env.toObject();
  const requestedPort = Number(env.PORT ?? "54321");
  const port = requestedPort === 0 ? freePort() : requestedPort;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new StartError(`Cannot start: PORT "${env.PORT}" is not a port number`);
  }
  try {
    await assertPortFree(port);
  } catch {
    throw new StartError(`Cannot start: port ${port} on 127.0.0.1 is already in use (set PORT)`);
  }

  const database = env.SUPABASE_DB_URL ? undefined : await startPostgres({
    dataDir: `${LOCAL_STATE_DIR}/db`,
    port: LOCAL_DB_PORT,
    persistent: true,
  });
  if (database?.relocatedFrom) {
    console.log(
      `PostgreSQL data in ${database.dataDir}: as root it runs as the "postgres" user, ` +
        `which cannot reach ${database.relocatedFrom}`,
    );
  }
  // The local superuser's URL (or SUPABASE_DB_URL, which must name a superuser
  // too): it applies local/db/platform.sql. Migrations, the seed, the functions
  // and the scheduler log in as `postgres` on the same database, as on hosted
  // Supabase, where `postgres` is no superuser (see local/db/platform.sql).
  const dbUrl = env.SUPABASE_DB_URL ?? database!.url;
  const appDbUrl = postgresRoleUrl(dbUrl);
  const stops: Array<() => Promise<void> | void> = [];
  if (database) stops.push(() => database.stop());
  try {
    const firstInit = !(await hasMigrationsTable(dbUrl));
    const applied = await migrate(dbUrl, { includePlatform: true });
    if (firstInit || env.SEED === "true") await seedDatabase(appDbUrl);

    const secret = env.SUPABASE_JWT_SECRET ?? LOCAL_JWT_SECRET;
    const anonKey = await signProjectKey("anon", secret);
    const serviceKey = await signProjectKey("service_role", secret);
    const signingKey = await loadOrCreateSigningKey(SIGNING_KEY_PATH);
    const url = `http://127.0.0.1:${port}`;
    // The console's Requests page reads the log lines as they are written.
    const tap = new LogTap(consoleSink);
    const settings: Record<string, string | undefined> = {
      SUPABASE_URL: url,
      SUPABASE_JWT_SECRET: secret,
      SUPABASE_JWKS: JSON.stringify(jwksOf(signingKey)),
      SUPABASE_ANON_KEY: anonKey,
      SUPABASE_SERVICE_ROLE_KEY: serviceKey,
      SUPABASE_PUBLISHABLE_KEYS: JSON.stringify({ default: LOCAL_PUBLISHABLE_KEY }),
      SUPABASE_SECRET_KEYS: JSON.stringify({ default: LOCAL_SECRET_KEY }),
      SCHEDULER_TOKEN: LOCAL_SCHEDULER_TOKEN,
      LOCAL_DEV: "true",
      SITE_URL: "http://localhost:5173",
      // The values the Supabase CLI reads for config.toml (the Send Email
      // Hook secret), so auth-email-webhook checks the one local secret.
      ...(await readLocalSupabaseEnv()),
      ...env,
      SUPABASE_DB_URL: appDbUrl,
    };
    // Every local credential is public, so only pages on this machine and
    // the site may call: a page open in the developer's browser elsewhere
    // cannot (ALLOWED_ORIGINS overrides; set it empty to allow every origin).
    settings.ALLOWED_ORIGINS ??= localOrigins(settings.SITE_URL).join(",");
    const runtime = new Runtime(settings, { logSink: tap.sink });
    stops.unshift(() => runtime.close());

    const functions = await loadFunctions();
    const verifyJwt = readVerifyJwt(await Deno.readTextFile(CONFIG_TOML_PATH));
    const localConsole = runtime.env.values.LOCAL_DEV
      ? createConsole({
        runtime,
        tap,
        functions,
        gateway: (req) => gateway(req),
        tokens: {
          anon: anonKey,
          service: serviceKey,
          scheduler: runtime.env.values.SCHEDULER_TOKEN ?? LOCAL_SCHEDULER_TOKEN,
          user: userTokenMinter({
            databaseUrl: appDbUrl,
            key: signingKey,
            issuer: `${url}/auth/v1`,
          }),
        },
      })
      : undefined;
    const gateway = createGateway({
      functions,
      runtime,
      verifyJwt,
      jwks: jwksOf(signingKey),
      mail: true,
      console: localConsole,
      storage: createStorageApi({
        database: runtime.database,
        tokens: runtime.tokens,
        jwtSecret: secret,
        root: `${LOCAL_STATE_DIR}/storage`,
        log: runtime.log,
      }),
    });
    const server = Deno.serve({ hostname: "127.0.0.1", port, onListen: () => {} }, gateway);
    stops.unshift(() => server.shutdown());
    const scheduler = await startScheduler({
      databaseUrl: appDbUrl,
      functionsUrl: `${url}/functions/v1`,
      token: runtime.env.values.SCHEDULER_TOKEN ?? LOCAL_SCHEDULER_TOKEN,
      log: runtime.log.with({ component: "scheduler" }),
    });
    stops.unshift(() => scheduler.stop());

    console.log(banner({
      url,
      anonKey,
      serviceKey,
      publishableKey: runtime.env.values.SUPABASE_PUBLISHABLE_KEYS?.default,
      secretKey: runtime.env.values.SUPABASE_SECRET_KEYS?.default,
      functions: functions.size,
      applied,
      dbUrl: appDbUrl,
      mail: runtime.env.values.LOCAL_DEV,
    }));
  } catch (error) {
    for (const stop of stops) await stop();
    throw error;
  }

  let stopping = false;
  const shutdown = async () => {
    if (stopping) return;
    stopping = true;
    console.log("Stopping…");
    for (const stop of stops) {
      try {
        await stop();
      } catch (error) {
        console.error(`While stopping: ${error instanceof Error ? error.message : error}`);
      }
    }
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGINT", shutdown);
  Deno.addSignalListener("SIGTERM", shutdown);
}

/** The local stack's default `ALLOWED_ORIGINS`: loopback pages on any port, and the site. */
export function localOrigins(siteUrl: string | undefined): string[] {
  const loopback = ["localhost", "127.0.0.1", "[::1]"].flatMap((host) => [
    `http://${host}:*`,
    `https://${host}:*`,
  ]);
  return siteUrl && URL.canParse(siteUrl) ? [...loopback, new URL(siteUrl).origin] : loopback;
}

function banner(info: {
  url: string;
  anonKey: string;
  serviceKey: string;
  /** The `default` publishable and secret keys, when there are. */
  publishableKey?: string;
  secretKey?: string;
  functions: number;
  applied: string[];
  dbUrl: string;
  /** Whether the mail viewer is served (`LOCAL_DEV`). */
  mail: boolean;
}): string {
  return [
    "",
    `Local stack ready: ${info.functions} functions, ${info.applied.length} new migration(s) applied`,
    `  Functions        ${info.url}/functions/v1/<name>`,
    `  JWKS             ${info.url}/auth/v1/.well-known/jwks.json`,
    `  Storage          ${info.url}/storage/v1`,
    ...(info.mail
      ? [`  Console          ${info.url}/_local/`, `  Mail             ${info.url}/_local/mail`]
      : []),
    `  Database         ${info.dbUrl.replace(/:[^:@/]+@/, ":****@")}`,
    `  anon key         ${info.anonKey}`,
    `  service_role key ${info.serviceKey}`,
    ...(info.publishableKey ? [`  publishable key  ${info.publishableKey}`] : []),
    ...(info.secretKey ? [`  secret key       ${info.secretKey}`] : []),
    `  scheduler token  ${LOCAL_SCHEDULER_TOKEN}`,
    `  User token       deno task token --email you@example.com [--admin]`,
    "Press Ctrl-C to stop.",
  ].join("\n");
}

if (import.meta.main) {
  try {
    await main();
  } catch (error) {
    if (
      error instanceof StartError || error instanceof PostgresStartError ||
      error instanceof AppliedMigrationChangedError
    ) {
      console.error(error.message);
    } else {
      console.error(
        `Cannot start the local stack: ${error instanceof Error ? error.message : error}`,
      );
    }
    Deno.exit(1);
  }
}
