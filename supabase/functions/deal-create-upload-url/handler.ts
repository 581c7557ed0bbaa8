/**
 * `deal-create-upload-url` (the deal's buyer or seller)
 * `{ dealId, fileName, contentType, size, kind }` → `{ documentId, path,
 * signedUrl, token, expiresIn }`: a signed URL to upload one file into the
 * private bucket `deal-documents` under the deal's folder. PDF, PNG, JPEG,
 * ZIP or plain text, at most 25 MiB (400 otherwise); the file name is
 * sanitized and prefixed with a random id; 409 for a cancelled or refunded
 * deal. The file is registered `pending` in `deal_documents` and confirmed
 * `uploaded` once it is stored (`_shared/documents/uploads.ts`).
 *
 * @module
 */
import { createUploadUrl } from "../_shared/documents/uploads.ts";
import { defineFunction } from "../_shared/platform/function.ts";

export default defineFunction({
  name: "deal-create-upload-url",
  access: "deal-participant",
  group: "documents",
  summary: "Signed upload URL for a deal document",
  input: () =>
    import("../../../shared/document_schemas.ts").then((schemas) => schemas.CreateUploadUrlInput),
  output: "CreateUploadUrlOutput",
  rateLimit: { limit: 30, windowSeconds: 60 },
  handle({ input, caller, ctx }) {
    return createUploadUrl(ctx, caller.id, input);
  },
});
