/**
 * The Functions page, rendered from the OpenAPI document `deno task openapi`
 * writes (`docs/openapi.json`, also served here at `/_local/openapi.json`):
 * every function by group with who may call it; one function's page has its
 * request and answer schemas, a curl example and a form that calls it
 * through the gateway with a chosen caller's token and shows the answer.
 *
 * @module
 */
import { HttpError } from "../../supabase/functions/_shared/platform/errors.ts";
import { sendThrough } from "./send.ts";
import type { ConsoleContext, PageRequest, Route } from "./types.ts";
import {
  badge,
  CONSOLE_PATH,
  html,
  join,
  notice,
  page,
  prettyJson,
  type SafeHtml,
  statusTone,
} from "./layout.ts";

/** Where the document is read from. */
export const OPENAPI_PATH = new URL("../../docs/openapi.json", import.meta.url);

/** The parts of the OpenAPI document the page reads. */
interface OpenApiDocument {
  info?: { title?: string; version?: string };
  paths: Record<string, { post?: Operation }>;
  components?: {
    schemas?: Record<string, unknown>;
    responses?: Record<string, { description?: string }>;
  };
}

interface Operation {
  operationId?: string;
  summary?: string;
  description?: string;
  tags?: string[];
  "x-access"?: string;
  security?: Array<Record<string, unknown>>;
  requestBody?: { required?: boolean; content?: Record<string, MediaType> };
  responses?: Record<
    string,
    { $ref?: string; description?: string; content?: Record<string, MediaType> }
  >;
}

interface MediaType {
  schema?: unknown;
  example?: unknown;
  examples?: Record<string, { value?: unknown }>;
}

/** One function as the page shows it. */
interface FunctionView {
  name: string;
  group: string;
  summary: string;
  access: string;
  operation: Operation;
}

/** Who the form can call as. */
export const CALLERS = ["anon", "user", "admin", "service", "scheduler", "none", "custom"] as const;
export type CallerChoice = (typeof CALLERS)[number];

const CALLER_LABELS: Record<CallerChoice, string> = {
  anon: "anon key (public)",
  user: "a user (console-user@example.com)",
  admin: "an admin (console-admin@example.com)",
  service: "service role key",
  scheduler: "scheduler token",
  none: "no token",
  custom: "this token:",
};

/** The local users the form signs in as. */
export const CONSOLE_USER_EMAIL = "console-user@example.com";
export const CONSOLE_ADMIN_EMAIL = "console-admin@example.com";

/** The caller a function's access rule suggests first. */
function defaultCaller(access: string): CallerChoice {
  switch (access) {
    case "public":
      return "anon";
    case "admin":
      return "admin";
    case "scheduled":
      return "scheduler";
    case "system":
      return "service";
    case "webhook":
      return "none";
    default:
      return "user";
  }
}

/** The token a curl example puts in `Authorization` for `access`. */
function curlToken(access: string): string {
  switch (access) {
    case "public":
      return "$ANON_KEY";
    case "admin":
      return "$(deno task token --email admin@example.com --admin)";
    case "scheduled":
      return "$SCHEDULER_TOKEN";
    case "system":
      return "$SERVICE_ROLE_KEY";
    default:
      return "$(deno task token --email you@example.com)";
  }
}

