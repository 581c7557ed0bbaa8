/**
 * `generate-apa-pdf` against the local Storage API: the agreement's text
 * (read back by a real PDF reader), the agreed terms of a letter of intent
 * (and none for a plain deal), a draft during due diligence, its storage and
 * hash, versions on change (and none without), concurrent calls, refusals.
 *
 * @module
 */
import assert from "node:assert/strict";
import handler from "../../supabase/functions/generate-apa-pdf/handler.ts";
import { sha256Hex } from "../../supabase/functions/_shared/lib/hex.ts";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { testCredentials } from "../support/credentials.ts";
import { createDeal, moveDeal, type TestDeal } from "../support/deals.ts";
import { rpc } from "../support/handover.ts";
import { confirmDiligence, createLoiDeal, dealOf } from "../support/loi.ts";
import { pdfText } from "../support/pdf_text.ts";
import { invoke, testRuntime } from "../support/runtime.ts";
import { createUser, type TestUser } from "../support/sql.ts";
import { startLocalStorage } from "../support/storage.ts";

interface Apa {
  documentId: string;
  path: string;
  signedUrl: string;
  sha256: string;
  version: number;
  created: boolean;
  error?: { code: string };
}

const db = await createTestDatabase();
const storage = await startLocalStorage(db);
const runtime = await testRuntime(db, storage.env);
const keys = await testCredentials();

async function generate(user: TestUser, dealId: string) {
  return await invoke<Apa>(handler, runtime, {
    token: await keys.userToken(user),
    body: { dealId },
  });
}

/** The PDF behind a signed URL, fetched as a browser would. */
async function fetchPdf(signedUrl: string): Promise<Uint8Array> {
  const res = await fetch(signedUrl);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "application/pdf");
  return new Uint8Array(await res.arrayBuffer());
}

async function apaVersions(dealId: string) {
  const { rows } = await db.pool.query(
    `select version, sha256, path, status, uploaded_by from public.deal_documents
     where deal_id = $1 and kind = 'apa' order by version`,
    [dealId],
  );
  return rows;
}

/** The text with line breaks and runs of spaces made single spaces, for phrases a wrap may split. */
function flat(text: string): string {
  return text.replace(/\s+/g, " ");
}

/** What a deal without agreed terms never shows. */
const TERMS_ONLY = ["Agreed terms", "Cash at close", "Holdback", "letter of intent", "Draft"];

/** A funded deal between named parties. */
async function namedDeal(): Promise<TestDeal> {
  const deal = await createDeal(db.pool, { amount: "1500.00" });
  await db.pool.query("update public.profiles set full_name = $2 where id = $1", [
    deal.seller.id,
    "Sally Seller",
  ]);
  await db.pool.query("update public.profiles set full_name = $2 where id = $1", [
    deal.buyer.id,
    "Bob Buyer",
  ]);
  await moveDeal(db.pool, deal.id, "funded");
  return deal;
}

sqlTest(
  "generate-apa-pdf: the agreement names the parties, the listing, the money and the assets",
  async () => {
    const deal = await namedDeal();
    const { rows } = await db.pool.query(
      `select l.title, l.url, d.commission::text as commission,
            (d.amount - d.commission)::text as net
     from public.deals d join public.listings l on l.id = d.listing_id where d.id = $1`,
      [deal.id],
    );
    const facts = rows[0]!;
    const res = await generate(deal.buyer, deal.id);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.version, 1);
    assert.equal(res.body.created, true);
    assert.equal(res.body.path, `${deal.id}/apa/${res.body.sha256}.pdf`);

    const pdf = await fetchPdf(res.body.signedUrl);
    assert.equal(await sha256Hex(pdf), res.body.sha256);
    const { text } = await pdfText(pdf);
    for (
      const expected of [
        "Asset Purchase Agreement",
        "Sally Seller",
        deal.seller.email,
        "Bob Buyer",
        deal.buyer.email,
        facts.title,
        facts.url,
        "$1,500.00",
        `$${Number(facts.commission).toLocaleString("en-US", { minimumFractionDigits: 2 })}`,
        `$${Number(facts.net).toLocaleString("en-US", { minimumFractionDigits: 2 })}`,
        "Domain name transfer",
        "Source code repository",
        "Credentials",
        "7 days",
        deal.id,
      ]
    ) {
      assert.ok(text.includes(expected), `the agreement shows "${expected}"`);
    }
    // A deal made on a plain offer has no agreed terms.
    for (const absent of TERMS_ONLY) {
      assert.ok(!text.includes(absent), `a plain deal's agreement shows no "${absent}"`);
    }

    assert.deepEqual(await apaVersions(deal.id), [{
      version: 1,
      sha256: res.body.sha256,
      path: res.body.path,
      status: "uploaded",
      uploaded_by: deal.buyer.id,
    }]);
    const stored = await db.pool.query(
      "select metadata->>'mimetype' as type from storage.objects where bucket_id = 'deal-documents' and name = $1",
      [res.body.path],
    );
    assert.equal(stored.rows[0]?.type, "application/pdf");
  },
);

