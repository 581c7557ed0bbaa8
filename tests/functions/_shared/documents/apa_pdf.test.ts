import assert from "node:assert/strict";
import {
  APA_TERMS,
  type ApaContent,
  type ApaTerms,
} from "../../../../supabase/functions/_shared/documents/apa_content.ts";
import {
  APA_PAGE,
  renderApaPdf,
} from "../../../../supabase/functions/_shared/documents/apa_pdf.ts";
import { pdfContentStreams, pdfInfo, pdfRuns, pdfText } from "../../../support/pdf_text.ts";

function content(overrides: Partial<ApaContent> = {}): ApaContent {
  return {
    dealId: "0b6f0a2e-3c1d-4c53-9b0e-2f1b1c8e9a11",
    agreementDate: new Date("2026-11-20T09:30:00Z"),
    fundedAt: new Date("2026-11-21T10:05:00Z"),
    seller: { name: "Ada Lovelace", email: "ada@example.com" },
    buyer: { name: "Bo Byers", email: "bo.byers@example.org" },
    listing: { title: "Recipe SaaS with 2k subscribers", url: "https://recipes.example.net" },
    price: "1500.00",
    commission: "150.00",
    sellerNet: "1350.00",
    currency: "USD",
    assets: [
      { title: "Domain transfer", details: "recipes.example.net at the current registrar" },
      { title: "Code repository", details: "GitHub organisation ownership\nand CI secrets" },
      { title: "Hosting", details: null },
    ],
    inspectionDays: 7,
    terms: null,
    draft: false,
    ...overrides,
  };
}

/** Agreed letter-of-intent terms: 1350.00 at close, 150.00 held back. */
function terms(overrides: Partial<ApaTerms> = {}): ApaTerms {
  return {
    cashAtClose: "1350.00",
    holdback: "150.00",
    holdbackDays: 30,
    exclusivityDays: 14,
    proposedCloseDate: "2027-01-31",
    conditions: ["Seller hands over the domain", "Revenue verified"],
    ...overrides,
  };
}

/** The text without page footers and with line breaks made spaces, for phrases a wrap or a page may split. */
function flat(text: string): string {
  return text.replace(/^Asset Purchase Agreement Page \d+ of \d+$/gm, "").replace(/\s+/g, " ");
}

/** Text-showing operators (`BT` … `ET` blocks) in the decoded content streams. */
function textObjects(streams: string[]): number {
  return streams.reduce((n, s) => n + (s.match(/(^|\s)BT(\s|$)/g) ?? []).length, 0);
}

Deno.test("renderApaPdf() states the parties, the listing, the amounts and the dates", async () => {
  const { text, pageCount } = await pdfText(await renderApaPdf(content()));
  assert.ok(pageCount >= 1);
  for (
    const expected of [
      "Asset Purchase Agreement",
      "Agreement no. 0b6f0a2e-3c1d-4c53-9b0e-2f1b1c8e9a11",
      "Agreement date 2026-11-20",
      "Received 2026-11-21 10:05 UTC",
      "Seller Ada Lovelace\nada@example.com",
      "Buyer Bo Byers\nbo.byers@example.org",
      "Title Recipe SaaS with 2k subscribers",
      "URL https://recipes.example.net",
      "Purchase price $1,500.00",
      "Marketplace commission $150.00",
      "Seller's net proceeds $1,350.00",
      "Currency USD",
    ]
  ) {
    assert.ok(text.includes(expected), `${expected} in:\n${text}`);
  }
});

Deno.test("renderApaPdf() lists the assets, the inspection period, the terms and both signature blocks", async () => {
  const { text, pages } = await pdfText(await renderApaPdf(content()));
  assert.ok(text.includes("Assets to transfer"));
  assert.ok(text.includes("1. Domain transfer\nrecipes.example.net at the current registrar"));
  assert.ok(text.includes("2. Code repository\nGitHub organisation ownership\nand CI secrets"));
  assert.ok(text.includes("3. Hosting\n"));
  assert.ok(text.includes("Inspection period"));
  assert.ok(flat(text).includes("The Buyer has 7 days to inspect the assets"));
  assert.ok(text.includes("\nTerms\n"));
  APA_TERMS.forEach((clause, i) => {
    assert.ok(flat(text).includes(`${i + 1}. ${clause}`), `clause ${i + 1}`);
  });
  assert.ok(text.includes("Signed by the Seller Signed by the Buyer"));
  assert.ok(text.includes("Ada Lovelace Bo Byers\nada@example.com bo.byers@example.org"));
  assert.ok(text.includes("Signature Signature\nDate Date"));
  pages.forEach((page, i) => {
    assert.ok(page.includes(`Asset Purchase Agreement Page ${i + 1} of ${pages.length}`), page);
  });
});

