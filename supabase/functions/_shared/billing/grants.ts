/**
 * Plans granted without payment (`source = 'grant'`): expiry back to free,
 * and the Starter grant of set-starter-subscriptions.
 *
 * @module
 */
import type { Sql } from "../platform/db.ts";

/**
 * Ends grants whose period is over: level free, status canceled (the
 * migration's revoke). Only `userId`'s when given. Returns the users changed.
 */
export async function expireGrants(sql: Sql, userId?: string): Promise<string[]> {
  const rows = await sql.query<{ user_id: string }>(
    `update public.subscriptions set subscription_level = 'free', subscription_status = 'canceled'
     where source = 'grant'
       and subscription_status in ('active', 'trialing')
       and current_period_end <= now()
       and ($1::uuid is null or user_id = $1::uuid)
     returning user_id`,
    [userId ?? null],
  );
  return rows.map((r) => r.user_id);
}

/** Why a user of a cohort is not granted the plan. */
export type GrantSkipReason = "paid_subscription" | "already_granted" | "no_such_user";

/** SQL condition (on table alias `s`): a processor subscription that is not over. */
const HAS_PAID = `(s.payproc_subscription_id is not null
  and s.subscription_status in ('active', 'trialing', 'past_due', 'unpaid', 'paused'))`;
/** SQL condition (on alias `s`): a paid-level grant still running. */
const HAS_GRANT = `(s.source = 'grant' and s.subscription_level in ('starter', 'pro')
  and s.subscription_status in ('active', 'trialing')
  and (s.current_period_end is null or s.current_period_end > now()))`;

/** A cohort member and whether (why not) they get the grant. */
export interface CohortMember {
  user_id: string;
  skip: GrantSkipReason | null;
}

/** A cohort: explicit users, or users who signed up in a window. */
export interface Cohort {
  userIds?: readonly string[];
  createdAfter?: string;
  createdBefore?: string;
}

/** Cohort members (at most `limit`) with the reason each would be skipped. */
export async function classifyCohort(
  sql: Sql,
  cohort: Cohort,
  limit: number,
): Promise<CohortMember[]> {
  const rows = await sql.query<{ user_id: string; found: boolean; skip: GrantSkipReason | null }>(
    `with wanted as (
       select id from unnest($1::uuid[]) as id
     ), cohort as (
       select u.id as user_id from auth.users u
       where ($1::uuid[] is null or u.id in (select id from wanted))
         and ($2::timestamptz is null or u.created_at >= $2::timestamptz)
         and ($3::timestamptz is null or u.created_at < $3::timestamptz)
       order by u.created_at, u.id
       limit $4
     )
     select c.user_id, true as found,
            case when ${HAS_PAID} then 'paid_subscription'
                 when ${HAS_GRANT} then 'already_granted' end as skip
     from cohort c left join public.subscriptions s on s.user_id = c.user_id
     union all
     select w.id, false, 'no_such_user' from wanted w
     where not exists (select 1 from auth.users u where u.id = w.id)`,
    [cohort.userIds ?? null, cohort.createdAfter ?? null, cohort.createdBefore ?? null, limit],
  );
  return rows.map(({ user_id, skip }) => ({ user_id, skip }));
}

/**
 * Grants Starter for `days` days from now to `userIds`, re-checking in the
 * same statement that none has a paid subscription or a running grant.
 * Returns the users granted.
 */
export async function grantStarter(
  sql: Sql,
  userIds: readonly string[],
  days: number,
): Promise<string[]> {
  if (userIds.length === 0) return [];
  const rows = await sql.query<{ user_id: string }>(
    `insert into public.subscriptions as s (
       user_id, subscription_level, subscription_status, source, current_period_start,
       current_period_end, cancel_at_period_end
     )
     select id, 'starter', 'active', 'grant', now(), now() + make_interval(days => $2), false
     from unnest($1::uuid[]) as id
     on conflict (user_id) do update set
       subscription_level = 'starter',
       subscription_status = 'active',
       source = 'grant',
       payproc_subscription_id = null,
       payproc_price_id = null,
       billing_interval = null,
       current_period_start = excluded.current_period_start,
       current_period_end = excluded.current_period_end,
       cancel_at_period_end = false
     where not ${HAS_PAID} and not ${HAS_GRANT}
     returning s.user_id`,
    [userIds, days],
  );
  return rows.map((r) => r.user_id);
}
