/**
 * The deal documents' constants (`docs/documents.md`): the bucket, the upload
 * limits and the agreement's link lifetime. Plain values, no schema, so the
 * server reads them without loading zod; `document_schemas.ts` re-exports
 * them with the schemas.
 *
 * @module
 */

/** The bucket every deal file lives in (private; `<dealId>/…`). */
export const DEAL_DOCUMENTS_BUCKET = "deal-documents";

/** The largest file a participant may upload: 25 MiB (the bucket's limit too). */
export const MAX_UPLOAD_BYTES = 25 * 1024 * 1024;

/**
 * The file types a participant may upload: PDF, PNG, JPEG, ZIP (as most
 * browsers and as Windows name it) and plain text. The bucket allows the same.
 */
export const UPLOAD_CONTENT_TYPES = [
  "application/pdf",
  "image/png",
  "image/jpeg",
  "application/zip",
  "application/x-zip-compressed",
  "text/plain",
] as const;

/** How long the agreement's download URL is valid (seconds). */
export const APA_URL_SECONDS = 600;