Deno.test("renderApaPdf() writes the document's title, author and dates from the content", async () => {
  const info = await pdfInfo(await renderApaPdf(content()));
  assert.equal(info.title, "Asset Purchase Agreement 0b6f0a2e-3c1d-4c53-9b0e-2f1b1c8e9a11");
  assert.equal(
    info.subject,
    'Sale of "Recipe SaaS with 2k subscribers" by Ada Lovelace to Bo Byers',
  );
  assert.equal(info.author, "Marketplace");
  assert.equal(info.producer, "pdf-lib 1.17.1");
  assert.deepEqual(info.creationDate, new Date("2026-11-20T09:30:00Z"));
  assert.deepEqual(info.modificationDate, new Date("2026-11-20T09:30:00Z"));
});

Deno.test("renderApaPdf() formats zero-decimal currencies and symbols the fonts lack", async () => {
  const yen = await pdfText(
    await renderApaPdf(
      content({
        price: "150000.00",
        commission: "15000.00",
        sellerNet: "135000.00",
        currency: "JPY",
      }),
    ),
  );
  assert.ok(yen.text.includes("Purchase price ¥150,000\n"), yen.text);
  assert.ok(yen.text.includes("Marketplace commission ¥15,000\n"));
  assert.ok(yen.text.includes("Seller's net proceeds ¥135,000\n"));
  const rupees = await pdfText(await renderApaPdf(content({ currency: "INR" })));
  assert.ok(rupees.text.includes("Purchase price INR 1,500.00\n"), rupees.text);
  assert.ok(!rupees.text.includes("?"));
  const euros = await pdfText(await renderApaPdf(content({ currency: "EUR" })));
  assert.ok(euros.text.includes("Purchase price €1,500.00\n"));
});

Deno.test("renderApaPdf() says when payment, URL or assets are missing", async () => {
  const { text } = await pdfText(
    await renderApaPdf(
      content({ fundedAt: null, listing: { title: "Plain", url: null }, assets: [] }),
    ),
  );
  assert.ok(text.includes("Payment into escrow Not yet received"));
  assert.ok(!text.includes("\nURL "));
  assert.ok(flat(text).includes("No assets are listed on the handover checklist"));
});

Deno.test("renderApaPdf() renders the same content to the same bytes", async () => {
  const first = await renderApaPdf(content());
  const second = await renderApaPdf(content({ agreementDate: new Date("2026-11-20T09:30:00Z") }));
  assert.deepEqual(second, first);
  const repriced = await renderApaPdf(content({ price: "1600.00" }));
  assert.notDeepEqual(repriced, first);
  const redated = await renderApaPdf(content({ agreementDate: new Date("2026-11-20T09:30:01Z") }));
  assert.notDeepEqual(redated, first);
});

Deno.test("renderApaPdf() prints PDF syntax in user text as text, never as operators", async () => {
  const injected = "Shop) Tj ET BT /F1 99 Tf (pwned";
  const benign = "Shop pwned";
  const hostile = content({
    listing: { title: injected, url: "https://x.example/a)b(c\\d" },
    seller: { name: "\\) (x", email: "ada@example.com" },
    assets: [{ title: "BT ET q Q cm (", details: ") Tj\n<4142> Tj" }],
  });
  const plain = content({
    listing: { title: benign, url: "https://x.example/abcd" },
    seller: { name: "x", email: "ada@example.com" },
    assets: [{ title: "asset", details: "one\ntwo" }],
  });
  const [hostileBytes, plainBytes] = await Promise.all([
    renderApaPdf(hostile),
    renderApaPdf(plain),
  ]);
  const { text, pageCount } = await pdfText(hostileBytes);
  assert.ok(text.includes(`Title ${injected}\n`), text);
  assert.ok(text.includes("Seller \\) (x\n"));
  assert.ok(text.includes("URL https://x.example/a)b(c\\d\n"));
  assert.ok(text.includes("1. BT ET q Q cm (\n) Tj\n<4142> Tj\n"));
  assert.equal(pageCount, (await pdfText(plainBytes)).pageCount);

  const streams = await pdfContentStreams(hostileBytes);
  assert.ok(!streams.some((s) => s.includes("pwned") || s.includes("99 Tf")));
  assert.equal(textObjects(streams), textObjects(await pdfContentStreams(plainBytes)));
  const drawn = (await pdfRuns(hostileBytes)).flatMap((p) => p.runs).filter((r) =>
    r.str.trim() !== ""
  );
  assert.equal(textObjects(streams), drawn.length, "one text object per drawn line");
  const shown = streams.join("\n").match(/\S+ Tj/g) ?? [];
  assert.equal(shown.length, drawn.length);
  assert.ok(shown.every((op) => /^<[0-9A-F]*> Tj$/.test(op)), "every string shown is hex-encoded");
});

