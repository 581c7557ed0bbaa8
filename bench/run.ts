/**
 * `deno task bench [name...]`: runs every benchmark in `bench/` (or the named
 * ones) one after another. Each prints its own figures and ratios.
 *
 * @module
 */
import { fileURLToPath } from "node:url";

const dir = fileURLToPath(new URL(".", import.meta.url));
const all = [...Deno.readDirSync(dir)]
  .filter((e) => e.isFile && e.name.endsWith(".ts") && e.name !== "run.ts")
  .map((e) => e.name.replace(/\.ts$/, ""))
  .sort();
const chosen = Deno.args.length > 0 ? Deno.args : all;
let failed = 0;
for (const name of chosen) {
  if (!all.includes(name)) {
    console.error(`Unknown benchmark "${name}"; have: ${all.join(", ")}`);
    Deno.exit(2);
  }
  console.log(`\n== bench/${name}.ts`);
  const { code } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${dir}${name}.ts`],
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (code !== 0) failed++;
}
Deno.exit(failed > 0 ? 1 : 0);
