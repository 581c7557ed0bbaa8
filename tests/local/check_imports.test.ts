import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import {
  cycles,
  type Import,
  importGraph,
  importsOf,
  layerProblems,
  localRoomProblems,
  placeOf,
} from "../../local/checks/check_imports.ts";

const S = "supabase/functions/_shared";
const graphOf = (edges: Record<string, string[]>) =>
  new Map<string, Import[]>(
    Object.entries(edges).map(([from, to]) => [from, to.map((target) => ({ line: 1, target }))]),
  );

Deno.test("importsOf() reads static, type-only, re-export and dynamic imports, not comments", () => {
  const source = `/**
 * An example: \`await import("../../doc/example.ts")\` is not an import.
 */
import type { A } from "./a.ts";
import {
  b,
  c,
} from "../lib/b.ts";
export * from "./d.ts";
import "./side_effect.ts";
import { z } from "zod";
// const x = await import("./commented.ts");
const lazy = () => import("../platform/lazy.ts");
`;
  const found = importsOf(`${S}/email/x.ts`, source).map((i) => i.target).sort();
  assert.deepEqual(found, [
    `${S}/email/a.ts`,
    `${S}/email/d.ts`,
    `${S}/email/side_effect.ts`,
    `${S}/lib/b.ts`,
    `${S}/platform/lazy.ts`,
  ]);
});

Deno.test("placeOf() ranks lib < platform < payproc_webhook < features in order < a function's folder", () => {
  const rank = (path: string) => placeOf(path)!.rank;
  assert.ok(rank("shared/schemas.ts") < rank(`${S}/lib/hex.ts`));
  assert.ok(rank(`${S}/lib/hex.ts`) < rank(`${S}/platform/db.ts`));
  assert.ok(rank(`${S}/platform/db.ts`) < rank(`${S}/payproc_webhook/events.ts`));
  assert.ok(rank(`${S}/payproc_webhook/events.ts`) < rank(`${S}/email/send.ts`));
  assert.ok(rank(`${S}/email/send.ts`) < rank(`${S}/notifications/notify.ts`));
  assert.ok(rank(`${S}/deals/cancel.ts`) < rank(`${S}/daily/daily_tasks.ts`));
  assert.ok(rank(`${S}/daily/daily_tasks.ts`) < rank("supabase/functions/cancel-deal/handler.ts"));
  assert.equal(placeOf("tests/support/db.ts"), null);
});

Deno.test("layerProblems() refuses imports that point up, sideways into another feature, or out of the deploy", () => {
  const problems = layerProblems(graphOf({
    [`${S}/platform/context.ts`]: [`${S}/email/send.ts`], // up
    [`${S}/price_alerts/scan.ts`]: [`${S}/views/fold.ts`], // beside
    [`${S}/deals/cancel.ts`]: [
      `${S}/deals/escrow.ts`,
      `${S}/billing/customers.ts`,
      `${S}/lib/hex.ts`,
    ], // fine
    ["supabase/functions/cancel-deal/handler.ts"]: [
      `${S}/deals/cancel.ts`, // fine
      "supabase/functions/payment-status/handler.ts", // another function's folder
    ],
    ["shared/functions.ts"]: [`${S}/platform/db.ts`], // the contract reaching into the server
    [`${S}/email/send.ts`]: ["tests/support/db.ts"], // not deployed
    [`${S}/nowhere/x.ts`]: [`${S}/lib/hex.ts`], // a folder that is no layer
  }));
  assert.equal(problems.length, 6, problems.join("\n"));
  assert.match(
    problems.join("\n"),
    /platform\/context\.ts:1: platform imports .*email\/send\.ts \(feature email\), a layer above it/,
  );
  assert.match(
    problems.join("\n"),
    /price_alerts\/scan\.ts:1: .*views\/fold\.ts \(feature views\), a folder beside it/,
  );
  assert.match(problems.join("\n"), /cancel-deal\/handler\.ts:1: .*payment-status\/handler\.ts/);
  assert.match(problems.join("\n"), /shared\/functions\.ts:1: shared \(the contract\) imports/);
  assert.match(
    problems.join("\n"),
    /email\/send\.ts:1: imports tests\/support\/db\.ts, which is not deployed/,
  );
  assert.match(problems.join("\n"), /nowhere\/x\.ts: _shared\/ has no such layer/);
});

Deno.test("cycles() finds every import cycle, type imports and self-imports included", () => {
  const found = cycles(graphOf({
    "a.ts": ["b.ts"],
    "b.ts": ["c.ts"],
    "c.ts": ["a.ts"],
    "d.ts": ["d.ts"],
    "e.ts": ["a.ts"],
  }));
  assert.deepEqual(found.sort(), [["a.ts", "b.ts", "c.ts"], ["d.ts"]]);
  assert.deepEqual(cycles(graphOf({ "a.ts": ["b.ts"], "b.ts": [] })), []);
});

Deno.test("the repository keeps its import rules", () => {
  const graph = importGraph(fileURLToPath(new URL("../../", import.meta.url)));
  assert.ok(graph.size > 300, "the whole repository was read");
  assert.deepEqual(layerProblems(graph), []);
  assert.deepEqual(localRoomProblems(graph), []);
  assert.deepEqual(cycles(graph), []);
});

Deno.test("localRoomProblems() keeps local/'s files in their rooms, each importing only below it", () => {
  const problems = localRoomProblems(graphOf({
    "local/paths.ts": [],
    "local/start.ts": ["local/db/migrate.ts", "local/generators/catalog.ts", "local/paths.ts"],
    "local/gateway.ts": ["local/console/layout.ts"],
    "local/db/migrate.ts": ["local/paths.ts", "local/db/pg_client.ts"],
    "local/db/pg_client.ts": [],
    "local/generators/catalog.ts": ["local/db/migrate.ts", "local/paths.ts"],
    "local/console/layout.ts": ["local/gateway.ts"],
    "local/db/seed.ts": ["local/generators/catalog.ts"],
    "local/generators/openapi.ts": ["local/checks/check_x.ts"],
    "local/checks/check_x.ts": [],
    "local/pg_user.ts": [],
    "local/openapi_examples.ts": [],
    "local/db/check_y.ts": [],
    "local/attic/old.ts": [],
  }));
  assert.deepEqual(problems, [
    "local/console/layout.ts:1: room console imports local/gateway.ts, a top-level file that puts rooms together: hand in what it needs from there",
    "local/db/seed.ts:1: room db imports local/generators/catalog.ts, room generators, not below it: move what both need into a lower room",
    "local/generators/openapi.ts:1: room generators imports local/checks/check_x.ts, room checks, not below it: move what both need into a lower room",
    "local/pg_user.ts: belongs in local/db/ with the rest of its room",
    "local/openapi_examples.ts: belongs in local/generators/ with the rest of its room",
    "local/db/check_y.ts: belongs in local/checks/ with the rest of its room",
    "local/attic/old.ts: local/ has no such room; add it to LOCAL_ROOMS in local/checks/check_imports.ts",
  ]);
});
