/**
 * Who may call a function. Enforced by the server's function factory before
 * any handler runs.
 *
 * - `public`: any valid project key (anon key, a user's token, the service role)
 * - `user`: a signed-in user
 * - `seller`: a signed-in user who is a seller — has a listing or a payout
 *   account (`public.is_seller`) — acting on their own listings and payout
 *   account; anyone else gets 403 `forbidden` with
 *   `details.next = "connect-onboarding-link"` (starting payout onboarding,
 *   open to every signed-in user, is how one becomes a seller)
 * - `deal-participant`: the buyer or seller of the `dealId` in the body
 * - `deal-participant-or-admin`: the buyer or seller of the `dealId` in the
 *   body, or an admin (reading a deal's payment, cancelling a deal)
 * - `admin`: a signed-in user holding the admin role; a function whose
 *   catalog entry has `scheduler: true` may also be started by the scheduler
 *   (the service-role key or `SCHEDULER_TOKEN`), never by the anon key
 * - `scheduled`: the service role, the scheduler token, an admin, or the anon
 *   key when the server runs with `LOCAL_DEV=true`
 * - `system`: the service role or an admin ("system-controlled use")
 * - `webhook`: no token; the payload's signature is the authentication
 *
 * @module
 */

/** An access rule. */
export type Access =
  | "public"
  | "user"
  | "seller"
  | "deal-participant"
  | "deal-participant-or-admin"
  | "admin"
  | "scheduled"
  | "system"
  | "webhook";
