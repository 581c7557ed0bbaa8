/**
 * Test setup for project analyses: a database, the AI double (real SDK) and
 * a project web site served on 127.0.0.1, plus runtimes whose page fetcher
 * may reach that site — through the test-only `allowLoopback` flag, or
 * through a stub resolver that names a public address and a connector that
 * records the pinned address and connects to the local site instead. No
 * request leaves 127.0.0.1.
 *
 * @module
 */
import type { ProjectAnalysisFields } from "../../shared/analysis_schemas.ts";
import type { Runtime, RuntimeOptions } from "../../supabase/functions/_shared/platform/runtime.ts";
import type {
  Connection,
  ConnectTarget,
} from "../../supabase/functions/_shared/platform/web/http1.ts";
import { AiDouble, TEST_AI_KEY } from "./ai_double.ts";
import { type TestCredentials, testCredentials } from "./credentials.ts";
import { createTestDatabase, type TestDatabase } from "./db.ts";
import { HttpDouble, type RecordedRequest } from "./http_double.ts";
import { testRuntime } from "./runtime.ts";

/** The primary model the tests configure. */
export const PRIMARY = "aimodel-small-test";
/** The fallback model the tests configure. */
export const FALLBACK = "aimodel-large-test";
/** The public address the stub resolver gives every name it knows. */
export const PUBLIC_ADDRESS = "93.184.216.34";

/** A page the site serves. */
export interface SitePage {
  status?: number;
  contentType?: string;
  body: string;
  headers?: Record<string, string>;
}

/** The HTML of a small project page (with a script and a style the extractor must drop). */
export function projectPage(name = "Acme Analytics"): string {
  return `<!doctype html><html><head><title>${name}</title>
<meta name="description" content="${name}: privacy-first web analytics for small shops.">
<style>body { color: red }</style><script>window.secret = "do not send";</script></head>
<body><main><h1>${name}</h1><p>Subscriptions from $9 a month; 1,200 paying customers.</p>
<h2>Pricing</h2><p>Built with Next.js and PostgreSQL.</p></main></body></html>`;
}

/** A valid analysis the AI double can answer with. */
export function validAnalysis(
  overrides: Partial<ProjectAnalysisFields> = {},
): ProjectAnalysisFields {
  return {
    summary: "A privacy-first web analytics SaaS for small shops with about 1,200 customers.",
    category: "SaaS",
    businessModel: "Monthly subscriptions sold to small online shops",
    techStack: ["Next.js", "PostgreSQL"],
    monetization: "Subscriptions from $9 a month",
    strengths: ["Recurring revenue", "Clear niche"],
    risks: ["Crowded market"],
    valuationHint: { low: 40000, high: 90000, currency: "USD", basis: "2-4x annual revenue" },
    confidence: 0.6,
    ...overrides,
  };
}

/** What {@linkcode analysisSetup} gives a test file. */
export interface AnalysisSetup {
  db: TestDatabase;
  ai: AiDouble;
  /** The project's site on 127.0.0.1; `pages` maps a path to what it serves. */
  site: HttpDouble;
  pages: Map<string, SitePage>;
  keys: TestCredentials;
  /** Targets the recording connector was asked to connect to. */
  connections: ConnectTarget[];
  /** The site's URL of `path` (on 127.0.0.1: reachable only with `allowLoopback`). */
  localUrl(path: string): string;
  /** A runtime on the doubles; `env` and `options` add to or override the defaults. */
  runtime(env?: Record<string, string | undefined>, options?: RuntimeOptions): Promise<Runtime>;
  /**
   * Page-fetch options that resolve `names` to {@linkcode PUBLIC_ADDRESS}
   * (others to nothing) and connect every checked target to the local site,
   * recording it in `connections`.
   */
  publicSite(names: readonly string[]): NonNullable<RuntimeOptions["pageFetch"]>;
  /** The site's requests for `path`. */
  requestsFor(path: string): RecordedRequest[];
  close(): Promise<void>;
}

/** Starts the database, the AI double and the site. */
export async function analysisSetup(): Promise<AnalysisSetup> {
  const db = await createTestDatabase();
  const ai = new AiDouble();
  const pages = new Map<string, SitePage>();
  const site = new HttpDouble({
    handler: (request) => {
      const page = pages.get(request.path);
      if (!page) return new Response("not found", { status: 404 });
      return new Response(page.body, {
        status: page.status ?? 200,
        headers: {
          "content-type": page.contentType ?? "text/html; charset=utf-8",
          ...page.headers,
        },
      });
    },
  });
  const connections: ConnectTarget[] = [];
  const runtimes: Runtime[] = [];
  return {
    db,
    ai,
    site,
    pages,
    keys: await testCredentials(),
    connections,
    localUrl: (path) => new URL(path, site.url).href,
    async runtime(env = {}, options = {}) {
      const runtime = await testRuntime(db, {
        AIMODEL_API_KEY: TEST_AI_KEY,
        AIMODEL_BASE_URL: ai.url,
        AIMODEL_PRIMARY: PRIMARY,
        AIMODEL_FALLBACK: FALLBACK,
        ...env,
      }, options);
      runtimes.push(runtime);
      return runtime;
    },
    publicSite(names) {
      return {
        resolver: (host) => Promise.resolve(names.includes(host) ? [PUBLIC_ADDRESS] : []),
        connect: async (target): Promise<Connection> => {
          connections.push(target);
          return await Deno.connect({ hostname: "127.0.0.1", port: site.port });
        },
      };
    },
    requestsFor: (path) => site.requests.filter((request) => request.path === path),
    async close() {
      for (const runtime of runtimes) await runtime.close();
      await ai.close();
      await site.close();
      await db.close();
    },
  };
}
