/**
 * Who calls the Storage API: the bearer credential verified by the project's
 * {@linkcode TokenVerifier}, refused as hosted Storage refuses it (400
 * `InvalidRequest` without an Authorization header on authenticated routes,
 * 403 `AccessDenied` for an invalid token). The scheduler token is not a
 * Supabase JWT and opens nothing here.
 *
 * @module
 */
import type { TokenVerifier } from "../../supabase/functions/_shared/platform/tokens.ts";
import { HttpError } from "../../supabase/functions/_shared/platform/errors.ts";
import { accessDenied, invalidRequest } from "./errors.ts";
import type { StorageCaller } from "./objects.ts";

/** The caller of `req`, on routes that require a credential. */
export async function requireCaller(tokens: TokenVerifier, req: Request): Promise<StorageCaller> {
  return (await callerOf(tokens, req, false))!;
}

/**
 * The caller of `req` on routes where a credential is optional: `null` (an
 * unauthenticated request) when it is missing or invalid.
 */
export function optionalCaller(tokens: TokenVerifier, req: Request): Promise<StorageCaller | null> {
  return callerOf(tokens, req, true);
}

async function callerOf(
  tokens: TokenVerifier,
  req: Request,
  optional: boolean,
): Promise<StorageCaller | null> {
  const header = req.headers.get("authorization");
  if (!header) {
    if (optional) return null;
    throw invalidRequest("headers must have required property 'authorization'");
  }
  let caller;
  try {
    caller = await tokens.verify(header);
  } catch (error) {
    if (optional) return null;
    if (error instanceof HttpError && error.status === 401) throw accessDenied(error.message);
    throw error;
  }
  if (caller.kind === "scheduler") {
    if (optional) return null;
    throw accessDenied("Access denied: the scheduler token cannot use Storage");
  }
  return caller;
}

/** The owner recorded on what `caller` uploads: a user's id, nobody for the other roles. */
export function ownerOf(caller: StorageCaller): string | undefined {
  return caller.kind === "user" ? caller.id : undefined;
}
