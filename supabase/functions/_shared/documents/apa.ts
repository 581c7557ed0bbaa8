/**
 * The asset purchase agreement of a deal (`generate-apa-pdf`):
 *
 * 1. Read, outside any transaction: the deal (with the letter-of-intent terms
 *    agreed when it was made, if any), its listing, both parties' profiles
 *    and the handover checklist (the assets) → {@linkcode ApaContent}.
 * 2. Render the PDF (`apa_pdf.ts`; equal content gives equal bytes) and hash it.
 * 3. Store it, unless this deal already has that hash: content-addressed at
 *    `<dealId>/apa/<sha256>.pdf` (an upsert of identical bytes is harmless,
 *    so two concurrent calls cannot conflict).
 * 4. Record it in a short transaction under the deal's row lock: a new hash
 *    is the next version; a hash already recorded is that version. Older
 *    versions are kept.
 * 5. Sign a download URL for the caller.
 *
 * @module
 */
import type { z } from "zod";
import type { GenerateApaOutput } from "../../../../shared/document_schemas.ts";
import { APA_URL_SECONDS, DEAL_DOCUMENTS_BUCKET } from "../../../../shared/documents.ts";
import type { Context } from "../platform/context.ts";
import type { Sql } from "../platform/db.ts";
import type { DealRow } from "../deals/deal_rows.ts";
import { sha256Hex } from "../lib/hex.ts";
import { storageError, storageFor } from "../platform/storage.ts";
import { holdbackOf, type OfferTerms } from "../../../../shared/offer_terms.ts";
import type { ApaContent, ApaTerms } from "./apa_content.ts";
import { renderApaPdf } from "./apa_pdf.ts";
import { dealTakingDocuments } from "./deal_access.ts";
import { apaPath } from "./document_rows.ts";

/** An agreement version as recorded. */
interface ApaVersion {
  id: string;
  version: number;
}

/** Generates (or finds) the current agreement of `dealId` for `callerId`; see the module doc. */
export async function generateApa(
  ctx: Context,
  callerId: string,
  dealId: string,
): Promise<z.infer<typeof GenerateApaOutput>> {
  const deal = await dealTakingDocuments(ctx.db, dealId, "generate the agreement");
  const content = await apaContentOf(ctx.db, deal, ctx.env.values.HANDOVER_INSPECTION_DAYS);
  const pdf = await renderApaPdf(content);
  const sha256 = await sha256Hex(pdf);
  const path = apaPath(deal.id, sha256);
  const bucket = (await storageFor(ctx)).from(DEAL_DOCUMENTS_BUCKET);

  let recorded = await findVersion(ctx.db, deal.id, sha256);
  let created = false;
  if (!recorded) {
    const { error } = await bucket.upload(path, pdf, {
      contentType: "application/pdf",
      upsert: true,
    });
    if (error) throw storageError("store the agreement", error);
    ({ version: recorded, created } = await ctx.db.tx((sql) =>
      recordVersion(sql, deal.id, callerId, sha256, pdf)
    ));
  }
  const { data, error } = await bucket.createSignedUrl(path, APA_URL_SECONDS);
  if (error || !data) {
    throw storageError("sign the agreement's URL", error ?? { message: "no URL" });
  }
  return {
    documentId: recorded.id,
    path,
    signedUrl: data.signedUrl,
    sha256,
    version: recorded.version,
    created,
  };
}

/**
 * What the agreement of `deal` says, read from the database. The deal's
 * agreed terms (`deals.terms`) set the inspection period; without them it is
 * `inspectionDays`. A deal in due diligence gets a draft.
 */
