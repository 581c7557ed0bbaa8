import assert from "node:assert/strict";
import approval from "../../supabase/functions/send-listing-approval-notification/handler.ts";
import { createListing } from "../db/core_fixtures.ts";
import { sqlTest } from "../support/db.ts";
import { notificationsOf, notificationsSetup } from "../support/notifications.ts";
import { invoke } from "../support/runtime.ts";
import { createUser } from "../support/sql.ts";

const { db, double, runtime, keys } = await notificationsSetup();
const admin = await createUser(db.pool, { admin: true });
const adminToken = await keys.userToken(admin);

interface Answer {
  results: Array<{ userId: string; inApp: string; email: { status: string } | null }>;
  error?: { code: string; details?: { reviewStatus?: string } };
}

sqlTest(
  "send-listing-approval-notification: the seller learns the listing is live, once per approval",
  async () => {
    double.reset();
    const seller = await createUser(db.pool);
    const listing = await createListing(db.pool, seller.id, "approved");
    await db.pool.query("update public.listings set title = $2 where id = $1", [
      listing.id,
      `<script>alert(1)</script> Shop`,
    ]);
    const res = await invoke<Answer>(approval, runtime, {
      token: adminToken,
      body: { listingId: listing.id },
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.results[0]?.userId, seller.id);
    assert.equal(res.body.results[0]?.email?.status, "sent");
    const [mail] = double.sentTo(seller.email);
    assert.ok(mail?.html && !mail.html.includes("<script>"), "the title arrives escaped");
    assert.match(mail.html, /&lt;script&gt;alert\(1\)&lt;\/script&gt; Shop/);
    assert.match(mail.html, new RegExp(`/listings/${listing.id}`));
    const again = await invoke<Answer>(approval, runtime, {
      token: adminToken,
      body: { listingId: listing.id },
    });
    assert.equal(again.body.results[0]?.inApp, "duplicate");
    assert.equal(double.sentTo(seller.email).length, 1);
    assert.equal((await notificationsOf(db.pool, seller.id)).length, 1);
  },
);

sqlTest(
  "send-listing-approval-notification: 409 unless approved, 404 unknown, 403 for non-admins",
  async () => {
    double.reset();
    const seller = await createUser(db.pool);
    const pending = await createListing(db.pool, seller.id, "pending_review");
    const res = await invoke<Answer>(approval, runtime, {
      token: adminToken,
      body: { listingId: pending.id },
    });
    assert.equal(res.status, 409);
    assert.equal(res.body.error?.details?.reviewStatus, "pending_review");
    const missing = await invoke(approval, runtime, {
      token: adminToken,
      body: { listingId: crypto.randomUUID() },
    });
    assert.equal(missing.status, 404);
    const bySeller = await invoke(approval, runtime, {
      token: await keys.userToken(seller),
      body: { listingId: pending.id },
    });
    assert.equal(bySeller.status, 403);
    const byService = await invoke(approval, runtime, {
      token: keys.serviceKey,
      body: { listingId: pending.id },
    });
    assert.equal(byService.status, 403);
    assert.equal(double.sent.length, 0);
    assert.equal((await notificationsOf(db.pool, seller.id)).length, 0);
  },
);
