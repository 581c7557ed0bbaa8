import assert from "node:assert/strict";
import handler from "../../supabase/functions/refresh-kyc-status/handler.ts";
import { FUNCTIONS } from "../../shared/functions.ts";
import { createListing } from "../db/core_fixtures.ts";
import { billingSetup } from "../support/billing.ts";
import { sqlTest } from "../support/db.ts";
import { assertRateLimited } from "../support/rate_limits.ts";
import { EmailDouble } from "../support/email_double.ts";
import { emailEnv, notificationsOf } from "../support/notifications.ts";
import { invoke } from "../support/runtime.ts";
import { createUser, type TestUser } from "../support/sql.ts";

const mail = new EmailDouble();
const { db, double, runtime, keys } = await billingSetup(emailEnv(mail));

interface Answer {
  summary?: {
    currently_due_count: number;
    past_due_count: number;
    disabled_reason: string;
    payouts_enabled: boolean;
  };
  error?: { code: string; message: string; details?: Record<string, unknown> };
}

const refresh = async (user: TestUser) =>
  await invoke<Answer>(handler, runtime, { token: await keys.userToken(user) });

/** A seller whose account the processor has and whose row holds only its id (as onboarding left it). */
async function sellerWithAccount(): Promise<{ user: TestUser; accountId: string }> {
  const user = await createUser(db.pool);
  const account = double.addAccount({ metadata: { user_id: user.id } });
  await db.pool.query(
    "insert into public.connect_accounts (user_id, payproc_account_id) values ($1, $2)",
    [user.id, account.id],
  );
  return { user, accountId: account.id };
}

async function rowsOf(userId: string) {
  const account = await db.pool.query(
    `select kyc_status, details_submitted, payouts_enabled, currently_due_count, past_due_count,
            disabled_reason, payproc_synced_at
     from public.connect_accounts where user_id = $1`,
    [userId],
  );
  const profile = await db.pool.query(
    `select payproc_account_id, kyc_status, kyc_currently_due_count, kyc_past_due_count,
            kyc_disabled_reason, payouts_enabled
     from public.profiles where id = $1`,
    [userId],
  );
  return { account: account.rows[0], profile: profile.rows[0] };
}

sqlTest(
  "refresh-kyc-status: re-reads the account, writes connect_accounts and profiles, answers the summary",
  async () => {
    const { user, accountId } = await sellerWithAccount();
    double.setAccount(accountId, {
      details_submitted: true,
      requirements: {
        currently_due: ["external_account", "individual.id_number"],
        past_due: ["external_account"],
        disabled_reason: "requirements.past_due",
      },
    });
    const res = await refresh(user);
    assert.equal(res.status, 200);
    assert.ok(FUNCTIONS["refresh-kyc-status"].output.safeParse(res.body).success);
    assert.deepEqual(res.body, {
      summary: {
        currently_due_count: 2,
        past_due_count: 1,
        disabled_reason: "requirements.past_due",
        payouts_enabled: false,
      },
    });
    const { account, profile } = await rowsOf(user.id);
    assert.equal(account.kyc_status, "restricted");
    assert.equal(account.details_submitted, true);
    assert.equal(account.currently_due_count, 2);
    assert.equal(account.past_due_count, 1);
    assert.equal(account.disabled_reason, "requirements.past_due");
    assert.ok(account.payproc_synced_at instanceof Date);
    assert.deepEqual(profile, {
      payproc_account_id: accountId,
      kyc_status: "restricted",
      kyc_currently_due_count: 2,
      kyc_past_due_count: 1,
      kyc_disabled_reason: "requirements.past_due",
      payouts_enabled: false,
    });
  },
);

sqlTest(
  "refresh-kyc-status: verified → empty disabled_reason, payouts on, one seller-verification notice however often it runs",
  async () => {
    mail.reset();
    const { user, accountId } = await sellerWithAccount();
    double.completeOnboarding(accountId);
    const answers = [await refresh(user), await refresh(user)];
    for (const res of answers) {
      assert.deepEqual(res.body, {
        summary: {
          currently_due_count: 0,
          past_due_count: 0,
          disabled_reason: "",
          payouts_enabled: true,
        },
      });
    }
    const { account, profile } = await rowsOf(user.id);
    assert.equal(account.kyc_status, "verified");
    assert.equal(profile.payouts_enabled, true);
    const notices = await notificationsOf(db.pool, user.id);
    assert.deepEqual(notices.map((n) => n.title), ["Payouts enabled"]);
    assert.equal(mail.sentTo(user.email).length, 1);
  },
);

sqlTest(
  "refresh-kyc-status: a seller by listing without a payout account → 409 with details.next; nothing written",
  async () => {
    const user = await createUser(db.pool);
    await createListing(db.pool, user.id, "approved");
    const requests = double.requests.length;
    const res = await refresh(user);
    assert.equal(res.status, 409);
    assert.equal(res.body.error?.code, "conflict");
    assert.deepEqual(res.body.error?.details, {
      next: "connect-onboarding-link",
      reason: "no_payout_account",
    });
    assert.equal(double.requests.length, requests);
    assert.equal((await rowsOf(user.id)).account, undefined);
  },
);

sqlTest(
  "refresh-kyc-status: no token 401, anon key 403, a signed-in non-seller 403 with details.next",
  async () => {
    const none = await invoke<Answer>(handler, runtime);
    assert.deepEqual([none.status, none.body.error?.code], [401, "unauthorized"]);
    const anon = await invoke<Answer>(handler, runtime, { token: keys.anonKey });
    assert.deepEqual([anon.status, anon.body.error?.code], [403, "forbidden"]);
    const stranger = await createUser(db.pool);
    const requests = double.requests.length;
    const refused = await refresh(stranger);
    assert.deepEqual([refused.status, refused.body.error?.code], [403, "forbidden"]);
    assert.deepEqual(refused.body.error?.details, { next: "connect-onboarding-link" });
    assert.match(refused.body.error!.message, /connect-onboarding-link/);
    assert.equal(double.requests.length, requests);
  },
);

sqlTest(
  "refresh-kyc-status: processor down → 503 and the rows unchanged; a vanished account → 409 naming it",
  async () => {
    const { user, accountId } = await sellerWithAccount();
    double.completeOnboarding(accountId);
    const before = await rowsOf(user.id);
    double.failNext({ method: "GET", path: `/v1/accounts/${accountId}`, status: 500, times: 2 });
    const down = await refresh(user);
    assert.deepEqual([down.status, down.body.error?.code], [503, "upstream_unavailable"]);
    assert.deepEqual(await rowsOf(user.id), before);

    double.store.remove("account", accountId);
    const gone = await refresh(user);
    assert.deepEqual([gone.status, gone.body.error?.code], [409, "conflict"]);
    assert.deepEqual(gone.body.error?.details, { accountId });
    assert.deepEqual(await rowsOf(user.id), before);
  },
);

sqlTest(
  "refresh-kyc-status: at most 20 calls a minute per seller; the 21st answers 429 before any processor request",
  async () => {
    const { user } = await sellerWithAccount();
    await assertRateLimited(
      { limit: 20, windowSeconds: 60 },
      () => refresh(user),
      () => double.requests.length,
    );
    const other = await sellerWithAccount();
    assert.equal((await refresh(other.user)).status, 200);
  },
);
