/**
 * The Webhooks page: the payment processor's event ledger
 * (`public.payproc_events`), newest first, and **replay**: the console reads
 * the event back from the processor (as the handler trusts only what the
 * processor says), signs it with the endpoint's secret as the processor
 * would, and delivers it to `payproc-webhook` through the gateway — the real
 * handler, verification and ledger. An event the ledger already holds
 * changes nothing, and the page says so; an event it does not hold (a
 * delivery that failed while the stack was down) is applied.
 *
 * @module
 */
import { HttpError } from "../../supabase/functions/_shared/platform/errors.ts";
import { toHttpError } from "../../supabase/functions/_shared/platform/to_http_error.ts";
import { loadPayprocSdk, payprocFor } from "../../supabase/functions/_shared/platform/payproc.ts";
import { SIGNATURE_HEADER } from "../../supabase/functions/_shared/payproc_webhook/verify.ts";
import { sendThrough } from "./send.ts";
import type { ConsoleContext, Route } from "./types.ts";
import { choiceParam } from "./records.ts";
import { badge, CONSOLE_PATH, html, notice, page, type SafeHtml, table, time } from "./layout.ts";

const PATH = `${CONSOLE_PATH}/webhooks`;
/** The most ledger rows the page shows. */
export const WEBHOOK_LIST_LIMIT = 200;
const OUTCOMES = ["applied", "ignored", "skipped"] as const;

interface LedgerRow {
  id: string;
  type: string;
  endpoint: string;
  account: string | null;
  outcome: string;
  detail: string | null;
  created: Date;
  received_at: Date;
  livemode: boolean;
}

/** The page's routes. */
export function webhooksRoutes(context: ConsoleContext): Route[] {
  return [
    {
      method: "GET",
      pattern: /^\/webhooks(\.json)?\/?$/,
      handle: async (request, match) => {
        const outcome = choiceParam(request.url, "outcome", OUTCOMES);
        const rows = await context.db().query<LedgerRow>(
          `select id, type, endpoint, account, outcome, detail, created, received_at, livemode
           from public.payproc_events
           where $1::text is null or outcome = $1::text
           order by received_at desc, id desc
           limit ${WEBHOOK_LIST_LIMIT}`,
          [outcome],
        );
        if (match[1]) return { json: { events: rows } };
        return { html: listPage(rows, outcome, request.flash) };
      },
    },
    {
      method: "POST",
      pattern: /^\/webhooks\/replay$/,
      handle: async (request) => {
        const id = (request.form.get("id") ?? "").trim();
        if (!/^evt_[A-Za-z0-9_]{1,200}$/.test(id)) {
          throw new HttpError(400, "invalid_input", `"${id}" is not an event id (evt_...)`);
        }
        const outcome = await replay(context, request.origin, id);
        return request.redirect(PATH, outcome);
      },
    },
  ];
}

