/**
 * The Asset Purchase Agreement of a deal as a PDF (A4, Helvetica): title and
 * dates, the parties, the listing, the consideration, the agreed
 * letter-of-intent terms (when the deal has them), the assets to transfer,
 * the inspection period, the terms (`APA_TERMS`) and both signature blocks,
 * with "Page n of m" in every footer.
 *
 * Deterministic: the same content gives the same bytes (the document's
 * dates come from the agreement date; pdf-lib's resource names come from a
 * fixed seed and it writes no file ID). Every string is drawn through
 * `pdfSafeText`, so no user text can throw or become PDF operators.
 *
 * `pdf-lib` (about 800 KB bundled, the largest library on
 * `generate-apa-pdf`'s path) loads with the first agreement rendered, not
 * at cold start (docs/benchmarks.md, `cold_start`): only its types are
 * imported statically.
 *
 * @module
 */
import type { PDFDocument, PDFFont } from "pdf-lib";
import { countOf, formatMoney, formatUtc } from "../lib/format.ts";
import {
  APA_TERMS,
  type ApaAsset,
  type ApaContent,
  type ApaParty,
  type ApaTerms,
} from "./apa_content.ts";
import {
  Cursor,
  isWinAnsi,
  type PageGeometry,
  pdfSafeText,
  type TextStyle,
  textWidth,
} from "./pdf_layout.ts";

/** Page size (A4: pdf-lib's `PageSizes.A4`) and margins of the agreement, in points. */
export const APA_PAGE: PageGeometry = {
  size: [595.28, 841.89],
  margin: { top: 57, bottom: 64, left: 57, right: 57 },
};

/** Longest text the agreement prints of each field (longer is cut with "…"). */
export const APA_LIMITS = {
  id: 100,
  name: 200,
  email: 320,
  title: 500,
  url: 2000,
  details: 2000,
  amount: 40,
  condition: 500,
} as const;

/** Width of the label column of "label: value" rows, and of list numbers. */
const LABEL_WIDTH = 150;
const NUMBER_WIDTH = 24;
const FOOTER_Y = 32;
/** Between the two signature blocks, and above each signature and date line. */
const SIGNATURE_GUTTER = 24;
const SIGNATURE_SPACE = 26;

/** The fonts and styles of one document. */
interface Styles {
  title: TextStyle;
  heading: TextStyle;
  body: TextStyle;
  strong: TextStyle;
  small: TextStyle;
}

/**
 * The agreement for `apa` as PDF bytes. Throws a `RangeError` when a date is
 * invalid or the inspection period, the holdback or the exclusivity is not
 * a whole number of days.
 */
export async function renderApaPdf(apa: ApaContent): Promise<Uint8Array> {
  refuseInvalid(apa);
  const { PDFDocument, StandardFonts } = await import("pdf-lib");
  const doc = await PDFDocument.create({ updateMetadata: false });
  const regular = await doc.embedFont(StandardFonts.Helvetica);
  const bold = await doc.embedFont(StandardFonts.HelveticaBold);
  setMetadata(doc, apa);
  const s = styles(regular, bold);
  const c = new Cursor(doc, APA_PAGE);
  titleBlock(c, s, apa);
  partiesSection(c, s, apa.seller, apa.buyer);
  listingSection(c, s, apa.listing);
  considerationSection(c, s, apa);
  if (apa.terms !== null) agreedTermsSection(c, s, apa, apa.terms);
  assetsSection(c, s, apa.assets);
  inspectionSection(c, s, apa.inspectionDays);
  termsSection(c, s);
  signaturesSection(c, s, apa.seller, apa.buyer);
  footers(c, regular);
  return await doc.save();
}

