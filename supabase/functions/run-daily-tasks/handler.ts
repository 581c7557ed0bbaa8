/**
 * `run-daily-tasks` (scheduled daily at 00:05 UTC, or an admin) `{ force?,
 * slot? }`: the daily sub-jobs in order — sponsored activations, sponsored
 * notices, view counts, the e-mail retry, offer expiry — once per slot and
 * UTC day. Answers `{ slot, day, runId, forced, skipped, results }`: 200
 * when nothing failed (a slot that already ran answers `skipped: true`),
 * 500 with the same body and an `error` when a sub-job failed (the others
 * still ran).
 *
 * @module
 */
import { runDailyTasks } from "../_shared/daily/daily_tasks.ts";
import { defineFunction } from "../_shared/platform/function.ts";

export default defineFunction({
  name: "run-daily-tasks",
  access: "scheduled",
  group: "schedulers",
  summary: "Runs the daily sub-jobs",
  input: () =>
    import("../../../shared/scheduled_schemas.ts").then((schemas) => schemas.RunDailyTasksInput),
  output: "RunDailyTasksOutput",
  async handle({ input, ctx }) {
    const answer = await runDailyTasks(ctx, { slot: input.slot, force: input.force });
    const failed = answer.results.filter((result) => result.status === "failed");
    if (answer.skipped || failed.length === 0) return answer;
    const body = {
      ...answer,
      error: {
        code: "partial_failure",
        message: `Daily tasks finished with ${failed.length} failed sub-job(s): ${
          failed.map((result) => result.job).join(", ")
        }; see results`,
      },
    };
    return new Response(JSON.stringify(body), {
      status: 500,
      headers: { "content-type": "application/json" },
    });
  },
});
