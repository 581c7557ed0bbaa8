/**
 * The local scheduler: runs `public.job_schedules` with croner, POSTing to
 * each function with the scheduler token, as pg_cron does on hosted Supabase.
 * The table is re-read every minute so edits take effect without a restart.
 *
 * @module
 */
import { Cron } from "croner";
import pg from "pg";
import type { Logger } from "../supabase/functions/_shared/platform/log.ts";

/** Options for {@linkcode startScheduler}. */
export interface SchedulerOptions {
  databaseUrl: string;
  /** `http://host:port/functions/v1` */
  functionsUrl: string;
  token: string;
  log: Logger;
}

/** A row of `public.job_schedules`. */
interface ScheduleRow {
  function_name: string;
  cron: string;
  body: unknown;
}

/** Starts the scheduler; `stop()` ends every job. */
export async function startScheduler(options: SchedulerOptions): Promise<{ stop(): void }> {
  const jobs = new Map<string, { signature: string; cron: Cron }>();

  const load = async () => {
    const client = new pg.Client({ connectionString: options.databaseUrl });
    await client.connect();
    let rows: ScheduleRow[];
    try {
      rows = (await client.query<ScheduleRow>(
        "select function_name, cron, body from public.job_schedules where enabled",
      )).rows;
    } finally {
      await client.end();
    }
    const wanted = new Set(rows.map((row) => row.function_name));
    for (const [name, job] of jobs) {
      if (!wanted.has(name)) {
        job.cron.stop();
        jobs.delete(name);
      }
    }
    for (const row of rows) {
      const signature = `${row.cron} ${JSON.stringify(row.body)}`;
      if (jobs.get(row.function_name)?.signature === signature) continue;
      jobs.get(row.function_name)?.cron.stop();
      try {
        const cron = new Cron(row.cron, { timezone: "UTC", protect: true }, () => run(row));
        jobs.set(row.function_name, { signature, cron });
      } catch (error) {
        options.log.error("bad schedule", {
          function: row.function_name,
          cron: row.cron,
          error: error instanceof Error ? error.message : String(error),
        });
      }
    }
  };

  const run = async (row: ScheduleRow) => {
    const started = performance.now();
    try {
      const res = await fetch(`${options.functionsUrl}/${row.function_name}`, {
        method: "POST",
        headers: { authorization: `Bearer ${options.token}`, "content-type": "application/json" },
        body: JSON.stringify(row.body ?? {}),
      });
      await res.body?.cancel();
      options.log.info("scheduled run", {
        function: row.function_name,
        status: res.status,
        duration_ms: Math.round(performance.now() - started),
      });
    } catch (error) {
      options.log.error("scheduled run failed", {
        function: row.function_name,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  };

  await load();
  const reload = new Cron(
    "* * * * *",
    { protect: true },
    () =>
      load().catch((error) =>
        options.log.warn("cannot reload schedules", {
          error: error instanceof Error ? error.message : String(error),
        })
      ),
  );
  return {
    stop() {
      reload.stop();
      for (const job of jobs.values()) job.cron.stop();
      jobs.clear();
    },
  };
}