sqlTest(
  "generate-apa-pdf: a letter of intent's deal states its agreed terms, as a draft during diligence",
  async () => {
    const loi = await createLoiDeal(db.pool);
    assert.equal((await dealOf(db.pool, loi.dealId)).status, "in_diligence");

    // Both sides review the draft while the buyer is in due diligence.
    const draft = await generate(loi.buyer, loi.dealId);
    assert.equal(draft.status, 200, JSON.stringify(draft.body));
    assert.deepEqual([draft.body.version, draft.body.created], [1, true]);
    const bySeller = await generate(loi.seller, loi.dealId);
    assert.equal(bySeller.status, 200, JSON.stringify(bySeller.body));
    assert.deepEqual([bySeller.body.version, bySeller.body.created], [1, false]);

    const text = flat((await pdfText(await fetchPdf(draft.body.signedUrl))).text);
    for (
      const expected of [
        "Status Draft for review during the Buyer's due diligence",
        "Purchase price $1,000.00",
        "Agreed terms",
        "letter of intent",
        "Cash at close $900.00",
        "Holdback $100.00, released to the Seller 30 days after the cash at close",
        "Inspection period 10 days",
        "Exclusivity 14 days from acceptance",
        "The Buyer has 10 days to inspect the assets",
        "1. Seller hands over the domain",
        "2. Revenue verified",
      ]
    ) {
      assert.ok(text.includes(expected), `the agreement shows "${expected}" in:\n${text}`);
    }
    assert.ok(!text.includes("Proposed closing date"), "no closing date was proposed");

    // Past diligence the agreement is no longer a draft: the next version.
    await confirmDiligence(db.pool, loi);
    assert.equal((await dealOf(db.pool, loi.dealId)).status, "pending_payment");
    const final = await generate(loi.seller, loi.dealId);
    assert.equal(final.status, 200, JSON.stringify(final.body));
    assert.deepEqual([final.body.version, final.body.created], [2, true]);
    const finalText = flat((await pdfText(await fetchPdf(final.body.signedUrl))).text);
    assert.ok(!finalText.includes("Draft"));
    for (const expected of ["Cash at close $900.00", "1. Seller hands over the domain"]) {
      assert.ok(finalText.includes(expected), expected);
    }
    assert.deepEqual((await apaVersions(loi.dealId)).map((v) => v.version), [1, 2]);
  },
);

sqlTest(
  "generate-apa-pdf: terms without a holdback or exclusivity, with a closing date and long conditions",
  async () => {
    const closeDate = new Date(Date.now() + 60 * 86_400_000).toISOString().slice(0, 10);
    const long = `The seller migrates every subscriber ${
      "and keeps the billing history ".repeat(12)
    }intact`;
    const loi = await createLoiDeal(db.pool, {
      amount: "2500.00",
      acceptedBy: "service",
      terms: {
        cash_at_close: "2500.00",
        inspection_days: 5,
        exclusivity_days: 0,
        proposed_close_date: closeDate,
        conditions: [long, "No (PDF) Tj operators here"],
      },
    });
    // No exclusivity: straight to payment, the terms copied.
    const state = await dealOf(db.pool, loi.dealId);
    assert.equal(state.status, "pending_payment");
    assert.equal(state.terms?.holdback_days, 0);

    const res = await generate(loi.buyer, loi.dealId);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const { text: raw } = await pdfText(await fetchPdf(res.body.signedUrl));
    const text = flat(raw);
    for (
      const expected of [
        "Cash at close $2,500.00",
        "Holdback No holdback: the whole purchase price is paid at close",
        "Inspection period 5 days",
        "The Buyer has 5 days to inspect the assets",
        `Proposed closing date ${closeDate}`,
        `1. ${long}`,
        "2. No (PDF) Tj operators here",
      ]
    ) {
      assert.ok(text.includes(expected), `the agreement shows "${expected}" in:\n${text}`);
    }
    // The long condition is wrapped over several lines, like the other long text.
    assert.ok(!raw.includes(long), "the long condition is wrapped");
    assert.ok(!text.includes("Exclusivity"));
    assert.ok(!text.includes("Draft"));
  },
);

