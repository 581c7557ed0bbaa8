/**
 * What an Asset Purchase Agreement says: the deal's facts as the renderer
 * (`apa_pdf.ts`) takes them, and the governing terms every agreement carries.
 *
 * @module
 */

/** A party to the agreement as it names them. */
export interface ApaParty {
  name: string;
  email: string;
}

/** One item of the handover checklist: something the seller transfers. */
export interface ApaAsset {
  title: string;
  details: string | null;
}

/**
 * The letter-of-intent terms the parties agreed before the deal (the frozen
 * `deals.terms`), as the agreement states them. Amounts are major units as
 * stored, in the agreement's currency.
 */
export interface ApaTerms {
  /** Paid to the Seller when escrow releases the purchase price, e.g. "900.00". */
  cashAtClose: string;
  /** The rest of the purchase price, held back ("0.00" when none). */
  holdback: string;
  /** How long after the cash at close the holdback is released; 0 without a holdback. */
  holdbackDays: number;
  /** The Buyer's exclusivity for due diligence, in days from acceptance; 0 for none. */
  exclusivityDays: number;
  /** The closing date the parties proposed ("2027-01-31"), if any. */
  proposedCloseDate: string | null;
  /** Further conditions of the sale, in order (at most 10). */
  conditions: string[];
}

/** Everything an agreement states about one deal; equal content renders equal bytes. */
export interface ApaContent {
  dealId: string;
  /** The agreement's date (the deal's creation); also the PDF's creation/modification date, so equal content gives equal bytes. */
  agreementDate: Date;
  /** When the buyer's payment was received into escrow, if it was. */
  fundedAt: Date | null;
  seller: ApaParty;
  buyer: ApaParty;
  listing: { title: string; url: string | null };
  /** Major units as stored, e.g. "1500.00"; currency ISO 4217 upper case. */
  price: string;
  commission: string;
  sellerNet: string;
  currency: string;
  /** The handover checklist, in order: what is transferred. */
  assets: ApaAsset[];
  /**
   * Days the buyer has to inspect after the seller delivered everything: the
   * agreed `inspection_days` when the deal has terms, else the platform's.
   */
  inspectionDays: number;
  /** The agreed letter-of-intent terms; null for a deal made on a plain offer. */
  terms: ApaTerms | null;
  /** True while the Buyer is in due diligence: the agreement is a draft to review. */
  draft: boolean;
}

/**
 * The governing terms, one clause each, in order (the renderer numbers them).
 * "Seller", "Buyer", "Marketplace" and "Agreement" are defined in the
 * agreement's opening paragraph; amounts and the inspection period are the
 * ones the agreement states above its terms.
 */
export const APA_TERMS: readonly string[] = [
  "Sale and transfer. The Seller sells and the Buyer buys the assets listed in this Agreement, " +
  "with all rights the Seller holds in them, free of any charge or claim of a third party. " +
  "The Seller delivers each asset, with the files, credentials and access needed to use it, " +
  "and records each delivery on the Marketplace's handover checklist.",
  "Escrow. The Buyer pays the purchase price into escrow held through the Marketplace. " +
  "The Marketplace releases the purchase price, less the Marketplace commission stated in this " +
  "Agreement, to the Seller once the Buyer confirms the handover or the inspection period ends " +
  "without a dispute. Neither party may claim the escrowed amount in any other way.",
  "Seller's warranties. The Seller warrants that it owns the assets or is entitled to sell them; " +
  "that the assets, and their use as described in the listing, do not infringe the intellectual " +
  "property or other rights of any third party; and that the information the Seller gave in the " +
  "listing and during the sale is accurate and complete in all material respects.",
  "Inspection and disputes. The Buyer may inspect the assets during the inspection period stated " +
  "in this Agreement, counted from the time the Seller has recorded every asset as delivered. " +
  "Within that period the Buyer either confirms the handover or opens a dispute through the " +
  "Marketplace, giving its reasons. If the Buyer does neither, the handover is treated as " +
  "confirmed when the period ends.",
  "Confidentiality. Each party keeps confidential the credentials, access keys and other " +
  "non-public information it receives under this Agreement and uses them only to complete the " +
  "transfer. After the handover the Buyer replaces the transferred passwords and keys, and the " +
  "Seller keeps no access to the assets.",
  "Refunds. Refunds, including those after a dispute or a failed handover, are made as the " +
  "Marketplace's terms of service provide. When the purchase price is refunded, the Buyer " +
  "returns the assets it received and keeps no copies of them.",
  "Entire agreement. This Agreement, with the Marketplace's terms of service, is the entire " +
  "agreement between the parties about this sale and replaces any earlier offer, statement or " +
  "understanding about it. A change is valid only if both parties agree to it in writing through " +
  "the Marketplace.",
  "Governing law. This Agreement is governed by the law, and disputes about it are resolved in " +
  "the forum, that the Marketplace's terms of service name for transactions between its users.",
];
