/**
 * Targets of benchmarks. A benchmark's absolute figures move with the
 * machine and its load (the same webhook code measured 1,415 and 629
 * events/s on two 2-core machines), so each benchmark measures a baseline in
 * the same run — the same work done the bare way — and states its targets as
 * ratios to it; the absolute figures are printed as information. A bound
 * that is no ratio (a process's peak memory, milliseconds per MiB) is stated
 * in its unit. Every target prints one line the same way:
 *
 *     target  fold ÷ bare statement, batch 1000000     1.42x (at most 2.5x)  met
 *     target  local server peak RSS                   127 MiB (below 212 MiB)  met
 *
 * and a missed one makes the benchmark exit non-zero ({@linkcode Deno.exitCode}
 * 1, so the benchmark still cleans up before it exits).
 *
 * @module
 */

/** Checks and prints a benchmark's targets. */
export class RatioTargets {
  readonly #missed: string[] = [];

  /** Target: `ratio` (measured ÷ baseline, e.g. times) is at most `bound`. */
  atMost(label: string, ratio: number, bound: number): boolean {
    return this.#check(label, ratio, `at most ${bound}x`, ratio <= bound);
  }

  /** Target: `ratio` (measured ÷ baseline, e.g. throughputs) is at least `bound`. */
  atLeast(label: string, ratio: number, bound: number): boolean {
    return this.#check(label, ratio, `at least ${bound}x`, ratio >= bound);
  }

  /**
   * Target: `value`, a figure in `unit` (e.g. peak RSS in MiB), is below
   * `bound`. A value that could not be measured (null, NaN) is never met.
   */
  below(label: string, value: number | null, bound: number, unit: string): boolean {
    const measured = value !== null && Number.isFinite(value);
    const shown = measured ? `${value < 10 ? value.toFixed(2) : value.toFixed(0)} ${unit}` : "n/a";
    return this.#report(label, shown, `below ${bound} ${unit}`, measured && value < bound);
  }

  /** The labels of the targets missed so far. */
  get missed(): readonly string[] {
    return this.#missed;
  }

  /** Prints whether every target was met (naming the missed ones). */
  summarize(): void {
    console.log(
      this.#missed.length === 0
        ? "\nEvery target met."
        : `\nMISSED: ${this.#missed.join("; ")} (exit code 1)`,
    );
  }

  #check(label: string, ratio: number, bound: string, holds: boolean): boolean {
    // NaN (a baseline of zero, a failed measurement) is never met.
    const shown = Math.abs(ratio) < 0.1 ? ratio.toFixed(3) : ratio.toFixed(2);
    return this.#report(label, `${shown}x`, bound, Number.isFinite(ratio) && holds);
  }

  #report(label: string, shown: string, bound: string, met: boolean): boolean {
    console.log(
      `target  ${label.padEnd(52)} ${shown.padStart(8)} (${bound})  ${met ? "met" : "MISSED"}`,
    );
    if (!met) {
      this.#missed.push(label);
      Deno.exitCode = 1;
    }
    return met;
  }
}
