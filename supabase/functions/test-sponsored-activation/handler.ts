/**
 * `test-sponsored-activation` (admin; the anon key with `LOCAL_DEV=true`): a
 * dry run of `process-sponsored-activations`. `{ at? }` (default now) →
 * `{ at, dryRun: true, activate, expire }`: the placements a run at `at`
 * would activate and expire, judged on the rows as they are now. Writes
 * nothing, not even a job run.
 *
 * @module
 */
import { defineFunction } from "../_shared/platform/function.ts";
import { planSponsoredActivations } from "../_shared/sponsored/activations.ts";

export default defineFunction({
  name: "test-sponsored-activation",
  access: "admin",
  group: "utilities",
  summary: "Dry run of process-sponsored-activations at a given time",
  input: () =>
    import("../../../shared/scheduled_schemas.ts").then((schemas) =>
      schemas.TestSponsoredActivationInput
    ),
  output: "TestSponsoredActivationOutput",
  handle({ input, ctx }) {
    // A Date, not the string: the driver writes every year PostgreSQL takes (BC included).
    return planSponsoredActivations(ctx, input.at === undefined ? undefined : new Date(input.at));
  },
});