function refuseInvalid(apa: ApaContent): void {
  for (
    const [name, at] of [["agreementDate", apa.agreementDate], ["fundedAt", apa.fundedAt]] as const
  ) {
    if (at !== null && Number.isNaN(at.getTime())) {
      throw new RangeError(`Cannot render the agreement: ${name} is not a valid date`);
    }
  }
  const days: Array<[string, number]> = [["inspectionDays", apa.inspectionDays]];
  if (apa.terms !== null) {
    days.push(["holdbackDays", apa.terms.holdbackDays]);
    days.push(["exclusivityDays", apa.terms.exclusivityDays]);
  }
  for (const [name, value] of days) {
    if (!Number.isInteger(value) || value < 0) {
      throw new RangeError(
        `Cannot render the agreement: ${name} "${value}" is not a whole number of days`,
      );
    }
  }
}

/** Title, subject, author, producer and dates from the content only. */
function setMetadata(doc: PDFDocument, apa: ApaContent): void {
  const id = pdfSafeText(apa.dealId, { maxLength: APA_LIMITS.id });
  const title = pdfSafeText(apa.listing.title, { maxLength: APA_LIMITS.title });
  doc.setTitle(`Asset Purchase Agreement ${id}`);
  doc.setSubject(`Sale of "${title}" by ${name(apa.seller)} to ${name(apa.buyer)}`);
  doc.setAuthor("Marketplace");
  doc.setCreator("Marketplace deal documents");
  doc.setProducer("pdf-lib 1.17.1");
  doc.setLanguage("en");
  doc.setCreationDate(apa.agreementDate);
  doc.setModificationDate(apa.agreementDate);
}

function styles(regular: PDFFont, bold: PDFFont): Styles {
  return {
    title: { font: bold, size: 20, leading: 28 },
    heading: { font: bold, size: 12, leading: 18 },
    body: { font: regular, size: 10, leading: 14 },
    strong: { font: bold, size: 10, leading: 14 },
    small: { font: regular, size: 8, leading: 11 },
  };
}

function titleBlock(c: Cursor, s: Styles, apa: ApaContent): void {
  c.write("Asset Purchase Agreement", s.title);
  c.gap(6);
  field(c, s, "Agreement no.", [pdfSafeText(apa.dealId, { maxLength: APA_LIMITS.id })]);
  field(c, s, "Agreement date", [dateOnly(apa.agreementDate)]);
  field(c, s, "Payment into escrow", [
    apa.fundedAt === null ? "Not yet received" : `Received ${formatUtc(apa.fundedAt)}`,
  ]);
  if (apa.draft) field(c, s, "Status", ["Draft for review during the Buyer's due diligence"]);
  c.gap(8);
  c.write(
    `This Asset Purchase Agreement (the "Agreement") is made on ${dateOnly(apa.agreementDate)} ` +
      `between the seller and the buyer named below (the "Seller" and the "Buyer") for the sale of ` +
      `the assets listed below, arranged through the online marketplace on which the listing was ` +
      `published (the "Marketplace").`,
    s.body,
  );
}

function partiesSection(c: Cursor, s: Styles, seller: ApaParty, buyer: ApaParty): void {
  heading(c, s, "Parties");
  field(c, s, "Seller", [name(seller), email(seller)]);
  c.gap(4);
  field(c, s, "Buyer", [name(buyer), email(buyer)]);
}

function listingSection(c: Cursor, s: Styles, listing: ApaContent["listing"]): void {
  heading(c, s, "The listing");
  field(c, s, "Title", [pdfSafeText(listing.title, { maxLength: APA_LIMITS.title })]);
  if (listing.url !== null) {
    field(c, s, "URL", [pdfSafeText(listing.url, { maxLength: APA_LIMITS.url })]);
  }
}

function considerationSection(c: Cursor, s: Styles, apa: ApaContent): void {
  heading(c, s, "Consideration");
  field(c, s, "Purchase price", [money(apa.price, apa.currency)]);
  field(c, s, "Marketplace commission", [money(apa.commission, apa.currency)]);
  field(c, s, "Seller's net proceeds", [money(apa.sellerNet, apa.currency)]);
  field(c, s, "Currency", [pdfSafeText(apa.currency, { maxLength: APA_LIMITS.amount })]);
  c.gap(4);
  c.write(
    "The Buyer pays the purchase price into escrow held through the Marketplace. On release the " +
      "Seller receives the purchase price less the Marketplace commission: the net proceeds above.",
    s.body,
  );
}

