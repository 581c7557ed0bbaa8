/**
 * `set-starter-subscriptions` (admin): grants the Starter plan for `days`
 * days to a cohort — `userIds`, or users who signed up in a
 * `createdAfter`/`createdBefore` window (at most 5000) — skipping users with
 * a paid subscription or a running grant. Idempotent (a second call finds
 * everyone granted); `dryRun` reports who would change and writes nothing.
 *
 * @module
 */
import { classifyCohort, type GrantSkipReason, grantStarter } from "../_shared/billing/grants.ts";
import { invalidInput } from "../_shared/platform/errors.ts";
import { defineFunction } from "../_shared/platform/function.ts";

/** Why a member was not granted: the cohort's reasons, or a change made meanwhile. */
type Skip = { userId: string; reason: GrantSkipReason | "changed_concurrently" };

/** The largest cohort one call grants. */
const MAX_COHORT = 5000;

export default defineFunction({
  name: "set-starter-subscriptions",
  access: "admin",
  group: "billing",
  summary: "Grants the Starter plan to a cohort",
  input: () =>
    import("../../../shared/billing_schemas.ts").then((schemas) =>
      schemas.SetStarterSubscriptionsInput
    ),
  output: "SetStarterSubscriptionsOutput",
  async handle({ input, ctx }) {
    return await ctx.db.tx(async (sql) => {
      const members = await classifyCohort(sql, input, MAX_COHORT + 1);
      if (members.filter((m) => m.skip !== "no_such_user").length > MAX_COHORT) {
        throw invalidInput(
          `Cannot grant plans: the cohort has more than ${MAX_COHORT} users; narrow the window`,
        );
      }
      const eligible = members.filter((m) => m.skip === null).map((m) => m.user_id);
      const granted = input.dryRun ? eligible : await grantStarter(sql, eligible, input.days);
      const grantedSet = new Set(granted);
      const skipped = members.flatMap((m): Skip[] =>
        m.skip !== null
          ? [{ userId: m.user_id, reason: m.skip }]
          : grantedSet.has(m.user_id)
          ? []
          : [{ userId: m.user_id, reason: "changed_concurrently" }]
      );
      return {
        dryRun: input.dryRun,
        days: input.days,
        matched: members.length,
        granted: granted.length,
        userIds: granted,
        skipped,
      };
    });
  },
});
