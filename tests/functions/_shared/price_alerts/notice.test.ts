import assert from "node:assert/strict";
import {
  PRICE_ALERT_LISTINGS_SHOWN,
  type PriceAlertMatch,
  priceAlertNotice,
} from "../../../../supabase/functions/_shared/email/templates/price_alerts.ts";
import { renderEmail } from "../../../../supabase/functions/_shared/email/render.ts";

function match(n: number, extra: Partial<PriceAlertMatch> = {}): PriceAlertMatch {
  return {
    listingId: `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`,
    title: `Listing ${n}`,
    price: `${1000 + n}.00`,
    currency: "USD",
    alert: { kind: "search", category: "saas", maxPrice: "5000.00" },
    ...extra,
  };
}

Deno.test("priceAlertNotice() names one listing with its price and links to it", () => {
  const notice = priceAlertNotice([
    match(1, { price: "900.00", alert: { kind: "listing", targetPrice: "1000.00" } }),
  ]);
  assert.equal(notice.title, '"Listing 1" is now $900.00');
  assert.equal(notice.body, "It matches at or below your target of $1,000.00.");
  assert.equal(notice.link, `/listings/${match(1).listingId}`);
  assert.equal(notice.total, 1);
  assert.deepEqual(notice.email.items, [{
    title: "Listing 1",
    url: `/listings/${match(1).listingId}`,
    detail: "$900.00 · at or below your target of $1,000.00",
  }]);
});

Deno.test("priceAlertNotice() lists a listing matched by two alerts once", () => {
  const notice = priceAlertNotice([
    match(1),
    match(2, { currency: "EUR" }),
    match(1, { alert: { kind: "listing", targetPrice: "2000.00" } }),
  ]);
  assert.equal(notice.total, 2);
  assert.equal(notice.title, "2 listings match your price alerts");
  assert.equal(notice.link, "/price-alerts");
  assert.equal(
    notice.body,
    'Matching your price alerts: "Listing 1" at $1,001.00 and "Listing 2" at €1,002.00.',
  );
  assert.equal(notice.email.items?.[0]?.detail, "$1,001.00 · your search in saas, up to $5,000.00");
});

Deno.test("priceAlertNotice() lists the first 20 and counts the rest", () => {
  const matches = Array.from({ length: 27 }, (_, i) => match(i + 1));
  const notice = priceAlertNotice(matches);
  assert.equal(notice.total, 27);
  assert.equal(notice.listingIds.length, PRICE_ALERT_LISTINGS_SHOWN);
  assert.equal(notice.email.items?.length, PRICE_ALERT_LISTINGS_SHOWN);
  assert.match(
    notice.email.paragraphs[0] ?? "",
    /27 listings match your price alerts; here are the first 20/,
  );
  assert.match(notice.body, /"Listing 5" at \$1,005\.00 and 22 more\.$/);
});

Deno.test("priceAlertNotice(): a listing title arrives as text in the e-mail", () => {
  const notice = priceAlertNotice([match(1, { title: '<script>alert("x")</script>' })]);
  const rendered = renderEmail(notice.email, "https://market.example");
  assert.ok(!rendered.html.includes("<script>"));
  assert.ok(rendered.html.includes("&lt;script&gt;"));
  assert.ok(rendered.html.includes(`https://market.example/listings/${match(1).listingId}`));
});