/** The page's routes. */
export function functionsRoutes(context: ConsoleContext): Route[] {
  const path = context.openApiPath ?? OPENAPI_PATH;
  const read = async (): Promise<OpenApiDocument> => {
    let text: string;
    try {
      text = await Deno.readTextFile(path);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) {
        throw new HttpError(
          404,
          "not_found",
          "docs/openapi.json does not exist: run deno task openapi",
        );
      }
      throw error;
    }
    return JSON.parse(text) as OpenApiDocument;
  };
  const views = async (): Promise<{ doc: OpenApiDocument; functions: FunctionView[] }> => {
    const doc = await read();
    const functions: FunctionView[] = [];
    for (const [route, item] of Object.entries(doc.paths)) {
      const match = /^\/functions\/v1\/([^/]+)$/.exec(route);
      if (!match || !item.post) continue;
      const name = match[1]!;
      const declared = context.functions.get(name)?.definition;
      functions.push({
        name,
        group: item.post.tags?.[0] ?? declared?.group ?? "other",
        summary: item.post.summary ?? "",
        access: item.post["x-access"] ?? declared?.access ?? "unknown",
        operation: item.post,
      });
    }
    return { doc, functions };
  };
  const one = async (name: string) => {
    const { doc, functions } = await views();
    const view = functions.find((f) => f.name === name);
    if (!view) throw new HttpError(404, "not_found", `No function "${name}" in docs/openapi.json`);
    return { doc, view };
  };

  return [
    {
      method: "GET",
      pattern: /^\/openapi\.json$/,
      handle: async () => ({ json: await read() }),
    },
    {
      method: "GET",
      pattern: /^\/functions\/?$/,
      handle: async () => {
        const { functions } = await views();
        return { html: listPage(functions) };
      },
    },
    {
      method: "GET",
      pattern: /^\/functions\/([a-z0-9-]+)$/,
      handle: async (request, match) => {
        const { doc, view } = await one(match[1]!);
        return { html: functionPage(doc, view, request) };
      },
    },
    {
      method: "POST",
      pattern: /^\/functions\/([a-z0-9-]+)\/call$/,
      handle: async (request, match) => {
        const { view } = await one(match[1]!);
        const outcome = await call(context, view, request);
        return request.redirect(`${CONSOLE_PATH}/functions/${view.name}#call`, outcome);
      },
    },
  ];
}

function listPage(functions: FunctionView[]): string {
  const groups = new Map<string, FunctionView[]>();
  for (const f of functions) groups.set(f.group, [...(groups.get(f.group) ?? []), f]);
  const sections = [...groups].map(([group, members]) =>
    html`
      <h2 id="${group}">${group}</h2>
      <table>
        <thead>
          <tr>
            <th>Function</th>
            <th>Who may call it</th>
            <th>What it does</th>
          </tr>
        </thead>
        <tbody>${members.map((f) =>
          html`
            <tr>
              <td><a href="${CONSOLE_PATH}/functions/${f.name}"><code>${f.name}</code></a></td>
              <td>${badge(f.access)}</td>
              <td>${f.summary}</td>
            </tr>
          `
        )}</tbody>
      </table>
    `
  );
  return page(
    "Functions",
    `${CONSOLE_PATH}/functions`,
    html`<p class="muted">${functions.length} functions in ${groups.size} groups, from
<a href="${CONSOLE_PATH}/openapi.json">docs/openapi.json</a>. Each is
<code>POST /functions/v1/&lt;name&gt;</code>.</p>
<p class="filters">${
      join(
        [...groups.keys()].map((g) => html`<a href="#${g}">${g}</a>`),
        html`
          ·
        `,
      )
    }</p>
${sections}`,
  );
}

/** The first JSON example of a request body, or `{}`. */
function exampleOf(operation: Operation): unknown {
  const media = operation.requestBody?.content?.["application/json"];
  if (!media) return undefined;
  if (media.example !== undefined) return media.example;
  const first = Object.values(media.examples ?? {})[0];
  return first?.value ?? {};
}

/** A response's description, read through a `$ref` into the shared responses. */
function describedBy(doc: OpenApiDocument, response: { $ref?: string; description?: string }) {
  const shared = /^#\/components\/responses\/(.+)$/.exec(response.$ref ?? "")?.[1];
  return (shared ? doc.components?.responses?.[shared] : response)?.description ?? "";
}

/** `schema` with a top-level `$ref` into the components resolved, for reading. */
function resolved(doc: OpenApiDocument, schema: unknown): unknown {
  if (typeof schema === "object" && schema !== null && "$ref" in schema) {
    const ref = String((schema as { $ref: unknown }).$ref);
    const name = /^#\/components\/schemas\/(.+)$/.exec(ref)?.[1];
    if (name && doc.components?.schemas?.[name] !== undefined) {
      return { title: name, ...(doc.components.schemas[name] as object) };
    }
  }
  return schema;
}