Deno.test("renderApaPdf() draws characters the fonts lack as ? and drops invisible ones", async () => {
  const bytes = await renderApaPdf(content({
    listing: { title: "Shop 🎉 漢字 a\u200Bb \u202Eevil\u0000x", url: null },
    seller: { name: "Zoë\tМария", email: "zoe@example.com\n" },
    buyer: { name: "👨‍👩‍👧", email: "b@example.com" },
    assets: [{ title: "Keys 🔑", details: "line one\u2028line two\u0007" }],
  }));
  const { text } = await pdfText(bytes);
  assert.ok(text.includes("Title Shop ? ?? ab evilx\n"), text);
  assert.ok(text.includes("Seller Zoë ?????\nzoe@example.com\n"));
  assert.ok(text.includes("Buyer ?\nb@example.com"));
  assert.ok(text.includes("1. Keys ?\nline one\nline two\n"));
  assert.ok(!["\u0000", "\u200B", "\u202E"].some((char) => text.includes(char)));
});

Deno.test("renderApaPdf() wraps a long title and paginates 60 assets inside the margins", async () => {
  const words = Array.from({ length: 100 }, (_, i) => `word${i}`);
  let title = "";
  for (const word of words) {
    if ((title + " " + word).trim().length <= 500) title = `${title} ${word}`.trim();
  }
  const assets = Array.from({ length: 60 }, (_, i) => ({
    title: `Asset number ${i + 1}`,
    details: `Details of asset ${i + 1}: ${"credentials and files ".repeat(i % 7)}`.trim(),
  }));
  const bytes = await renderApaPdf(content({ listing: { title, url: null }, assets }));
  const { text, pages, pageCount } = await pdfText(bytes);
  assert.ok(pageCount > 1);
  for (const word of title.split(" ")) assert.match(text, new RegExp(`\\b${word}\\b`));
  assert.ok(flat(text).includes(title), "the title is printed whole, in order");
  for (const asset of assets) assert.ok(text.includes(`. ${asset.title}\n`), asset.title);
  pages.forEach((page, i) =>
    assert.ok(page.includes(`Page ${i + 1} of ${pageCount}`), `page ${i + 1}`)
  );

  const { margin } = APA_PAGE;
  for (const page of await pdfRuns(bytes)) {
    for (const run of page.runs.filter((r) => r.str !== "")) {
      assert.ok(run.x >= margin.left - 0.01, run.str);
      assert.ok(
        run.x + run.width <= page.width - margin.right + 0.01,
        `${run.str} runs off the page`,
      );
      assert.ok(run.y > 0 && run.y <= page.height - margin.top, run.str);
    }
  }
});

Deno.test("renderApaPdf() cuts absurdly long user text with an ellipsis", async () => {
  const title = "t".repeat(5000);
  const details = "d ".repeat(5000);
  const { text } = await pdfText(
    await renderApaPdf(
      content({ listing: { title, url: null }, assets: [{ title: "A", details }] }),
    ),
  );
  const printedTitle = text.match(/Title ([t\n]+…)/)?.[1]?.replaceAll("\n", "");
  assert.equal(printedTitle?.length, 500);
  assert.ok(flat(text).includes(`${"d ".repeat(999)}d…`));
});

Deno.test("renderApaPdf() refuses invalid dates and inspection periods", async () => {
  await assert.rejects(
    renderApaPdf(content({ agreementDate: new Date("nope") })),
    {
      name: "RangeError",
      message: "Cannot render the agreement: agreementDate is not a valid date",
    },
  );
  await assert.rejects(renderApaPdf(content({ fundedAt: new Date(Number.NaN) })), RangeError);
  await assert.rejects(renderApaPdf(content({ inspectionDays: 2.5 })), RangeError);
  await assert.rejects(renderApaPdf(content({ inspectionDays: -1 })), RangeError);
});