export async function apaContentOf(
  sql: Sql,
  deal: DealRow,
  inspectionDays: number,
): Promise<ApaContent> {
  const facts = await sql.one<{
    listing_title: string;
    listing_url: string | null;
    seller_name: string | null;
    seller_email: string | null;
    buyer_name: string | null;
    buyer_email: string | null;
    commission: string;
  }>(
    `select l.title as listing_title, l.url as listing_url,
            sp.full_name as seller_name, coalesce(sp.email, su.email) as seller_email,
            bp.full_name as buyer_name, coalesce(bp.email, bu.email) as buyer_email,
            coalesce(d.commission, public.deal_commission(d.amount, d.currency, d.seller_id))::text
              as commission
     from public.deals d
     join public.listings l on l.id = d.listing_id
     join auth.users su on su.id = d.seller_id
     join auth.users bu on bu.id = d.buyer_id
     left join public.profiles sp on sp.id = d.seller_id
     left join public.profiles bp on bp.id = d.buyer_id
     where d.id = $1`,
    [deal.id],
  );
  const steps = await sql.query<{ title: string; details: string | null }>(
    `select title, details from public.deal_handover_steps where deal_id = $1 order by position`,
    [deal.id],
  );
  // Stored by offer_terms_checked(): every key present, checked (the deal's own row).
  const agreed = deal.terms;
  const party = (name: string | null, email: string | null) => ({
    name: name?.trim() || email || "(no name given)",
    email: email ?? "(no e-mail address)",
  });
  return {
    dealId: deal.id,
    agreementDate: deal.created_at,
    fundedAt: deal.funded_at,
    seller: party(facts.seller_name, facts.seller_email),
    buyer: party(facts.buyer_name, facts.buyer_email),
    listing: { title: facts.listing_title, url: facts.listing_url },
    price: deal.amount,
    commission: facts.commission,
    sellerNet: minus(deal.amount, facts.commission),
    currency: deal.currency,
    assets: steps.map((step) => ({ title: step.title, details: step.details })),
    inspectionDays: agreed?.inspection_days ?? inspectionDays,
    terms: agreed === null ? null : apaTermsOf(agreed, deal.amount),
    draft: deal.status === "in_diligence",
  };
}

/** The agreement's view of stored terms on a deal of `price`: the holdback is the rest of the price. */
function apaTermsOf(terms: OfferTerms, price: string): ApaTerms {
  return {
    cashAtClose: terms.cash_at_close,
    holdback: holdbackOf(price, terms),
    holdbackDays: terms.holdback_days,
    exclusivityDays: terms.exclusivity_days,
    proposedCloseDate: terms.proposed_close_date,
    conditions: terms.conditions,
  };
}

/** `a − b` of two decimal strings with two places, exactly. */
function minus(a: string, b: string): string {
  const cents = (value: string) => BigInt(value.replace(".", ""));
  const difference = cents(a) - cents(b);
  const sign = difference < 0n ? "-" : "";
  const digits = (difference < 0n ? -difference : difference).toString().padStart(3, "0");
  return `${sign}${digits.slice(0, -2)}.${digits.slice(-2)}`;
}

/** The recorded version of `sha256` in deal `dealId`, if any. */
function findVersion(sql: Sql, dealId: string, sha256: string): Promise<ApaVersion | null> {
  return sql.maybeOne<ApaVersion>(
    `select id, version from public.deal_documents
     where deal_id = $1 and kind = 'apa' and sha256 = $2`,
    [dealId, sha256],
  );
}

/** Under the deal's row lock: the version of `sha256`, recorded as the next one if new. */
async function recordVersion(
  sql: Sql,
  dealId: string,
  callerId: string,
  sha256: string,
  pdf: Uint8Array,
): Promise<{ version: ApaVersion; created: boolean }> {
  await sql.query("select 1 from public.deals where id = $1 for update", [dealId]);
  const existing = await findVersion(sql, dealId, sha256);
  if (existing) return { version: existing, created: false };
  const version = await sql.one<ApaVersion>(
    `insert into public.deal_documents
       (deal_id, uploaded_by, kind, path, file_name, content_type, size_bytes, status, sha256,
        version, uploaded_at)
     select $1, $2, 'apa', $3, 'asset-purchase-agreement-v' || v.next || '.pdf',
            'application/pdf', $4, 'uploaded', $5, v.next, now()
     from (select coalesce(max(version), 0) + 1 as next from public.deal_documents
           where deal_id = $1 and kind = 'apa') v
     returning id, version`,
    [dealId, callerId, apaPath(dealId, sha256), pdf.byteLength, sha256],
  );
  return { version, created: true };
}
