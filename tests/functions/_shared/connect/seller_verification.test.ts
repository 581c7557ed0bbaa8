import assert from "node:assert/strict";
import { billingSetup, CONNECT_WEBHOOK_SECRET, deliver } from "../../../support/billing.ts";
import { sqlTest } from "../../../support/db.ts";
import { EmailDouble } from "../../../support/email_double.ts";
import { emailEnv, emailLogs, notificationsOf } from "../../../support/notifications.ts";
import { createUser } from "../../../support/sql.ts";

const mail = new EmailDouble();
const setup = await billingSetup(emailEnv(mail));
const { db, double } = setup;

const accountUpdated = (accountId: string) =>
  deliver(
    setup,
    double.event("account.updated", double.get("account", accountId)!, { account: accountId }),
    { secret: CONNECT_WEBHOOK_SECRET },
  );

sqlTest(
  "seller verification: payouts switched on, then off → one e-mail and one in-app notice per change; replays send nothing",
  async () => {
    mail.reset();
    const seller = await createUser(db.pool);
    const account = double.addAccount({ metadata: { user_id: seller.id } });
    assert.equal((await accountUpdated(account.id)).status, 200);
    assert.equal(mail.sent.length, 0, "a new account without payouts is no change");
    assert.equal((await notificationsOf(db.pool, seller.id)).length, 0);

    double.completeOnboarding(account.id);
    const enabledEvent = double.event("account.updated", double.get("account", account.id)!, {
      account: account.id,
    });
    const deliveries = await Promise.all(
      Array.from(
        { length: 5 },
        () => deliver(setup, enabledEvent, { secret: CONNECT_WEBHOOK_SECRET }),
      ),
    );
    assert.ok(deliveries.every((d) => d.status === 200));
    // A different event about the same state (the processor sends several).
    assert.equal((await accountUpdated(account.id)).status, 200);
    let notices = await notificationsOf(db.pool, seller.id);
    assert.equal(notices.length, 1);
    assert.equal(notices[0]!.title, "Payouts enabled");
    assert.equal(notices[0]!.data.payoutsEnabled, true);
    assert.equal(mail.sentTo(seller.email).length, 1);
    assert.equal(mail.sentTo(seller.email)[0]!.subject, "Your payout account is verified");

    double.setAccount(account.id, {
      payouts_enabled: false,
      requirements: { past_due: ["external_account"], disabled_reason: "requirements.past_due" },
    });
    await accountUpdated(account.id);
    await accountUpdated(account.id);
    notices = await notificationsOf(db.pool, seller.id);
    assert.equal(notices.length, 2);
    assert.equal(notices[1]!.title, "Payouts paused");
    assert.match(notices[1]!.body, /1 requirement\(s\) are past due/);
    const logs = (await emailLogs(db.pool, "seller_verification")).filter((r) =>
      r.user_id === seller.id
    );
    assert.deepEqual(logs.map((r) => r.send_status), ["sent", "sent"]);
    assert.equal(mail.sentTo(seller.email).length, 2);
  },
);

sqlTest(
  "seller verification: an e-mail provider outage does not fail the webhook; the row waits for the retry",
  async () => {
    mail.reset();
    const seller = await createUser(db.pool);
    const account = double.addAccount({ metadata: { user_id: seller.id } });
    await accountUpdated(account.id);
    double.completeOnboarding(account.id);
    mail.failNext({ path: "/emails", status: 503 });
    const res = await accountUpdated(account.id);
    assert.equal(res.status, 200);
    const [log] = (await emailLogs(db.pool, "seller_verification")).filter((r) =>
      r.user_id === seller.id
    );
    assert.equal(log?.send_status, "failed");
    assert.ok(log?.next_attempt_at);
    assert.equal((await notificationsOf(db.pool, seller.id)).length, 1);
  },
);