sqlTest(
  "generate-apa-pdf: unchanged content is the same version; a change makes the next",
  async () => {
    const deal = await namedDeal();
    const first = await generate(deal.buyer, deal.id);
    const again = await generate(deal.seller, deal.id);
    assert.equal(again.status, 200);
    assert.deepEqual(
      [again.body.version, again.body.sha256, again.body.created],
      [1, first.body.sha256, false],
    );

    await rpc(db.pool, deal.seller, "add_handover_step", [deal.id, "Twitter account @shop", null]);
    const changed = await generate(deal.seller, deal.id);
    assert.equal(changed.body.version, 2);
    assert.equal(changed.body.created, true);
    assert.notEqual(changed.body.sha256, first.body.sha256);
    assert.ok(
      (await pdfText(await fetchPdf(changed.body.signedUrl))).text.includes(
        "Twitter account @shop",
      ),
    );
    // The first version is kept, in the register and in the bucket.
    assert.deepEqual((await apaVersions(deal.id)).map((v) => v.version), [1, 2]);
    assert.ok(
      !(await pdfText(await fetchPdf(again.body.signedUrl))).text.includes("Twitter account"),
    );
  },
);

sqlTest("generate-apa-pdf: user text is drawn as text, however it looks", async () => {
  const deal = await namedDeal();
  const title = `Shop) Tj ET BT /F1 99 Tf (pwned ${"very long title ".repeat(10)}end`;
  await db.pool.query(
    "update public.listings set title = $2 where id = (select listing_id from public.deals where id = $1)",
    [deal.id, title],
  );
  const res = await generate(deal.buyer, deal.id);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const text = (await pdfText(await fetchPdf(res.body.signedUrl))).text.replace(/\s+/g, " ");
  assert.ok(text.includes("Shop) Tj ET BT /F1 99 Tf (pwned"));
  assert.ok(text.includes("title end"));
});

sqlTest("generate-apa-pdf: concurrent calls after a change make one new version", async () => {
  const deal = await namedDeal();
  await generate(deal.buyer, deal.id);
  await rpc(db.pool, deal.seller, "add_handover_step", [deal.id, "Mailing list", null]);
  const answers = await Promise.all(
    Array.from({ length: 4 }, (_, i) => generate(i % 2 ? deal.buyer : deal.seller, deal.id)),
  );
  assert.deepEqual(answers.map((a) => a.status), [200, 200, 200, 200]);
  assert.equal(new Set(answers.map((a) => a.body.sha256)).size, 1);
  assert.deepEqual(answers.map((a) => a.body.version), [2, 2, 2, 2]);
  assert.equal(answers.filter((a) => a.body.created).length, 1);
  assert.deepEqual((await apaVersions(deal.id)).map((v) => v.version), [1, 2]);
});

sqlTest("generate-apa-pdf: refusals answer 4xx and store nothing", async () => {
  const deal = await namedDeal();
  const stranger = await createUser(db.pool);
  const denied = await generate(stranger, deal.id);
  assert.equal(denied.status, 403);
  assert.equal(denied.body.error?.code, "forbidden");
  const missing = await generate(deal.buyer, crypto.randomUUID());
  assert.equal(missing.status, 404);
  const bad = await invoke<Apa>(handler, runtime, {
    token: await keys.userToken(deal.buyer),
    body: { dealId: "not-a-uuid" },
  });
  assert.equal(bad.status, 400);
  assert.deepEqual(await apaVersions(deal.id), []);

  const cancelled = await createDeal(db.pool);
  await db.pool.query("select public.cancel_deal($1)", [cancelled.id]);
  const closed = await generate(cancelled.buyer, cancelled.id);
  assert.equal(closed.status, 409, JSON.stringify(closed.body));
  assert.equal(closed.body.error?.code, "conflict");
  assert.deepEqual(await apaVersions(cancelled.id), []);
  const objects = await db.pool.query(
    "select count(*)::int as n from storage.objects where name like $1 || '/%'",
    [cancelled.id],
  );
  assert.equal(objects.rows[0].n, 0);
});

addEventListener("unload", () => {
  storage.stop();
  runtime.close();
});
