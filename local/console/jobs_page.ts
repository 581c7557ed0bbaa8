/**
 * The Jobs page: every scheduled function (declared `scheduled`, or an admin
 * function the schedule may start) with its cron from `public.job_schedules`
 * and its newest runs from `public.job_runs`, a **run now** button that
 * calls the function through the gateway with the scheduler's token (the
 * same request the scheduler sends), and the price-alert runs
 * (`public.price_alert_runs`) with their durations drawn as an SVG chart.
 *
 * @module
 */
import { HttpError } from "../../supabase/functions/_shared/platform/errors.ts";
import { sendThrough } from "./send.ts";
import type { ConsoleContext, Route } from "./types.ts";
import {
  badge,
  CONSOLE_PATH,
  duration,
  html,
  notice,
  page,
  type SafeHtml,
  statusTone,
  table,
  time,
} from "./layout.ts";

const PATH = `${CONSOLE_PATH}/jobs`;
/** How many job runs and price-alert runs the page shows. */
export const RUNS_SHOWN = 40;

interface ScheduleRow {
  function_name: string;
  cron: string;
  enabled: boolean;
  body: unknown;
  description: string | null;
}

interface RunRow {
  id: string;
  job_name: string;
  status: string;
  started_at: Date;
  finished_at: Date | null;
  duration_ms: number | null;
  scanned: number;
  changed: number;
  failed: number;
  error_code: string | null;
}

interface PriceAlertRunRow {
  id: string;
  status: string;
  started_at: Date;
  duration_ms: number | null;
  match_ms: number | null;
  delivery_ms: number | null;
  alerts_scanned: number;
  matches: number;
  delivered: number;
  failed: number;
}

/** One scheduled function as the page shows it. */
interface Job {
  name: string;
  access: string;
  summary: string;
  schedule: ScheduleRow | null;
  last: RunRow | null;
}

function runTone(status: string): "ok" | "warn" | "bad" | null {
  return status === "succeeded"
    ? "ok"
    : status === "running"
    ? null
    : status === "partial"
    ? "warn"
    : "bad";
}

/** The page's routes. */
export function jobsRoutes(context: ConsoleContext): Route[] {
  /** Scheduled functions: by declaration, plus any the schedule table names. */
  const scheduledNames = (schedules: ScheduleRow[]): string[] => {
    const names = new Set(schedules.map((s) => s.function_name));
    for (const [name, fn] of context.functions) {
      if (fn.definition.access === "scheduled" || fn.definition.scheduler) names.add(name);
    }
    return [...names].sort();
  };
  const read = async () => {
    const sql = context.db();
    const [schedules, runs, lastRuns, alertRuns] = await Promise.all([
      sql.query<ScheduleRow>(
        "select function_name, cron, enabled, body, description from public.job_schedules",
      ),
      sql.query<RunRow>(
        `select id, job_name, status, started_at, finished_at, scanned, changed, failed, error_code,
           (extract(epoch from finished_at - started_at) * 1000)::int as duration_ms
         from public.job_runs order by started_at desc limit ${RUNS_SHOWN}`,
      ),
      sql.query<RunRow>(
        `select distinct on (job_name) id, job_name, status, started_at, finished_at, scanned,
           changed, failed, error_code,
           (extract(epoch from finished_at - started_at) * 1000)::int as duration_ms
         from public.job_runs order by job_name, started_at desc`,
      ),
      sql.query<PriceAlertRunRow>(
        `select id, status, started_at, duration_ms, match_ms, delivery_ms, alerts_scanned, matches,
           delivered, failed
         from public.price_alert_runs order by started_at desc limit ${RUNS_SHOWN}`,
      ),
    ]);
    const jobs: Job[] = scheduledNames(schedules).map((name) => {
      const definition = context.functions.get(name)?.definition;
      return {
        name,
        access: definition?.access ?? "unknown",
        summary: definition?.summary ?? "",
        schedule: schedules.find((s) => s.function_name === name) ?? null,
        last: lastRuns.find((r) => r.job_name === name) ?? null,
      };
    });
    return { jobs, runs, alertRuns };
  };

  return [
    {
      method: "GET",
      pattern: /^\/jobs(\.json)?\/?$/,
      handle: async (request, match) => {
        const data = await read();
        if (match[1]) return { json: data };
        return { html: jobsPage(data.jobs, data.runs, data.alertRuns, request.flash) };
      },
    },
    {
      method: "POST",
      pattern: /^\/jobs\/([a-z0-9-]+)\/run$/,
      handle: async (request, match) => {
        const name = match[1]!;
        const sql = context.db();
        const schedules = await sql.query<ScheduleRow>(
          "select function_name, cron, enabled, body, description from public.job_schedules",
        );
        if (!scheduledNames(schedules).includes(name) || !context.functions.has(name)) {
          throw new HttpError(404, "not_found", `"${name}" is not a scheduled function`);
        }
        const body = schedules.find((s) => s.function_name === name)?.body ?? {};
        const outcome = await runNow(context, request.origin, name, body);
        return request.redirect(`${PATH}#${name}`, outcome);
      },
    },
  ];
}

/** Calls `name` as the scheduler does; what to show about it. */
async function runNow(
  context: ConsoleContext,
  origin: string,
  name: string,
  body: unknown,
): Promise<SafeHtml> {
  const sent = await sendThrough(context, origin, name, {
    authorization: `Bearer ${context.tokens.scheduler}`,
    "content-type": "application/json",
  }, JSON.stringify(body ?? {}));
  return notice(
    sent.ok ? "ok" : "bad",
    html`<p>Ran <code>${name}</code> now: ${badge(String(sent.status), statusTone(sent.status))}
in ${
      duration(sent.ms)
    } · <a href="${CONSOLE_PATH}/requests/${sent.requestId}">request ${sent.requestId}</a></p>
<pre>${sent.shown}</pre>`,
  );
}