function functionPage(doc: OpenApiDocument, view: FunctionView, request: PageRequest): string {
  const { operation } = view;
  const example = exampleOf(operation);
  const requestSchema = operation.requestBody?.content?.["application/json"]?.schema;
  const ok = operation.responses?.["200"]?.content?.["application/json"]?.schema;
  const errors = Object.entries(operation.responses ?? {}).filter(([status]) => status !== "200");
  const url = `${request.origin}/functions/v1/${view.name}`;
  const curl = view.access === "webhook"
    ? `# Called by its provider with a signed body (see docs/); no token.\ncurl -X POST ${url} -H "Content-Type: application/json" -d '<signed payload>'`
    : [
      `curl -X POST ${url} \\`,
      `  -H "Authorization: Bearer ${curlToken(view.access)}" \\`,
      `  -H "apikey: $ANON_KEY"${example === undefined ? "" : " \\"}`,
      ...(example === undefined
        ? []
        : [`  -H "Content-Type: application/json" \\`, `  -d '${JSON.stringify(example)}'`]),
    ].join("\n");
  const chosen = defaultCaller(view.access);
  const options = CALLERS.map((c) =>
    c === chosen
      ? html`<option value="${c}" selected>${CALLER_LABELS[c]}</option>`
      : html`<option value="${c}">${CALLER_LABELS[c]}</option>`
  );
  const body = html`
    <p>${view.summary}</p>
    <p>Who may call it: ${badge(view.access)} · group <a href="${CONSOLE_PATH}/functions#${view
      .group}">${view.group}</a></p>
    ${request.flash ?? ""}
    <h2>curl</h2>
    <pre>${curl}</pre>
    <h2 id="call">Call it</h2>
    <form method="post" action="${CONSOLE_PATH}/functions/${view.name}/call">
      <p><label>As <select name="caller">${options}</select></label>
    <input name="token" size="60" placeholder="a token, for &quot;this token&quot;" aria-label="token"></p>
      <p><label>Body (JSON)<br><textarea name="body" rows="6">${example === undefined
        ? ""
        : prettyJson(example)}</textarea></label></p>
      <p><button type="submit">Call ${view.name}</button></p>
    </form>
    <h2>Request body</h2>
    ${requestSchema === undefined
      ? html`<p class="muted">It takes no body.</p>`
      : html`<pre>${prettyJson(resolved(doc, requestSchema))}</pre>`}
    <h2>Answer (200)</h2>
    ${ok === undefined
      ? html`<p class="muted">No schema.</p>`
      : html`<pre>${prettyJson(resolved(doc, ok))}</pre>`}
    <h2>Failures</h2>
    <table>
      <thead>
        <tr>
          <th>Status</th>
          <th>When</th>
        </tr>
      </thead>
      <tbody>${errors.map(([status, response]) =>
        html`
          <tr>
            <td>${status}</td>
            <td>${describedBy(doc, response)}</td>
          </tr>
        `
      )}</tbody>
    </table>
  `;
  return page(view.name, `${CONSOLE_PATH}/functions`, body);
}

/** Calls `view`'s function through the gateway as the form says; the outcome to show. */
async function call(
  context: ConsoleContext,
  view: FunctionView,
  request: PageRequest,
): Promise<SafeHtml> {
  const caller = CALLERS.find((c) => c === request.form.get("caller"));
  if (!caller) {
    throw new HttpError(400, "invalid_input", `caller must be one of ${CALLERS.join(", ")}`);
  }
  const bodyText = (request.form.get("body") ?? "").trim();
  const headers: Record<string, string> = { "content-type": "application/json" };
  const { tokens } = context;
  const bearer = async (): Promise<string | null> => {
    switch (caller) {
      case "anon":
        return tokens.anon;
      case "service":
        return tokens.service;
      case "scheduler":
        return tokens.scheduler;
      case "user":
        return await tokens.user(CONSOLE_USER_EMAIL, false);
      case "admin":
        return await tokens.user(CONSOLE_ADMIN_EMAIL, true);
      case "custom": {
        const token = (request.form.get("token") ?? "").trim().replace(/^Bearer\s+/i, "");
        if (!token) throw new HttpError(400, "invalid_input", "Give the token to call with");
        return token;
      }
      case "none":
        return null;
    }
  };
  const token = await bearer();
  if (token !== null) headers.authorization = `Bearer ${token}`;
  if (caller !== "none" && caller !== "scheduler") {
    headers.apikey = caller === "service" ? tokens.service : tokens.anon;
  }
  const sent = await sendThrough(
    context,
    request.origin,
    view.name,
    headers,
    bodyText === "" ? "{}" : bodyText,
  );
  return notice(
    sent.ok ? "ok" : "bad",
    html`<p>Called <code>${view.name}</code> as ${CALLER_LABELS[caller].replace(/:$/, "")}:
${badge(String(sent.status), statusTone(sent.status))} in ${sent.ms} ms ·
<a href="${CONSOLE_PATH}/requests/${sent.requestId}">request ${sent.requestId}</a></p>
<pre>${sent.shown}</pre>`,
  );
}
