/**
 * A bounded HTTP load loop for benchmarks: `concurrency` workers send
 * requests for `durationMs` to a local server and record latencies.
 *
 * @module
 */

/** Result of {@linkcode runLoad}. */
export interface LoadResult {
  requests: number;
  errors: number;
  seconds: number;
  perSecond: number;
  p50Ms: number;
  p95Ms: number;
}

/** Sends `makeRequest()` from `concurrency` workers for `durationMs`; statuses other than 200 count as errors. */
export async function runLoad(
  makeRequest: () => Request,
  options: { concurrency: number; durationMs: number },
): Promise<LoadResult> {
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  const deadline = started + options.durationMs;
  const worker = async () => {
    while (performance.now() < deadline) {
      const t0 = performance.now();
      const res = await fetch(makeRequest());
      await res.arrayBuffer();
      latencies.push(performance.now() - t0);
      if (res.status !== 200) errors++;
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  return summarize(latencies, (performance.now() - started) / 1000, errors);
}

/** Throughput and latency percentiles of a run (`latencies` in ms, sorted here). */
export function summarize(latencies: number[], seconds: number, errors: number): LoadResult {
  latencies.sort((a, b) => a - b);
  const at = (q: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return {
    requests: latencies.length,
    errors,
    seconds,
    perSecond: latencies.length / seconds,
    p50Ms: at(0.5),
    p95Ms: at(0.95),
  };
}

/** Peak resident memory (VmHWM) of a process in MiB, from /proc; null where unavailable. */
export function peakRssMiB(pid: number): number | null {
  try {
    const status = Deno.readTextFileSync(`/proc/${pid}/status`);
    const kb = /VmHWM:\s+(\d+) kB/.exec(status)?.[1];
    return kb ? Number(kb) / 1024 : null;
  } catch {
    return null;
  }
}

/** Waits until `url` answers (any status), up to `timeoutMs`. */
export async function waitForServer(url: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const res = await fetch(url, { method: "OPTIONS" });
      await res.body?.cancel();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
