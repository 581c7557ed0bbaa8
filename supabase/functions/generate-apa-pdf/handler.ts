/**
 * `generate-apa-pdf` (the deal's buyer or seller) `{ dealId }` → `{
 * documentId, path, signedUrl, sha256, version, created }`: the deal's asset
 * purchase agreement as a PDF — the parties, the listing, price, commission
 * and the seller's net, the letter-of-intent terms the deal was agreed on
 * (cash at close, holdback, inspection and exclusivity periods, proposed
 * closing date, conditions; only when it has them), the assets from the
 * handover checklist, the terms and both signature blocks — stored in the
 * bucket `deal-documents` and recorded as `kind = apa` with its hash. During
 * due diligence (`in_diligence`) it is marked a draft for review. Calling it
 * again after the deal, the parties or the checklist changed makes a new
 * version (older ones are kept); without a change it answers the current
 * version (`created: false`). 409 for a cancelled or refunded deal
 * (`_shared/documents/apa.ts`).
 *
 * @module
 */
import { generateApa } from "../_shared/documents/apa.ts";
import { defineFunction } from "../_shared/platform/function.ts";

export default defineFunction({
  name: "generate-apa-pdf",
  access: "deal-participant",
  group: "documents",
  summary: "Generates the asset purchase agreement PDF",
  input: () =>
    import("../../../shared/schemas.ts").then((schemas) => schemas.CreateDealPaymentInput),
  output: "GenerateApaOutput",
  rateLimit: { limit: 10, windowSeconds: 60 },
  handle({ input, caller, ctx }) {
    return generateApa(ctx, caller.id, input.dealId);
  },
});