/**
 * The letter of intent's terms: cash at close, the holdback, the inspection
 * and exclusivity periods, the proposed closing date and each condition,
 * numbered and wrapped like the assets.
 */
function agreedTermsSection(c: Cursor, s: Styles, apa: ApaContent, terms: ApaTerms): void {
  heading(c, s, "Agreed terms");
  c.write(
    `The parties agreed these terms in the Buyer's letter of intent, accepted on ` +
      `${dateOnly(apa.agreementDate)}; they form part of this Agreement.`,
    s.body,
  );
  c.gap(4);
  field(c, s, "Cash at close", [money(terms.cashAtClose, apa.currency)]);
  field(c, s, "Holdback", [
    terms.holdbackDays === 0
      ? "No holdback: the whole purchase price is paid at close"
      : `${money(terms.holdback, apa.currency)}, released to the Seller ${
        countOf(terms.holdbackDays, "day")
      } after the cash at close`,
  ]);
  field(c, s, "Inspection period", [countOf(apa.inspectionDays, "day")]);
  if (terms.exclusivityDays > 0) {
    field(c, s, "Exclusivity", [
      `${countOf(terms.exclusivityDays, "day")} from acceptance, for the Buyer's due diligence`,
    ]);
  }
  if (terms.proposedCloseDate !== null) {
    field(c, s, "Proposed closing date", [
      pdfSafeText(terms.proposedCloseDate, { maxLength: APA_LIMITS.id }),
    ]);
  }
  if (terms.conditions.length === 0) {
    field(c, s, "Conditions", ["None"]);
    return;
  }
  c.gap(4);
  c.room(s.strong.leading + s.body.leading);
  c.write("The sale is subject to these conditions:", s.strong);
  terms.conditions.forEach((condition, i) => {
    c.gap(4);
    numbered(
      c,
      s.body,
      i + 1,
      pdfSafeText(condition, { maxLength: APA_LIMITS.condition, multiline: true }),
    );
  });
}

function assetsSection(c: Cursor, s: Styles, assets: ApaAsset[]): void {
  heading(c, s, "Assets to transfer");
  if (assets.length === 0) {
    c.write(
      "No assets are listed on the handover checklist at the date of this Agreement.",
      s.body,
    );
    return;
  }
  c.write(
    "The Seller transfers these assets, as listed on the Marketplace's handover checklist:",
    s.body,
  );
  assets.forEach((asset, i) => {
    c.gap(4);
    c.room(s.strong.leading + (asset.details === null ? 0 : s.body.leading));
    numbered(c, s.strong, i + 1, pdfSafeText(asset.title, { maxLength: APA_LIMITS.title }));
    if (asset.details !== null) {
      const details = pdfSafeText(asset.details, {
        maxLength: APA_LIMITS.details,
        multiline: true,
      });
      c.write(details, { ...s.body, indent: NUMBER_WIDTH });
    }
  });
}

function inspectionSection(c: Cursor, s: Styles, days: number): void {
  heading(c, s, "Inspection period");
  c.write(
    `The Buyer has ${countOf(days, "day")} to inspect the assets after the Seller has recorded ` +
      `every asset as delivered, and within that period confirms the handover or opens a dispute ` +
      `(see the terms below).`,
    s.body,
  );
}

function termsSection(c: Cursor, s: Styles): void {
  heading(c, s, "Terms");
  APA_TERMS.forEach((clause, i) => {
    if (i > 0) c.gap(4);
    numbered(c, s.body, i + 1, clause);
  });
}

