/**
 * Assertions about scheduled jobs' answers.
 *
 * @module
 */
import assert from "node:assert/strict";
import type pg from "pg";
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

/**
 * Two starts of one job while `table` is locked by another transaction: the
 * run that starts first waits on the lock, so the second finds it running
 * and answers first (asserted: skipped); then the lock is released and both
 * answers are returned once the run has finished.
 */
export async function twoStartsWhileLocked<T extends JobAnswerBody>(
  pool: pg.Pool,
  table: string,
  start: () => Promise<Invocation<T>>,
): Promise<Array<Invocation<T>>> {
  const holder = await pool.connect();
  try {
    await holder.query("begin");
    await holder.query(`lock table ${table} in exclusive mode`);
    const starts = [start(), start()];
    const first = await Promise.race(starts);
    assert.equal(first.body.skipped, true, JSON.stringify(first.body));
    await holder.query("commit");
    return await Promise.all(starts);
  } finally {
    holder.release();
  }
}
