/**
 * Signed-in writes (20261126000200_signed_in_writes.sql): an anonymous
 * sign-in (role authenticated, a sub, `is_anonymous: true`) writes nothing.
 * Every write policy for authenticated and every client-callable RPC that
 * writes goes through is_signed_in_user() / assert_signed_in(); the checks
 * here read the catalog at test time, so a new policy or RPC is covered
 * without touching this file.
 */
import assert from "node:assert/strict";
import type pg from "pg";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { asRole, createUser, type SqlIdentity, type TestUser } from "../support/sql.ts";
import { createListing } from "./core_fixtures.ts";

const db = await createTestDatabase();

const seller = await createUser(db.pool);
const buyer = await createUser(db.pool);
const admin = await createUser(db.pool, { admin: true });
const onSale = await createListing(db.pool, seller.id, "approved");
const draft = await createListing(db.pool, seller.id, "draft");

/** `user` signed in with an account. */
function signedIn(user: TestUser): SqlIdentity {
  return { role: "authenticated", userId: user.id };
}

/** An anonymous sign-in that happens to carry `user`'s id. */
function anonymousAs(user: TestUser): SqlIdentity {
  return { role: "authenticated", userId: user.id, anonymous: true };
}

/** The refusal assert_signed_in() raises for `action`. */
function refusal(action: string): string {
  return `Cannot ${action}: an anonymous session cannot change anything; sign in with an account`;
}

interface Outcome {
  rows?: number;
  code?: string;
  message?: string;
}

/** Runs `sql` in `client`'s transaction behind a savepoint; answers rows or the error. */
async function attempt(
  client: pg.PoolClient,
  sql: string,
  params: unknown[] = [],
): Promise<Outcome> {
  await client.query("savepoint attempt");
  try {
    const result = await client.query(sql, params);
    return { rows: result.rowCount ?? 0 };
  } catch (error) {
    const { code, message } = error as { code?: string; message?: string };
    return { code, message };
  } finally {
    await client.query("rollback to savepoint attempt");
  }
}

// -----------------------------------------------------------------------------
// Policies
// -----------------------------------------------------------------------------

/**
 * Write policies for authenticated that an anonymous session may pass, each
 * with its reason ("table: policy name" as pg_policies spells it).
 */
const POLICY_EXCEPTIONS: Record<string, string> = {
  "contact_messages: Anyone can send a contact message":
    "the contact form is open to visitors (to anon, authenticated), and an anonymous session is a visitor",
};

sqlTest("every write policy for authenticated requires is_signed_in_user()", async () => {
  const { rows } = await db.pool.query<{
    tablename: string;
    policyname: string;
    cmd: string;
    qual: string | null;
    with_check: string | null;
  }>(
    `select tablename, policyname, cmd, qual, with_check from pg_policies
     where schemaname = 'public' and cmd in ('INSERT', 'UPDATE', 'DELETE', 'ALL')
       and roles && array['authenticated', 'public']::name[]
     order by tablename, policyname`,
  );
  const checked: string[] = [];
  const missing: string[] = [];
  for (const row of rows) {
    const key = `${row.tablename}: ${row.policyname}`;
    if (key in POLICY_EXCEPTIONS) continue;
    checked.push(key);
    const expressions = [row.qual, row.with_check].filter((e): e is string => e !== null);
    if (expressions.length === 0 || !expressions.every((e) => e.includes("is_signed_in_user()"))) {
      missing.push(`${key} (${row.cmd})`);
    }
  }
  assert.deepEqual(missing, [], "policies that admit anonymous sessions");
  const all = rows.map((r) => `${r.tablename}: ${r.policyname}`);
  for (const exception of Object.keys(POLICY_EXCEPTIONS)) {
    assert.ok(all.includes(exception), `stale exception: ${exception}`);
  }
  // Not vacuous: the write policies known when this was written are there.
  for (
    const table of [
      "admin_notification_types",
      "blurred_fields",
      "commission_tiers",
      "listings",
      "notification_preferences",
      "notifications",
      "offers",
      "price_alerts",
      "profiles",
      "sponsored_listings",
    ]
  ) {
    assert.ok(checked.some((key) => key.startsWith(`${table}: `)), `no write policy on ${table}`);
  }
  assert.ok(checked.length >= 17, `only ${checked.length} write policies checked`);
});