/** Both parties' blocks side by side, kept on one page with the heading: who, a signature line, a date line. */
function signaturesSection(c: Cursor, s: Styles, seller: ApaParty, buyer: ApaParty): void {
  const intro = "The parties sign this Agreement to accept its terms.";
  const half = (c.contentWidth - SIGNATURE_GUTTER) / 2;
  const side = (style: TextStyle, left: string, right: string) => [
    { text: left, style: { ...style, width: half } },
    { text: right, style: { ...style, indent: half + SIGNATURE_GUTTER, width: half } },
  ];
  const rows = [
    side(s.strong, "Signed by the Seller", "Signed by the Buyer"),
    side(s.body, name(seller), name(buyer)),
    side(s.body, email(seller), email(buyer)),
  ];
  const lines = ["Signature", "Date"].map((label) => side(s.small, label, label));
  const height = c.measure([{ text: intro, style: s.body }]) + SIGNATURE_SPACE +
    [...rows, ...lines].reduce((h, row) => h + c.measure(row), 0) + lines.length * SIGNATURE_SPACE;
  heading(c, s, "Signatures", height);
  c.write(intro, s.body);
  c.gap(SIGNATURE_SPACE);
  for (const row of rows) c.columns(row);
  for (const row of lines) {
    c.gap(SIGNATURE_SPACE);
    c.rule(0, half);
    c.rule(half + SIGNATURE_GUTTER, half);
    c.columns(row);
  }
}

/** "Page n of m" at the right of every footer, the document's name at the left. */
function footers(c: Cursor, font: PDFFont): void {
  const size = 8;
  const { margin, size: [width] } = APA_PAGE;
  c.pages.forEach((page, i) => {
    const number = pdfSafeText(`Page ${i + 1} of ${c.pages.length}`);
    const numberWidth = textWidth(number, font, size);
    page.drawText(pdfSafeText("Asset Purchase Agreement"), {
      x: margin.left,
      y: FOOTER_Y,
      font,
      size,
    });
    page.drawText(number, { x: width - margin.right - numberWidth, y: FOOTER_Y, font, size });
  });
}

/** A section heading, kept on the page with the first `keep` points that follow it (two lines). */
function heading(c: Cursor, s: Styles, text: string, keep = 2 * s.body.leading): void {
  c.gap(14);
  c.room(s.heading.leading + keep);
  c.write(text, s.heading);
}

/** A row: `label` in the label column, each of `values` starting a line in the value column. */
function field(c: Cursor, s: Styles, label: string, values: string[]): void {
  c.columns([
    { text: label, style: { ...s.strong, width: LABEL_WIDTH - 8 } },
    { text: values.join("\n"), style: { ...s.body, indent: LABEL_WIDTH } },
  ]);
}

/** An item of a numbered list, its text hanging beside the number. */
function numbered(c: Cursor, style: TextStyle, n: number, text: string): void {
  c.columns([
    { text: `${n}.`, style: { ...style, width: NUMBER_WIDTH } },
    { text, style: { ...style, indent: NUMBER_WIDTH } },
  ]);
}

function name(party: ApaParty): string {
  return pdfSafeText(party.name, { maxLength: APA_LIMITS.name });
}

function email(party: ApaParty): string {
  return pdfSafeText(party.email, { maxLength: APA_LIMITS.email });
}

/** `formatMoney`, or the amount with the currency's code where its symbol is not in the fonts ("INR 1,500.00"). */
function money(amount: string, currency: string): string {
  const safeAmount = pdfSafeText(amount, { maxLength: APA_LIMITS.amount });
  const text = formatMoney(safeAmount, currency);
  if ([...text].every((ch) => /\s/.test(ch) || isWinAnsi(ch.codePointAt(0)!))) return text;
  try {
    return new Intl.NumberFormat("en-US", { style: "currency", currency, currencyDisplay: "code" })
      .format(Number(safeAmount));
  } catch {
    return text;
  }
}

/** "2026-11-23" (UTC). */
function dateOnly(at: Date): string {
  return at.toISOString().slice(0, 10);
}
