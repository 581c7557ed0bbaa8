/**
 * `test-sponsored-activation` (admin; the anon key with `LOCAL_DEV=true`): a
 * dry run of `process-sponsored-activations`. `{ at? }` (default now) →
 * `{ at, dryRun: true, activate, expire }`: the placements a run at `at`
 * would activate and expire, judged on the rows as they are now. Writes
 * nothing, not even a job run.
 *
 * @module
 */
import { defineFunction } from "../_shared/function.ts";
import { planSponsoredActivations } from "../_shared/sponsored/activations.ts";

export default defineFunction("test-sponsored-activation", {
  handle({ input, ctx }) {
    // A Date, not the string: the driver writes every year PostgreSQL takes (BC included).
    return planSponsoredActivations(ctx, input.at === undefined ? undefined : new Date(input.at));
  },
});