/** One write through RLS, refused to an anonymous session and accepted signed in. */
interface WriteCase {
  name: string;
  who: TestUser;
  sql: string;
  params?: unknown[];
  /** How PostgreSQL refuses it: a with check violation (42501) or a using clause (0 rows). */
  refused: "42501" | "0 rows";
}

const notice = (
  await db.pool.query<{ id: string }>(
    `insert into public.notifications (user_id, type, title, body)
     values ($1, 'account', 'Hello', 'Body') returning id`,
    [buyer.id],
  )
).rows[0]!.id;

await db.pool.query(
  `insert into public.notification_preferences (user_id, type, email, in_app)
   values ($1, 'payments', true, true)`,
  [buyer.id],
);
const alert = (
  await db.pool.query<{ id: string }>(
    `insert into public.price_alerts (user_id, category, max_price, currency)
     values ($1, 'saas', 1, 'USD') returning id`,
    [buyer.id],
  )
).rows[0]!.id;

const WRITES: WriteCase[] = [
  {
    name: "make an offer",
    who: buyer,
    sql: `insert into public.offers (listing_id, amount, currency, message)
          values ($1, 30000, 'USD', 'Hi')`,
    params: [onSale.id],
    refused: "42501",
  },
  {
    name: "create a listing",
    who: seller,
    sql: "insert into public.listings (title, category, asking_price) values ('Mine', 'saas', 10)",
    refused: "42501",
  },
  {
    name: "update one's listing",
    who: seller,
    sql: "update public.listings set title = 'Renamed' where id = $1",
    params: [draft.id],
    refused: "0 rows",
  },
  {
    name: "delete one's draft listing",
    who: seller,
    sql: "delete from public.listings where id = $1",
    params: [draft.id],
    refused: "0 rows",
  },
  {
    name: "create a price alert",
    who: buyer,
    sql:
      "insert into public.price_alerts (category, max_price, currency) values ('saas', 1, 'USD')",
    refused: "42501",
  },
  {
    name: "change one's price alert",
    who: buyer,
    sql: "update public.price_alerts set active = false where id = $1",
    params: [alert],
    refused: "0 rows",
  },
  {
    name: "delete one's price alert",
    who: buyer,
    sql: "delete from public.price_alerts where id = $1",
    params: [alert],
    refused: "0 rows",
  },
  {
    name: "set a notification preference",
    who: buyer,
    sql: `insert into public.notification_preferences (type, email, in_app)
          values ('new_listings', true, false)`,
    refused: "42501",
  },
  {
    name: "change a notification preference",
    who: buyer,
    sql: `update public.notification_preferences set email = false
          where user_id = $1 and type = 'payments'`,
    params: [buyer.id],
    refused: "0 rows",
  },
  {
    name: "reset a notification preference",
    who: buyer,
    sql: "delete from public.notification_preferences where user_id = $1 and type = 'payments'",
    params: [buyer.id],
    refused: "0 rows",
  },
  {
    name: "update one's profile",
    who: buyer,
    sql: "update public.profiles set full_name = 'Someone' where id = $1",
    params: [buyer.id],
    refused: "0 rows",
  },
  {
    name: "mark a notification read",
    who: buyer,
    sql: "update public.notifications set read_at = now() where id = $1",
    params: [notice],
    refused: "0 rows",
  },
  {
    name: "change commission rates (an admin's id)",
    who: admin,
    sql: "update public.commission_tiers set description = description",
    refused: "0 rows",
  },
  {
    name: "change the blur policy (an admin's id)",
    who: admin,
    sql: "update public.blurred_fields set description = description",
    refused: "0 rows",
  },
];

