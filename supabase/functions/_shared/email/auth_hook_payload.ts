/**
 * The body of a Send Email Hook delivery, as zod parses it: `{ user,
 * email_data }`, unknown fields kept. A module of its own so that zod loads
 * with the first delivery whose signature checked out, not at
 * `auth-email-webhook`'s cold start (`auth_hook.ts`; docs/benchmarks.md,
 * `cold_start`).
 *
 * @module
 */
import { z } from "zod";
import { AUTH_EMAIL_ACTIONS } from "../../../../shared/notifications.ts";

/**
 * An address as `email_logs` accepts it and the e-mail provider takes it
 * (`local@domain.tld`). Auth has validated it already, by rules of its own,
 * so this stays loose; but an address the provider would refuse is refused
 * here, as bad input (400), not reported as the provider failing (502)
 * after a row was written.
 */
const HookAddress = z.string().trim().max(320).regex(/^[^\s@<>]+@[^\s@<>.]+(?:\.[^\s@<>.]+)+$/, {
  message: "Expected an e-mail address (local@domain.tld)",
});

/** A string field Auth sends empty when it does not apply: empty becomes undefined. */
const optionalField = z.string().optional().transform((value) =>
  value === undefined || value.trim() === "" ? undefined : value.trim()
);

/** The hook's body (unknown fields are kept). */
export const AuthHookPayload = z.looseObject({
  user: z.looseObject({
    id: z.string().min(1),
    email: HookAddress,
    /** `email_change`: the address the user is moving to. */
    new_email: z.union([HookAddress, z.literal("")]).optional(),
    user_metadata: z.record(z.string(), z.unknown()).nullable().optional(),
  }),
  email_data: z.looseObject({
    token: optionalField,
    token_hash: optionalField,
    redirect_to: optionalField,
    email_action_type: z.enum(AUTH_EMAIL_ACTIONS),
    site_url: optionalField,
    token_new: optionalField,
    token_hash_new: optionalField,
  }),
});

/** A parsed hook body. */
export type AuthHookPayload = z.infer<typeof AuthHookPayload>;