Deno.test("renderApaPdf() keeps the signatures section on one page wherever it falls", async () => {
  const splits: number[] = [];
  for (let n = 0; n <= 40; n++) {
    const assets = Array.from(
      { length: n },
      (_, i) => ({ title: `Asset ${i + 1}`, details: null }),
    );
    const { pages } = await pdfText(await renderApaPdf(content({ assets })));
    const page = pages.find((p) => /^Signatures$/m.test(p));
    if (!page?.includes("Signed by the Seller") || !page.includes("Date Date")) splits.push(n);
  }
  assert.deepEqual(splits, []);
});

Deno.test("renderApaPdf() states agreed terms after the consideration, only when there are some", async () => {
  const plain = await pdfText(await renderApaPdf(content()));
  for (const absent of ["Agreed terms", "Cash at close", "Holdback", "Draft"]) {
    assert.ok(!plain.text.includes(absent), absent);
  }

  const { text } = await pdfText(
    await renderApaPdf(content({ terms: terms(), inspectionDays: 10, draft: true })),
  );
  for (
    const expected of [
      "Status Draft for review during the Buyer's due diligence\n",
      "Cash at close $1,350.00\n",
      "Holdback $150.00, released to the Seller 30 days after the cash at close\n",
      "Inspection period 10 days\n",
      "Exclusivity 14 days from acceptance, for the Buyer's due diligence\n",
      "Proposed closing date 2027-01-31\n",
      "The sale is subject to these conditions:\n1. Seller hands over the domain\n2. Revenue verified\n",
    ]
  ) {
    assert.ok(text.includes(expected), `${expected} in:\n${text}`);
  }
  assert.ok(flat(text).includes("The Buyer has 10 days to inspect the assets"));
  const order = ["Consideration", "Agreed terms", "Assets to transfer", "Inspection period\n"];
  const at = order.map((heading) => text.indexOf(heading));
  assert.deepEqual([...at].sort((a, b) => a - b), at, "the section follows the consideration");
});

Deno.test("renderApaPdf() says when the terms hold nothing back and name no date or condition", async () => {
  const { text } = await pdfText(
    await renderApaPdf(content({
      currency: "JPY",
      price: "150000.00",
      commission: "15000.00",
      sellerNet: "135000.00",
      terms: terms({
        cashAtClose: "150000.00",
        holdback: "0.00",
        holdbackDays: 0,
        exclusivityDays: 0,
        proposedCloseDate: null,
        conditions: [],
      }),
    })),
  );
  assert.ok(text.includes("Cash at close ¥150,000\n"), text);
  assert.ok(text.includes("Holdback No holdback: the whole purchase price is paid at close\n"));
  assert.ok(text.includes("Conditions None\n"));
  for (const absent of ["Exclusivity", "Proposed closing date", "subject to these conditions"]) {
    assert.ok(!text.includes(absent), absent);
  }
});

Deno.test("renderApaPdf() wraps ten long conditions inside the margins and prints them as text", async () => {
  const conditions = Array.from(
    { length: 10 },
    (_, i) => `Condition ${i + 1}: ${"the seller keeps the service running ".repeat(12)}(end) Tj`,
  );
  const bytes = await renderApaPdf(content({ terms: terms({ conditions }) }));
  const { text } = await pdfText(bytes);
  conditions.forEach((condition, i) => {
    assert.ok(flat(text).includes(`${i + 1}. ${condition.trim()}`), `condition ${i + 1}`);
    assert.ok(!text.includes(condition), `condition ${i + 1} is wrapped`);
  });
  const streams = await pdfContentStreams(bytes);
  assert.ok(!streams.some((s) => s.includes("(end) Tj")));
  const { margin } = APA_PAGE;
  for (const page of await pdfRuns(bytes)) {
    for (const run of page.runs.filter((r) => r.str !== "")) {
      assert.ok(run.x + run.width <= page.width - margin.right + 0.01, `${run.str} runs off`);
      assert.ok(run.y > 0 && run.y <= page.height - margin.top, run.str);
    }
  }
  // A condition longer than the limit is cut with "…".
  const cut = await pdfText(
    await renderApaPdf(content({ terms: terms({ conditions: ["c ".repeat(400)] }) })),
  );
  assert.ok(flat(cut.text).includes(`1. ${"c ".repeat(249)}c…`));
});

Deno.test("renderApaPdf() refuses agreed days that are not whole", async () => {
  await assert.rejects(renderApaPdf(content({ terms: terms({ holdbackDays: 1.5 }) })), RangeError);
  await assert.rejects(
    renderApaPdf(content({ terms: terms({ exclusivityDays: -1 }) })),
    RangeError,
  );
});