function jobsPage(
  jobs: Job[],
  runs: RunRow[],
  alertRuns: PriceAlertRunRow[],
  flash: SafeHtml | null,
): string {
  const jobRows = jobs.map((job) => [
    html`<code id="${job.name}">${job.name}</code><br><span class="muted">${job.summary}</span>`,
    job.schedule
      ? html`<code>${job.schedule.cron}</code>${
        job.schedule.enabled ? "" : html`
          ${badge("disabled", "warn")}
        `
      }`
      : html`<span class="muted">not scheduled</span>`,
    job.last
      ? html`${time(job.last.started_at)}<br>${badge(job.last.status, runTone(job.last.status))} ${
        duration(job.last.duration_ms)
      }`
      : html`<span class="muted">never ran</span>`,
    job.last ? html`${job.last.scanned} / ${job.last.changed} / ${job.last.failed}` : html``,
    html`
      <form class="inline" method="post"
        action="${PATH}/${job.name}/run"><button type="submit">Run now</button></form>
    `,
  ]);
  const runRows = runs.map((r) => [
    time(r.started_at),
    html`<code>${r.job_name}</code>`,
    badge(r.status, runTone(r.status)),
    html`${duration(r.duration_ms)}`,
    html`${r.scanned}`,
    html`${r.changed}`,
    html`${r.failed}`,
    html`${r.error_code ?? ""}`,
  ]);
  const alertRows = alertRuns.map((r) => [
    time(r.started_at),
    badge(r.status, runTone(r.status)),
    html`${duration(r.duration_ms)}`,
    html`${duration(r.match_ms)} / ${duration(r.delivery_ms)}`,
    html`${r.alerts_scanned}`,
    html`${r.matches}`,
    html`${r.delivered}`,
    html`${r.failed}`,
  ]);
  return page(
    "Jobs",
    PATH,
    html`${flash ?? ""}
<p class="muted">Run now sends what the scheduler sends: the function's scheduled body, with the
scheduler token. Counts are scanned / changed / failed.</p>
${table(["Function", "Cron (UTC)", "Last run", "Counts", ""], jobRows, "No scheduled functions.")}
<h2>Newest runs</h2>
${
      table(
        ["Started", "Job", "Outcome", "Duration", "Scanned", "Changed", "Failed", "Error"],
        runRows,
        "No job has run yet.",
      )
    }
<h2 id="price-alerts">Price-alert runs</h2>
${durationChart([...alertRuns].reverse())}
${
      table(
        [
          "Started",
          "Outcome",
          "Duration",
          "Match / delivery",
          "Alerts",
          "Matches",
          "Delivered",
          "Failed",
        ],
        alertRows,
        "No price-alert run yet.",
      )
    }`,
  );
}

/** Chart size and margins (SVG user units). */
const CHART = { width: 720, height: 180, left: 56, bottom: 22, top: 12 };

/**
 * The runs' durations as a bar chart, oldest left: each bar is one run (its
 * tooltip says when and how long), coloured by outcome; the axis shows the
 * longest duration. A run still going has no bar.
 */
export function durationChart(runs: PriceAlertRunRow[]): SafeHtml {
  const finished = runs.filter((r) => r.duration_ms !== null);
  if (finished.length === 0) {
    return html`<p class="muted">No finished price-alert run to chart yet.</p>`;
  }
  const max = Math.max(1, ...finished.map((r) => r.duration_ms!));
  const plotWidth = CHART.width - CHART.left - 8;
  const plotHeight = CHART.height - CHART.top - CHART.bottom;
  const step = plotWidth / finished.length;
  const barWidth = Math.max(2, Math.min(40, step * 0.7));
  const bars = finished.map((r, i) => {
    const h = Math.max(1, (r.duration_ms! / max) * plotHeight);
    const x = CHART.left + i * step + (step - barWidth) / 2;
    const y = CHART.top + plotHeight - h;
    const fill = r.status === "succeeded"
      ? "#2da44e"
      : r.status === "partial"
      ? "#bf8700"
      : "#cf222e";
    return html`
      <rect x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${barWidth.toFixed(1)}" height="${h
        .toFixed(1)}" fill="${fill}">
        <title>${r.started_at.toISOString().slice(0, 19).replace("T", " ")}: ${duration(
          r.duration_ms,
        )} (${r.status})</title>
      </rect>
    `;
  });
  const axisY = CHART.top + plotHeight;
  return html`
    <svg role="img" aria-label="Durations of the last ${finished
      .length} price-alert runs, longest ${duration(max)}"
      width="${CHART.width}" height="${CHART.height}" viewBox="0 0 ${CHART.width} ${CHART.height}"
      xmlns="http://www.w3.org/2000/svg">
    <line x1="${CHART.left}" y1="${CHART.top}" x2="${CHART.left}" y2="${axisY}" stroke="#57606a"/>
    <line x1="${CHART.left}" y1="${axisY}" x2="${CHART.width - 8}" y2="${axisY}" stroke="#57606a"/>
    <text x="${CHART.left - 6}" y="${CHART.top +
      10}" text-anchor="end" font-size="11" fill="#57606a">${duration(max)}</text>
    <text x="${CHART.left -
      6}" y="${axisY}" text-anchor="end" font-size="11" fill="#57606a">0</text>
    <text x="${CHART.left}" y="${CHART.height - 6}" font-size="11" fill="#57606a">oldest</text>
    <text x="${CHART.width - 8}" y="${CHART.height -
      6}" text-anchor="end" font-size="11" fill="#57606a">newest</text>
    ${bars}
    </svg>
  `;
}
