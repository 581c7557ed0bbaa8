import assert from "node:assert/strict";
import handler from "../../supabase/functions/connect-dashboard-link/handler.ts";
import onboarding from "../../supabase/functions/connect-onboarding-link/handler.ts";
import { createListing } from "../db/core_fixtures.ts";
import { billingSetup } from "../support/billing.ts";
import { sqlTest } from "../support/db.ts";
import { assertRateLimited } from "../support/rate_limits.ts";
import { invoke } from "../support/runtime.ts";
import { createUser, type TestUser } from "../support/sql.ts";

const { db, double, runtime, keys } = await billingSetup();

interface Answer {
  url?: string;
  error?: { code: string; message: string; details?: Record<string, unknown> };
}

const dashboard = async (user: TestUser) =>
  await invoke<Answer>(handler, runtime, { token: await keys.userToken(user) });

/** A user who started onboarding through connect-onboarding-link; their account id. */
async function onboardedSeller(): Promise<{ user: TestUser; accountId: string }> {
  const user = await createUser(db.pool);
  const res = await invoke(onboarding, runtime, { token: await keys.userToken(user) });
  assert.equal(res.status, 200);
  const account = double.all("account").find((a) => a.metadata?.user_id === user.id);
  return { user, accountId: account!.id };
}

async function accountRow(userId: string) {
  const { rows } = await db.pool.query(
    "select * from public.connect_accounts where user_id = $1",
    [userId],
  );
  return rows[0];
}

sqlTest(
  "connect-dashboard-link: an onboarded seller gets a login link; the account is re-read and mirrored first",
  async () => {
    const { user, accountId } = await onboardedSeller();
    double.completeOnboarding(accountId);
    const before = double.requestsTo("GET", `/v1/accounts/${accountId}`).length;
    const res = await dashboard(user);
    assert.equal(res.status, 200);
    assert.equal(res.body.url, double.store.loginLinks.at(-1)?.url);
    assert.ok(res.body.url?.includes(`/express/${accountId}/`));
    assert.equal(double.requestsTo("GET", `/v1/accounts/${accountId}`).length, before + 1);
    const row = await accountRow(user.id);
    assert.equal(row.details_submitted, true);
    assert.equal(row.kyc_status, "verified");
    assert.equal(row.payouts_enabled, true);
  },
);

sqlTest(
  "connect-dashboard-link: before onboarding is complete → 409 with details.next; no login link",
  async () => {
    const { user, accountId } = await onboardedSeller();
    const logins = double.createdCount("login_link");
    const res = await dashboard(user);
    assert.equal(res.status, 409);
    assert.equal(res.body.error?.code, "conflict");
    assert.equal(res.body.error?.details?.next, "connect-onboarding-link");
    assert.equal(res.body.error?.details?.accountId, accountId);
    assert.equal(double.createdCount("login_link"), logins);
    assert.equal(double.requestsTo("POST", `/v1/accounts/${accountId}/login_links`).length, 0);
  },
);

sqlTest(
  "connect-dashboard-link: a seller by listing without a payout account → 409 with details.next; nothing created",
  async () => {
    const user = await createUser(db.pool);
    await createListing(db.pool, user.id, "draft");
    const accounts = double.createdCount("account");
    const logins = double.createdCount("login_link");
    const res = await dashboard(user);
    assert.equal(res.status, 409);
    assert.equal(res.body.error?.code, "conflict");
    assert.deepEqual(res.body.error?.details, {
      next: "connect-onboarding-link",
      reason: "no_payout_account",
    });
    assert.equal(double.createdCount("account"), accounts);
    assert.equal(double.createdCount("login_link"), logins);
    assert.equal(await accountRow(user.id), undefined);
  },
);

sqlTest(
  "connect-dashboard-link: no token 401, anon key 403, a signed-in non-seller 403 with details.next; nothing asked of the processor",
  async () => {
    const requests = double.requests.length;
    const none = await invoke<Answer>(handler, runtime);
    assert.deepEqual([none.status, none.body.error?.code], [401, "unauthorized"]);
    const anon = await invoke<Answer>(handler, runtime, { token: keys.anonKey });
    assert.deepEqual([anon.status, anon.body.error?.code], [403, "forbidden"]);
    const service = await invoke<Answer>(handler, runtime, { token: keys.serviceKey });
    assert.equal(service.status, 403);
    const stranger = await createUser(db.pool);
    const refused = await dashboard(stranger);
    assert.deepEqual([refused.status, refused.body.error?.code], [403, "forbidden"]);
    assert.deepEqual(refused.body.error?.details, { next: "connect-onboarding-link" });
    assert.equal(double.requests.length, requests);
    assert.equal(await accountRow(stranger.id), undefined);
  },
);

sqlTest(
  "connect-dashboard-link: processor down → 503 and no link; a vanished account → 409 naming it",
  async () => {
    const { user, accountId } = await onboardedSeller();
    double.completeOnboarding(accountId);
    const logins = double.createdCount("login_link");
    double.failNext({ method: "GET", path: `/v1/accounts/${accountId}`, status: 503, times: 2 });
    const down = await dashboard(user);
    assert.deepEqual([down.status, down.body.error?.code], [503, "upstream_unavailable"]);
    assert.equal(double.createdCount("login_link"), logins);
    assert.equal((await accountRow(user.id)).details_submitted, false, "nothing written");

    double.store.remove("account", accountId);
    const gone = await dashboard(user);
    assert.deepEqual([gone.status, gone.body.error?.code], [409, "conflict"]);
    assert.deepEqual(gone.body.error?.details, { accountId });
    assert.equal(double.createdCount("login_link"), logins);
  },
);

sqlTest(
  "connect-dashboard-link: at most 10 calls a minute per seller; the 11th answers 429 before any processor request",
  async () => {
    const { user, accountId } = await onboardedSeller();
    double.completeOnboarding(accountId);
    await assertRateLimited(
      { limit: 10, windowSeconds: 60 },
      () => dashboard(user),
      () => double.requests.length,
    );
    const other = await onboardedSeller();
    double.completeOnboarding(other.accountId);
    assert.equal((await dashboard(other.user)).status, 200);
  },
);
