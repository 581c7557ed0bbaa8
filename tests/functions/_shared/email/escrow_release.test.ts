import assert from "node:assert/strict";
import { EMAIL_TYPES, NOTIFICATION_TYPES } from "../../../../shared/notifications.ts";
import { renderEmail } from "../../../../supabase/functions/_shared/email/render.ts";
import * as escrow from "../../../../supabase/functions/_shared/email/templates/escrow_release.ts";
import {
  adminPayoutWaitingNotice,
  adminRepayoutNotice,
  type DealAlertNotice,
  ESCROW_EMAIL_TYPES,
  type EscrowDealFacts,
  holdbackReleasedNotice,
  inspectionStartedNotice,
  partialRefundNotice,
  PAYOUT_SETTINGS_LINK,
  payoutWaitingNotice,
} from "../../../../supabase/functions/_shared/email/templates/escrow_release.ts";
import { formatUtc } from "../../../../supabase/functions/_shared/lib/format.ts";

const SITE = "http://localhost:5173";
const TITLE = `Tom & Jerry <b>SaaS</b> "pro"`;
const DEAL_ID = "b2c3d4e5-f6a7-4b8c-9d0e-1f2a3b4c5d6e";
const DEAL: EscrowDealFacts = { dealId: DEAL_ID, listingTitle: TITLE, currency: "USD" };
const ENDS = new Date("2026-03-21T09:30:00Z");

/**
 * Renders `notice` and asserts what every notice of the module holds: the
 * title as the e-mail's heading, the in-app body said in the e-mail, the
 * listing title escaped in the HTML and as typed in the text, no leftover
 * value, and the button on `link`. Answers the rendered parts.
 */
