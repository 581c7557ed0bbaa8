/**
 * Access rules: who may call a function, enforced by the factory before the
 * handler runs (`docs/functions.md#credentials`).
 *
 * @module
 */
import type { Access } from "../../../../shared/access.ts";
import type { FunctionGroup } from "../../../../shared/function_groups.ts";
import type {
  AnonCaller,
  Caller,
  NoCaller,
  SchedulerCaller,
  ServiceCaller,
  UserCaller,
} from "./caller.ts";
import type { Context } from "./context.ts";
import { forbidden, type HttpError, invalidInput, notFound } from "./errors.ts";

export type { Access };

/**
 * The caller a handler sees, narrowed by its access rule (utilities also
 * see the anon key, which starts them locally with `LOCAL_DEV=true`; a
 * function the scheduler starts, `T`, also sees the service key and the
 * scheduler token).
 */
export type CallerFor<
  A extends Access,
  G extends FunctionGroup = FunctionGroup,
  T extends boolean = false,
> =
  | (A extends "webhook" ? NoCaller
    : A extends "user" | "seller" | "deal-participant" | "deal-participant-or-admin" | "admin"
      ? UserCaller
    : A extends "public" ? UserCaller | AnonCaller | ServiceCaller
    : A extends "system" ? UserCaller | ServiceCaller
    : UserCaller | AnonCaller | ServiceCaller | SchedulerCaller)
  | (G extends "utilities" ? AnonCaller : never)
  | (T extends true ? ServiceCaller | SchedulerCaller : never);

/** Every access rule, for validating definitions. */
export const ACCESS_RULES: readonly Access[] = [
  "public",
  "user",
  "seller",
  "deal-participant",
  "deal-participant-or-admin",
  "admin",
  "scheduled",
  "system",
  "webhook",
];

/** The facts of a function the access rules look at. */
export interface AccessSpec {
  access: Access;
  group: FunctionGroup;
  /** The scheduler (service-role key or `SCHEDULER_TOKEN`) may start it too. */
  scheduler?: boolean;
}

/** Whether `userId` holds the admin role (`public.has_role`). */
export async function isAdmin(ctx: Context, userId: string): Promise<boolean> {
  const row = await ctx.db.one<{ admin: boolean }>(
    "select public.has_role($1, 'admin') as admin",
    [userId],
  );
  return row.admin;
}

/** Whether `userId` is a seller: has a listing or a payout account (`public.is_seller`). */
export async function isSeller(ctx: Context, userId: string): Promise<boolean> {
  const row = await ctx.db.one<{ seller: boolean }>("select public.is_seller($1) as seller", [
    userId,
  ]);
  return row.seller;
}

/**
 * The seller rule's refusal: it says how to become one. Starting payout
 * onboarding (`connect-onboarding-link`, open to every signed-in user) is the
 * way for a user without a listing, so `details.next` names it.
 */
function notASeller(): HttpError {
  return forbidden(
    "This function is for sellers: list a project, or set up your payout account with connect-onboarding-link, to become one",
    { next: "connect-onboarding-link" },
  );
}

/**
 * Throws 403 unless `caller` satisfies the function's access rule. The
 * caller's credential is already verified, so every refusal here is 403
 * `forbidden` — a valid credential without the right (401 is only for a
 * missing, malformed, expired or badly signed one). `seller` is a signed-in
 * user for whom `public.is_seller` holds (a listing or a payout account);
 * anyone else is told, in `details.next`, to start payout onboarding. Rules
 * that depend on the input (deal-participant) run after validation, see
 * {@linkcode authorizeDeal}.
 */
export async function authorize(spec: AccessSpec, caller: Caller, ctx: Context): Promise<void> {
  // Locally the anon key starts scheduled and utility functions (README, "Who may call what").
  if (caller.kind === "anon" && ctx.env.values.LOCAL_DEV) {
    if (spec.access === "scheduled" || spec.group === "utilities") return;
  }
  // Admin functions the schedule starts (the admin digests, sponsored
  // activations) take the scheduler's credentials, never the anon key:
  // LOCAL_DEV opens scheduled functions to it, not admin ones.
  if (spec.scheduler && (caller.kind === "service" || caller.kind === "scheduler")) return;
  switch (spec.access) {
    case "webhook":
      return;
    case "public":
      if (caller.kind === "scheduler") {
        throw forbidden("The scheduler token may only start scheduled functions");
      }
      return;
    case "user":
    case "deal-participant":
    case "deal-participant-or-admin":
      requireAccount(caller, "This function is for signed-in users: sign in first");
      return;
    case "seller":
      requireAccount(caller, "This function is for sellers: sign in first");
      if (!(await isSeller(ctx, caller.id))) throw notASeller();
      return;
    case "admin":
      if (caller.kind === "anon" && spec.scheduler) {
        throw forbidden(
          "This function is for admins and the scheduler: start it with the service-role key or SCHEDULER_TOKEN, not the anon key",
        );
      }
      requireAccount(caller, "This function is for admins");
      if (!(await isAdmin(ctx, caller.id))) throw forbidden("This function is for admins");
      return;
    case "system":
      if (caller.kind === "service") return;
      requireAccount(caller, "This function is for the system and admins");
      if (!(await isAdmin(ctx, caller.id))) {
        throw forbidden("This function is for the system and admins");
      }
      return;
    case "scheduled":
      if (caller.kind === "service" || caller.kind === "scheduler") return;
      if (caller.kind === "anon") {
        throw forbidden("The anon key may start scheduled functions only when LOCAL_DEV=true");
      }
      if (caller.anonymous || !(await isAdmin(ctx, caller.id))) {
        throw forbidden("This function is for the scheduler and admins");
      }
      return;
  }
}

/** Narrows to a user with an account (not the anon key, a service key or an anonymous sign-in). */
function requireAccount(caller: Caller, message: string): asserts caller is UserCaller {
  if (caller.kind !== "user") throw forbidden(message);
  if (caller.anonymous) {
    throw forbidden(`${message}; an anonymous session does not qualify`);
  }
}

/**
 * The deal-participant rule: the caller is the buyer or seller of
 * `input.dealId` — or, with `admins`, holds the admin role.
 */
export async function authorizeDeal(
  caller: UserCaller,
  input: unknown,
  ctx: Context,
  admins = false,
): Promise<void> {
  const dealId = (input as { dealId?: unknown } | null)?.dealId;
  if (typeof dealId !== "string") {
    throw invalidInput("Cannot check access: dealId is required");
  }
  const row = await ctx.db.one<{ found: boolean; participant: boolean }>(
    `select exists (select 1 from public.deals where id = $1) as found,
            public.is_deal_participant($1, $2) as participant`,
    [dealId, caller.id],
  );
  if (!row.found) throw notFound(`Deal "${dealId}" does not exist`);
  if (row.participant) return;
  if (!admins) throw forbidden("Only the deal's buyer and seller may do this");
  if (!(await isAdmin(ctx, caller.id))) {
    throw forbidden("Only the deal's buyer, its seller and admins may do this");
  }
}
