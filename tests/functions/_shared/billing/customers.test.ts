import assert from "node:assert/strict";
import {
  ensureCustomer,
  findCustomer,
  linkCustomer,
} from "../../../../supabase/functions/_shared/billing/customers.ts";
import { Context } from "../../../../supabase/functions/_shared/platform/context.ts";
import { HttpError } from "../../../../supabase/functions/_shared/platform/errors.ts";
import { billingSetup, subscriptionOf } from "../../../support/billing.ts";
import { sqlTest } from "../../../support/db.ts";
import { createUser } from "../../../support/sql.ts";

const { db, double, runtime } = await billingSetup();
const ctx = () => new Context(runtime, crypto.randomUUID(), runtime.log);

sqlTest(
  "ensureCustomer() creates one customer per user with the key customer:<userId>, even concurrently",
  async () => {
    const user = await createUser(db.pool);
    const before = double.createdCount("customer");
    const results = await Promise.all(Array.from({ length: 5 }, () => ensureCustomer(ctx(), user)));
    assert.equal(new Set(results.map((r) => r.customer.id)).size, 1);
    assert.equal(double.createdCount("customer"), before + 1);
    const keys = double.requestsTo("POST", "/v1/customers").map((r) =>
      r.headers.get("idempotency-key")
    );
    assert.ok(keys.every((k) => k === `customer:${user.id}`));
    assert.equal(
      (await subscriptionOf(db.pool, user.id))?.payproc_customer_id,
      results[0]!.customer.id,
    );
    assert.equal((await ensureCustomer(ctx(), user)).via, "stored");
  },
);

sqlTest(
  "findCustomer() prefers our metadata; by e-mail only when asked, for a confirmed address, naming no other user",
  async () => {
    const unconfirmed = await createUser(db.pool);
    const byAddress = double.addCustomer({ email: unconfirmed.email });
    assert.equal(await findCustomer(ctx(), unconfirmed), null, "user calls never match by e-mail");
    assert.equal(
      await findCustomer(ctx(), unconfirmed, { byEmail: true }),
      null,
      "an unconfirmed address proves nothing",
    );
    const confirmed = await createUser(db.pool, { confirmed: true });
    const theirs = double.addCustomer({ email: confirmed.email });
    assert.equal(await findCustomer(ctx(), confirmed), null);
    const found = await findCustomer(ctx(), confirmed, { byEmail: true });
    assert.deepEqual([found?.customer.id, found?.via], [theirs.id, "email"]);
    assert.equal(found?.customer.metadata?.user_id, confirmed.id, "tagged with our user id");
    void byAddress;

    const user = await createUser(db.pool, { confirmed: true });
    const other = await createUser(db.pool);
    double.addCustomer({ email: user.email, metadata: { user_id: other.id } });
    const heldElsewhere = double.addCustomer({ email: user.email });
    await linkCustomer(runtime.database, other.id, heldElsewhere.id);
    assert.equal(await findCustomer(ctx(), user, { byEmail: true }), null);

    const tagged = double.addCustomer({
      email: "different@example.test",
      metadata: { user_id: user.id },
    });
    const byMetadata = await findCustomer(ctx(), user);
    assert.equal(byMetadata?.customer.id, tagged.id);
    assert.equal(byMetadata?.via, "metadata");
  },
);

sqlTest("linkCustomer() answers 409 when another user's row holds the customer", async () => {
  const a = await createUser(db.pool);
  const b = await createUser(db.pool);
  const customer = double.addCustomer();
  assert.equal(await linkCustomer(runtime.database, a.id, customer.id), true);
  assert.equal(await linkCustomer(runtime.database, a.id, customer.id), false);
  await assert.rejects(
    linkCustomer(runtime.database, b.id, customer.id),
    (e: unknown) => e instanceof HttpError && e.status === 409,
  );
  assert.equal(await subscriptionOf(db.pool, b.id), null);
});
