/**
 * Who is calling: the identity the factory derives from the bearer credential.
 *
 * @module
 */

/** A signed-in user (an `authenticated` JWT). */
export interface UserCaller {
  kind: "user";
  /** The user's id (`sub`). */
  id: string;
  /** The user's e-mail claim, when the token has one. */
  email: string | null;
  /** An anonymous sign-in (`is_anonymous`): a session without an account. */
  anonymous: boolean;
  /** All verified claims. */
  claims: Record<string, unknown>;
}

/** The project's anon (public) key. */
export interface AnonCaller {
  kind: "anon";
}

/** The project's service-role key. */
export interface ServiceCaller {
  kind: "service";
}

/** The dedicated scheduler token, which may start scheduled jobs and nothing else. */
export interface SchedulerCaller {
  kind: "scheduler";
}

/** No credential (webhooks, whose signature is checked by the handler). */
export interface NoCaller {
  kind: "none";
}

/** Any verified caller. */
export type Caller = UserCaller | AnonCaller | ServiceCaller | SchedulerCaller;