for (const write of WRITES) {
  sqlTest(`an anonymous session cannot ${write.name}; signed in, the same user can`, async () => {
    await asRole(db.pool, anonymousAs(write.who), async (c) => {
      const outcome = await attempt(c, write.sql, write.params);
      if (write.refused === "42501") {
        assert.equal(outcome.code, "42501", JSON.stringify(outcome));
        assert.match(outcome.message ?? "", /row-level security policy/);
      } else {
        assert.deepEqual(outcome, { rows: 0 });
      }
    });
    await asRole(db.pool, signedIn(write.who), async (c) => {
      const outcome = await attempt(c, write.sql, write.params);
      assert.ok(
        outcome.code === undefined && (outcome.rows ?? 0) >= 1,
        `signed in: ${JSON.stringify(outcome)}`,
      );
    });
  });
}

// -----------------------------------------------------------------------------
// RPCs
// -----------------------------------------------------------------------------

/** Client-callable functions that write and stay open to visitors, each with its reason. */
const RPC_EXCEPTIONS: Record<string, string> = {
  record_listing_view:
    "views are counted for visitors (the anon key, and anonymous sessions like them); it writes only a deduplicated view row",
};

/** The RPCs that write, known when this was written: the catalog must list them. */
const KNOWN_RPCS = [
  "accept_offer",
  "decline_offer",
  "withdraw_offer",
  "cancel_deal",
  "confirm_deal_documents",
  "deliver_handover_step",
  "confirm_handover_step",
  "dispute_handover_step",
  "add_handover_step",
];

interface Rpc {
  name: string;
  signature: string;
  arg_types: string[];
}

/** Every volatile function in public that authenticated may execute (no triggers). */
async function clientRpcs(): Promise<Rpc[]> {
  const { rows } = await db.pool.query<Rpc>(
    `select p.proname as name, p.oid::regprocedure::text as signature,
       array(
         select format_type(a.type, null)
         from unnest(p.proargtypes::oid[]) with ordinality as a (type, position)
         order by a.position
       ) as arg_types
     from pg_proc p join pg_namespace n on n.oid = p.pronamespace
     where n.nspname = 'public'
       and has_function_privilege('authenticated', p.oid, 'execute')
       and p.provolatile = 'v'
       and p.prorettype <> 'trigger'::regtype
     order by p.proname`,
  );
  return rows;
}

/** An argument of type `type`: anything the function accepts as input. */
function argumentFor(type: string, signature: string): unknown {
  switch (type) {
    case "uuid":
      return crypto.randomUUID();
    case "uuid[]":
      return [crypto.randomUUID()];
    case "text":
    case "character varying":
      return "x";
    case "integer":
    case "bigint":
    case "smallint":
    case "numeric":
      return 1;
    case "boolean":
      return false;
    case "timestamp with time zone":
    case "date":
      return new Date();
    case "jsonb":
    case "json":
      return "{}";
    default:
      throw new Error(`No test argument for type ${type} of ${signature}: add one here`);
  }
}

/** Calls `rpc` in `client`'s transaction with arguments built from its types. */
async function call(client: pg.PoolClient, rpc: Rpc): Promise<Outcome> {
  const placeholders = rpc.arg_types.map((type, i) => `$${i + 1}::${type}`).join(", ");
  const params = rpc.arg_types.map((type) => argumentFor(type, rpc.signature));
  return await attempt(client, `select public.${rpc.name}(${placeholders})`, params);
}