function rendered(notice: DealAlertNotice, link: string) {
  const mail = renderEmail(notice.email, SITE);
  assert.equal(notice.email.heading, notice.title);
  assert.ok(notice.body.includes(`"${TITLE}"`), notice.body);
  for (const paragraph of notice.email.paragraphs) {
    assert.ok(notice.body.includes(paragraph), `the in-app body says: ${paragraph}`);
  }
  assert.ok(mail.text.includes(TITLE), mail.text);
  assert.ok(mail.html.includes("Tom &amp; Jerry &lt;b&gt;SaaS&lt;/b&gt; &quot;pro&quot;"));
  assert.doesNotMatch(mail.html, /<b>SaaS/);
  for (const part of [notice.body, mail.text, mail.subject]) {
    assert.doesNotMatch(part, /\bundefined\b|\bnull\b|NaN|\$\{/, part);
  }
  assert.equal(notice.email.action?.url, link);
  assert.ok(mail.text.includes(`${SITE}${link}`));
  return mail;
}

Deno.test("escrow notices: each function names its e-mail type, and each type its preference", () => {
  const functions = Object.entries(escrow).filter(([, value]) => typeof value === "function")
    .map(([name]) => name).sort();
  assert.deepEqual(Object.keys(ESCROW_EMAIL_TYPES).sort(), functions);
  assert.deepEqual(
    Object.fromEntries(
      Object.entries(ESCROW_EMAIL_TYPES).map(([fn, type]) => [fn, EMAIL_TYPES[type]]),
    ),
    {
      inspectionStartedNotice: "handover",
      payoutWaitingNotice: "payments",
      adminPayoutWaitingNotice: "admin_alerts",
      holdbackReleasedNotice: "payments",
      partialRefundNotice: "payments",
      adminRepayoutNotice: "admin_alerts",
    },
  );
  assert.equal(NOTIFICATION_TYPES.handover.pushed, true);
  assert.equal(NOTIFICATION_TYPES.payments.pushed, true);
});

Deno.test("inspectionStartedNotice(): the window's end, the two ways out, the automatic release and the holdback", () => {
  const notice = inspectionStartedNotice({
    ...DEAL,
    inspectionEndsAt: ENDS,
    payoutAmount: "855.00",
    holdbackAmount: "100.00",
    holdbackDays: 30,
  });
  assert.equal(notice.title, "Your inspection period has started");
  const until = formatUtc(ENDS);
  for (
    const part of [
      `The handover of "${TITLE}" is complete. Your inspection period runs until ${until}`,
      "accept the delivery (accept_delivery)",
      `open a case (open_deal_case) before ${until}`,
      `the seller's payout of $855.00 is released automatically at ${until}`,
      "$100.00 is held back for 30 days after the release",
    ]
  ) {
    assert.ok(notice.body.includes(part), `${part} in: ${notice.body}`);
  }
  const mail = rendered(notice, `/deals/${DEAL_ID}`);
  assert.equal(mail.subject, `Inspect "${TITLE}" by ${until}`);

  const plain = inspectionStartedNotice({
    ...DEAL,
    inspectionEndsAt: ENDS,
    payoutAmount: "955.00",
    holdbackAmount: null,
    holdbackDays: 0,
  });
  assert.doesNotMatch(plain.body, /held back/);
  rendered(plain, `/deals/${DEAL_ID}`);
});

Deno.test("payoutWaitingNotice(): what the seller finishes, for each reason, on the payout settings", () => {
  const expected = {
    no_account: "you have no payout account yet",
    payouts_disabled: "the payment processor has switched payouts to your account off",
    requirements_past_due: "the payment processor needs more information from you",
  } as const;
  for (const [reason, why] of Object.entries(expected)) {
    const notice = payoutWaitingNotice({
      ...DEAL,
      amount: "1187.50",
      reason: reason as keyof typeof expected,
      disabledReason: reason === "no_account" ? null : "requirements.past_due",
    });
    assert.ok(
      notice.body.startsWith(
        `Your payout of $1,187.50 for "${TITLE}" is ready, but we cannot send it yet: ${why}`,
      ),
      notice.body,
    );
    assert.equal(
      notice.body.includes("(the processor says: requirements past due)"),
      reason !== "no_account",
    );
    assert.match(notice.body, /payout settings/);
    const mail = rendered(notice, PAYOUT_SETTINGS_LINK);
    assert.equal(mail.subject, "Action needed: finish your payout account to receive $1,187.50");
  }
  assert.equal(PAYOUT_SETTINGS_LINK, "/dashboard/payouts", "the seller verification notices' page");
});

Deno.test("adminPayoutWaitingNotice(): since when, why, on the deal's admin page", () => {
  const since = new Date("2026-03-11T09:30:00Z");
  const notice = adminPayoutWaitingNotice({
    ...DEAL,
    amount: "955.00",
    reason: "requirements_past_due",
    since,
  });
  assert.ok(notice.body.includes(`has been ready since ${formatUtc(since)}`), notice.body);
  assert.ok(notice.body.includes("requirements past due at the payment processor"), notice.body);
  const mail = rendered(notice, `/admin/deals/${DEAL_ID}`);
  assert.ok(mail.text.includes("- Reason: requirements_past_due"));
  const unknown = adminPayoutWaitingNotice({
    ...DEAL,
    amount: "955.00",
    reason: "odd_case",
    since,
  });
  assert.ok(unknown.body.includes("cannot be sent: odd case."), unknown.body);
});

Deno.test("holdbackReleasedNotice() and partialRefundNotice(): each side reads its own", () => {
  const seller = holdbackReleasedNotice({
    ...DEAL,
    amount: "100.00",
    transferId: "tr_123",
    side: "seller",
  });
  assert.equal(seller.title, "Holdback released");
  assert.ok(seller.body.includes("The holdback of $100.00"), seller.body);
  assert.ok(rendered(seller, `/deals/${DEAL_ID}`).text.includes("- Transfer tr_123"));
  const buyer = holdbackReleasedNotice({
    ...DEAL,
    amount: "100.00",
    transferId: "tr_123",
    side: "buyer",
  });
  assert.ok(buyer.body.includes("the held-back $100.00 was paid to the seller"), buyer.body);
  assert.ok(!rendered(buyer, `/deals/${DEAL_ID}`).text.includes("tr_123"));

  const refunded = partialRefundNotice({
    ...DEAL,
    amount: "250.00",
    refundId: "re_9",
    side: "buyer",
  });
  assert.ok(refunded.body.startsWith(`We refunded $250.00 of your payment for "${TITLE}"`));
  assert.ok(rendered(refunded, `/deals/${DEAL_ID}`).text.includes("- Refund re_9"));
  const toSeller = partialRefundNotice({
    ...DEAL,
    amount: "250.00",
    refundId: "re_9",
    side: "seller",
  });
  assert.ok(toSeller.body.startsWith(`$250.00 of the buyer's payment for "${TITLE}" was refunded`));
  rendered(toSeller, `/deals/${DEAL_ID}`);
});

Deno.test("adminRepayoutNotice(): the chargeback won and the amount paid again", () => {
  const notice = adminRepayoutNotice({ ...DEAL, amount: "1187.50", disputeId: "dp_42" });
  assert.ok(notice.body.includes("the seller is being paid again: $1,187.50"), notice.body);
  const mail = rendered(notice, `/admin/deals/${DEAL_ID}`);
  assert.ok(mail.text.includes("- Dispute dp_42"));
  assert.equal(mail.subject, `Chargeback won: paying the seller of "${TITLE}" again`);
});
