import assert from "node:assert/strict";
import resubmission from "../../supabase/functions/send-resubmission-notification/handler.ts";
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
  error?: { code: string };
}

sqlTest(
  "send-resubmission-notification: the seller is asked to resubmit, with the reason",
  async () => {
    double.reset();
    const seller = await createUser(db.pool);
    const listing = await createListing(db.pool, seller.id, "rejected");
    const reason = "Revenue figures need proof <b>attached</b>.\nPlease add screenshots.";
    const res = await invoke<Answer>(resubmission, runtime, {
      token: adminToken,
      body: { listingId: listing.id, reason },
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const [mail] = double.sentTo(seller.email);
    assert.match(mail?.text ?? "", /> Revenue figures need proof <b>attached<\/b>\./);
    assert.match(
      mail?.html ?? "",
      /proof &lt;b&gt;attached&lt;\/b&gt;\.<br>Please add screenshots/,
    );
    assert.match(mail?.html ?? "", new RegExp(`/listings/${listing.id}/edit`));
    const [notice] = await notificationsOf(db.pool, seller.id);
    assert.equal(notice?.type, "listing_review");
    assert.equal(notice?.data.reason, reason);
    const approved = await createListing(db.pool, seller.id, "approved");
    const wrong = await invoke(resubmission, runtime, {
      token: adminToken,
      body: { listingId: approved.id, reason },
    });
    assert.equal(wrong.status, 409);
    const empty = await invoke(resubmission, runtime, {
      token: adminToken,
      body: { listingId: listing.id, reason: "  " },
    });
    assert.equal(empty.status, 400);
    const user = await invoke(resubmission, runtime, {
      token: await keys.userToken(seller),
      body: { listingId: listing.id, reason },
    });
    assert.equal(user.status, 403);
    assert.equal(double.sent.length, 1);
  },
);
