/**
 * zod schemas of the document functions (`docs/documents.md`): signed
 * uploads of deal files, the generated asset purchase agreement, and the
 * handover checklist's vocabulary the frontend renders.
 *
 * @module
 */
import { z } from "zod";
import { MAX_UPLOAD_BYTES, UPLOAD_CONTENT_TYPES } from "./documents.ts";
import { DealId } from "./schemas.ts";

export {
  APA_URL_SECONDS,
  DEAL_DOCUMENTS_BUCKET,
  MAX_UPLOAD_BYTES,
  UPLOAD_CONTENT_TYPES,
} from "./documents.ts";

/** What an uploaded file is; `apa` (the generated agreement) is the server's own kind. */
export const UploadKind = z.enum([
  "signed_apa",
  "transfer_proof",
  "financials",
  "credentials",
  "other",
]);
/** What an uploaded file is. */
export type UploadKind = z.infer<typeof UploadKind>;

/** A document's kind in `deal_documents`. */
export type DocumentKind = UploadKind | "apa";

/** `deal-create-upload-url` request. */
export const CreateUploadUrlInput = z.object({
  dealId: DealId,
  /** The file's name as the user picked it; sanitized by the server. */
  fileName: z.string().min(1).max(1000),
  /** Its MIME type (case and parameters such as `; charset=utf-8` are ignored). */
  contentType: z.string().trim().toLowerCase().transform((type) => type.split(";")[0]!.trim())
    .pipe(z.enum(UPLOAD_CONTENT_TYPES)),
  /** Its size in bytes, at most {@linkcode MAX_UPLOAD_BYTES}. */
  size: z.number().int().min(1).max(MAX_UPLOAD_BYTES),
  kind: UploadKind,
});

/** `deal-create-upload-url` response: where to PUT the file (supabase-js `uploadToSignedUrl`). */
export const CreateUploadUrlOutput = z.object({
  /** The `deal_documents` row, `pending` until the upload is confirmed. */
  documentId: z.uuid(),
  /** The object's name in {@linkcode DEAL_DOCUMENTS_BUCKET}. */
  path: z.string(),
  signedUrl: z.url(),
  token: z.string().min(1),
  /** Seconds the URL stays valid. */
  expiresIn: z.number().int().positive(),
});

/** `generate-apa-pdf` response: the agreement's current version. */
export const GenerateApaOutput = z.object({
  documentId: z.uuid(),
  path: z.string(),
  /** A download URL valid for {@linkcode APA_URL_SECONDS} seconds. */
  signedUrl: z.url(),
  /** Hex SHA-256 of the PDF. */
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  /** The agreement's version in this deal (1, 2, ...). */
  version: z.number().int().min(1),
  /** Whether this call made a new version (false: the content had not changed). */
  created: z.boolean(),
});

/** A handover step's state: pending → delivered → confirmed, delivered ⇄ disputed. */
export const HandoverStepStatus = z.enum(["pending", "delivered", "disputed", "confirmed"]);
/** A handover step's state. */
export type HandoverStepStatus = z.infer<typeof HandoverStepStatus>;