/** Replays event `id` through the gateway; what to show about it. */
async function replay(context: ConsoleContext, origin: string, id: string): Promise<SafeHtml> {
  const ctx = { runtime: context.runtime };
  const before = await context.db().maybeOne<LedgerRow>(
    "select id, type, endpoint, account, outcome, detail from public.payproc_events where id = $1",
    [id],
  );
  const processor = await payprocFor(ctx);
  // A Connect event lives on its connected account; the ledger remembers which.
  const event = await processor.events.retrieve(
    id,
    undefined,
    before?.account ? { stripeAccount: before.account } : undefined,
  ).catch((error: unknown) => {
    // The processor's answer in our error model (404: it has no such event).
    throw toHttpError(error);
  });
  const endpoint = before?.endpoint ??
    (typeof event.account === "string" ? "connect" : "platform");
  const env = context.runtime.env;
  const secret = endpoint === "connect"
    ? env.values.PAYPROC_CONNECT_WEBHOOK_SECRET
    : env.values.PAYPROC_WEBHOOK_SECRET;
  if (!secret) {
    throw new HttpError(
      409,
      "not_configured",
      `Cannot sign a replay for the ${endpoint} endpoint: its webhook secret is not set`,
    );
  }
  const payload = JSON.stringify(event);
  const Sdk = await loadPayprocSdk();
  const signature = await Sdk.webhooks.generateTestHeaderStringAsync({
    payload,
    secret,
    cryptoProvider: Sdk.createSubtleCryptoProvider(),
  });
  const sent = await sendThrough(context, origin, "payproc-webhook", {
    "content-type": "application/json; charset=utf-8",
    [SIGNATURE_HEADER]: signature,
  }, payload);
  const answer = sent.body;
  const outcome = typeof answer === "object" && answer !== null && "outcome" in answer
    ? String((answer as { outcome: unknown }).outcome)
    : null;
  const { requestId } = sent;
  const link = html`<a href="${CONSOLE_PATH}/requests/${requestId}">request ${requestId}</a>`;
  const said = !sent.ok
    ? html`<p>Replayed <code>${id}</code> (${event.type}): the handler answered
${badge(String(sent.status), "bad")} · ${link}</p>`
    : outcome === "duplicate"
    ? html`<p>Replayed <code>${id}</code> (${event.type}): <b>nothing changed</b> — the ledger
already holds it (${
      before?.outcome ?? "recorded"
    }), so the handler applied nothing again · ${link}</p>`
    : html`<p>Replayed <code>${id}</code> (${event.type}): ${badge(outcome ?? "done", "ok")} —
the ledger did not hold it, so the handler ${
      outcome === "applied" ? "applied it" : `recorded it as ${outcome}`
    } · ${link}</p>`;
  return notice(sent.ok ? "ok" : "bad", html`${said}<pre>${sent.shown}</pre>`);
}

function outcomeTone(outcome: string): "ok" | "warn" | "bad" | null {
  return outcome === "applied" ? "ok" : outcome === "skipped" ? "warn" : null;
}

function listPage(rows: LedgerRow[], outcome: string | null, flash: SafeHtml | null): string {
  const filters = [null, ...OUTCOMES].map((o) =>
    o === outcome
      ? html`<b>${o ?? "All"}</b>`
      : html`<a href="${PATH}${o ? `?outcome=${o}` : ""}">${o ?? "All"}</a>`
  );
  const cells = rows.map((r) => [
    time(r.received_at),
    html`<code>${r.type}</code>`,
    html`${r.endpoint}${r.account ? html`<br><span class="muted">${r.account}</span>` : ""}`,
    badge(r.outcome, outcomeTone(r.outcome)),
    html`${r.detail ?? ""}`,
    html`<code>${r.id}</code><br><span class="muted">created ${time(r.created)}</span>`,
    html`
      <form class="inline" method="post"
        action="${PATH}/replay"><input type="hidden" name="id" value="${r
          .id}"><button type="submit">Replay</button></form>
    `,
  ]);
  return page(
    "Webhooks",
    PATH,
    html`${flash ?? ""}
<p class="filters">Outcome: ${filters} <a href="${PATH}.json${
      outcome ? `?outcome=${outcome}` : ""
    }">JSON</a></p>
<form class="filters" method="post" action="${PATH}/replay">
<label>Replay any event by id <input name="id" size="36" placeholder="evt_..." required></label>
<button type="submit">Replay</button>
<span class="muted">The event is read back from the processor and delivered, signed, to
payproc-webhook.</span></form>
${
      table(
        ["Received", "Type", "Endpoint", "Outcome", "Detail", "Event", ""],
        cells,
        "The ledger is empty: no processor event was applied yet.",
      )
    }
<p class="muted">The newest ${WEBHOOK_LIST_LIMIT} events; a delivery that was refused (bad signature,
wrong endpoint) or failed is not in the ledger — replay it by id.</p>`,
  );
}
