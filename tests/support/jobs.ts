/**
 * Assertions about scheduled jobs' answers.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { Invocation } from "./runtime.ts";

/** A job's answer as tests read it: a finished run, a skipped start, or an error. */
export interface JobAnswerBody {
  job?: string;
  runId?: string;
  skipped?: boolean;
  reason?: string;
  startedAt?: string;
  error?: { code: string };
}

/**
 * Two overlapping starts of one job: both answer 200 (an overlap is not a
 * failure), one ran and the other was skipped naming that run.
 */
export function assertOneRanOneSkipped(answers: Array<Invocation<JobAnswerBody>>): void {
  assert.deepEqual(answers.map((a) => a.status), [200, 200], JSON.stringify(answers));
  const skipped = answers.filter((a) => a.body.skipped === true);
  const ran = answers.filter((a) => a.body.skipped !== true);
  assert.equal(skipped.length, 1, JSON.stringify(answers.map((a) => a.body)));
  assert.equal(skipped[0]!.body.reason, "already_running");
  assert.equal(skipped[0]!.body.runId, ran[0]!.body.runId);
  assert.ok(!Number.isNaN(Date.parse(skipped[0]!.body.startedAt ?? "")));
}
