/**
 * E-mails about a user's account: the welcome, and the payout
 * verification notices (`account.updated` switching payouts on or off).
 *
 * @module
 */
import type { EmailContent } from "../render.ts";

/** The welcome e-mail of a new user. */
export function welcomeEmail(name: string | null): EmailContent {
  return {
    subject: "Welcome to the marketplace",
    heading: name ? `Welcome, ${name}!` : "Welcome!",
    paragraphs: [
      "Your account is ready. Browse projects for sale, or list your own and reach buyers.",
      "Sellers: connect a payout account from your dashboard before your first sale, so we can pay you out when a deal completes.",
    ],
    action: { label: "Explore listings", url: "/explore" },
    footer: "You receive this e-mail because an account was created with this address.",
  };
}

/** The notice that a seller's payouts were switched on or off by the payment processor. */
export function sellerVerificationNotice(
  payoutsEnabled: boolean,
  due: { currentlyDue: number; pastDue: number; disabledReason: string },
): { title: string; body: string; email: EmailContent } {
  if (payoutsEnabled) {
    const body =
      "Your payout account is verified and payouts are enabled: completed deals are paid out to it.";
    return {
      title: "Payouts enabled",
      body,
      email: {
        subject: "Your payout account is verified",
        heading: "Payouts are enabled",
        paragraphs: [body],
        action: { label: "Open your payout settings", url: "/dashboard/payouts" },
      },
    };
  }
  const reasons: string[] = [];
  if (due.pastDue > 0) reasons.push(`${due.pastDue} requirement(s) are past due`);
  if (due.currentlyDue > 0) reasons.push(`${due.currentlyDue} requirement(s) are due`);
  if (due.disabledReason) reasons.push(`the processor says: ${due.disabledReason}`);
  const body = `Payouts to your account are paused${
    reasons.length ? ` (${reasons.join("; ")})` : ""
  }. Complete the verification to receive payouts again.`;
  return {
    title: "Payouts paused",
    body,
    email: {
      subject: "Action needed: payouts to your account are paused",
      heading: "Payouts are paused",
      paragraphs: [body],
      action: { label: "Complete verification", url: "/dashboard/payouts" },
    },
  };
}