sqlTest("every RPC a client may call that writes refuses an anonymous session first", async () => {
  const rpcs = await clientRpcs();
  const names = rpcs.map((r) => r.name);
  assert.ok(rpcs.length > 0, "no client-callable RPC found");
  for (const name of [...KNOWN_RPCS, ...Object.keys(RPC_EXCEPTIONS)]) {
    assert.ok(names.includes(name), `${name} is not in the catalog's list`);
  }
  const admitted: string[] = [];
  for (const rpc of rpcs) {
    if (rpc.name in RPC_EXCEPTIONS) continue;
    // With a real user's id: the refusal must not depend on an unknown user.
    for (const who of [buyer, admin]) {
      await asRole(db.pool, anonymousAs(who), async (c) => {
        const outcome = await call(c, rpc);
        if (outcome.code !== "42501" || !/anonymous session/.test(outcome.message ?? "")) {
          admitted.push(`${rpc.signature} -> ${JSON.stringify(outcome)}`);
        }
      });
    }
    // Signed in, the same call fails (or not) for another reason.
    await asRole(db.pool, signedIn(buyer), async (c) => {
      const outcome = await call(c, rpc);
      assert.doesNotMatch(outcome.message ?? "", /anonymous session/, rpc.signature);
    });
  }
  assert.deepEqual(admitted, [], "RPCs that do not refuse anonymous sessions first");
});

sqlTest("the refusal names the action and comes before any lookup", async () => {
  await asRole(db.pool, anonymousAs(seller), async (c) => {
    const outcome = await attempt(c, "select public.accept_offer($1)", [crypto.randomUUID()]);
    assert.deepEqual(outcome, { code: "42501", message: refusal("accept this offer") });
    const step = await attempt(c, "select public.confirm_handover_step($1)", [
      crypto.randomUUID(),
    ]);
    assert.deepEqual(step, { code: "42501", message: refusal("confirm this step") });
  });
});

// -----------------------------------------------------------------------------
// The helpers
// -----------------------------------------------------------------------------

sqlTest("is_admin() is false for an anonymous session whose id holds the admin role", async () => {
  const isAdmin = async (identity: SqlIdentity) =>
    await asRole(db.pool, identity, async (c) => {
      const { rows } = await c.query<{ admin: boolean }>("select public.is_admin() as admin");
      return rows[0]!.admin;
    });
  assert.equal(await isAdmin(signedIn(admin)), true);
  assert.equal(await isAdmin(anonymousAs(admin)), false);
});

sqlTest("is_signed_in_user(): a user whose JWT is not anonymous", async () => {
  const answer = async (identity: SqlIdentity, claims?: Record<string, unknown>) =>
    await asRole(db.pool, identity, async (c) => {
      if (claims) {
        await c.query("select set_config('request.jwt.claims', $1, true)", [
          JSON.stringify(claims),
        ]);
      }
      const { rows } = await c.query<{ yes: boolean }>(
        "select public.is_signed_in_user() as yes",
      );
      return rows[0]!.yes;
    });
  const user = signedIn(buyer);
  assert.equal(await answer(user), true, "no is_anonymous claim");
  const claims = { role: "authenticated", sub: buyer.id, aud: "authenticated" };
  assert.equal(await answer(user, { ...claims, is_anonymous: false }), true, "is_anonymous false");
  assert.equal(await answer(anonymousAs(buyer)), false, "is_anonymous true");
  assert.equal(await answer({ role: "anon" }), false, "the anon key");
  assert.equal(await answer({ role: "service_role" }), false, "service_role");
});

sqlTest("assert_signed_in() passes for the service connection and signed-in users", async () => {
  // The superuser pool: the service connection, no claims at all.
  await db.pool.query("select public.assert_signed_in('test')");
  await asRole(db.pool, { role: "service_role" }, async (c) => {
    await c.query("select public.assert_signed_in('test')");
  });
  await asRole(db.pool, signedIn(buyer), async (c) => {
    await c.query("select public.assert_signed_in('test')");
  });
  // Refused: an anonymous session, and a client with no user at all.
  const refused: SqlIdentity[] = [
    anonymousAs(buyer),
    { role: "anon" },
    { role: "authenticated" },
  ];
  for (const identity of refused) {
    await asRole(db.pool, identity, async (c) => {
      const outcome = await attempt(c, "select public.assert_signed_in('test')");
      assert.deepEqual(outcome, { code: "42501", message: refusal("test") }, identity.role);
    });
  }
});
