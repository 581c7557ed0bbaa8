/**
 * Access rules: who may call a function, enforced by the factory before the
 * handler runs (design §4).
 *
 * @module
 */
import type { Access } from "../../../shared/access.ts";
import type {
  AnonCaller,
  Caller,
  NoCaller,
  SchedulerCaller,
  ServiceCaller,
  UserCaller,
} from "./caller.ts";
import type { Context } from "./context.ts";
import { HttpError } from "./errors.ts";

export type { Access };

/** The caller a handler sees, narrowed by its access rule. */
export type CallerFor<A extends Access> = A extends "webhook" ? NoCaller
  : A extends "user" | "seller" | "deal-participant" | "admin" ? UserCaller
  : A extends "public" ? UserCaller | AnonCaller | ServiceCaller
  : A extends "system" ? UserCaller | ServiceCaller
  : UserCaller | AnonCaller | ServiceCaller | SchedulerCaller;

/** Every access rule, for validating definitions. */
export const ACCESS_RULES: readonly Access[] = [
  "public",
  "user",
  "seller",
  "deal-participant",
  "admin",
  "scheduled",
  "system",
  "webhook",
];

function forbidden(message: string): HttpError {
  return new HttpError(403, "forbidden", message);
}

function signInRequired(): HttpError {
  return new HttpError(401, "unauthorized", "Cannot serve this request: sign in first");
}

/** Whether `userId` holds the admin role (`public.has_role`). */
export async function isAdmin(ctx: Context, userId: string): Promise<boolean> {
  const row = await ctx.db.one<{ admin: boolean }>(
    "select public.has_role($1, 'admin') as admin",
    [userId],
  );
  return row.admin;
}

/**
 * Throws 401/403 unless `caller` satisfies `access`. Rules that depend on the
 * input (deal-participant) run after validation, see {@linkcode authorizeInput}.
 */
export async function authorize(
  access: Exclude<Access, "webhook">,
  caller: Caller,
  ctx: Context,
): Promise<void> {
  switch (access) {
    case "public":
      if (caller.kind === "scheduler") {
        throw forbidden("The scheduler token may only start scheduled functions");
      }
      return;
    case "user":
    case "seller":
    case "deal-participant":
      if (caller.kind === "anon") throw signInRequired();
      if (caller.kind !== "user") throw forbidden("This function is for signed-in users");
      return;
    case "admin":
      if (caller.kind === "anon") throw signInRequired();
      if (caller.kind !== "user" || !(await isAdmin(ctx, caller.id))) {
        throw forbidden("This function is for admins");
      }
      return;
    case "system":
      if (caller.kind === "service") return;
      if (caller.kind === "anon") throw signInRequired();
      if (caller.kind !== "user" || !(await isAdmin(ctx, caller.id))) {
        throw forbidden("This function is for the system and admins");
      }
      return;
    case "scheduled":
      if (caller.kind === "service" || caller.kind === "scheduler") return;
      if (caller.kind === "anon") {
        if (ctx.env.values.LOCAL_DEV) return;
        throw forbidden("The anon key may start scheduled functions only when LOCAL_DEV=true");
      }
      if (!(await isAdmin(ctx, caller.id))) {
        throw forbidden("This function is for the scheduler and admins");
      }
      return;
  }
}

/** The deal-participant rule: the caller is the buyer or seller of `input.dealId`. */
export async function authorizeDeal(
  caller: UserCaller,
  input: unknown,
  ctx: Context,
): Promise<void> {
  const dealId = (input as { dealId?: unknown } | null)?.dealId;
  if (typeof dealId !== "string") {
    throw new HttpError(400, "invalid_input", "Cannot check access: dealId is required");
  }
  const row = await ctx.db.one<{ found: boolean; participant: boolean }>(
    `select exists (select 1 from public.deals where id = $1) as found,
            public.is_deal_participant($1, $2) as participant`,
    [dealId, caller.id],
  );
  if (!row.found) throw new HttpError(404, "not_found", `Deal "${dealId}" does not exist`);
  if (!row.participant) throw forbidden("Only the deal's buyer and seller may do this");
}
