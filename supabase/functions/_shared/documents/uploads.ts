/**
 * Signed uploads of deal files (`deal-create-upload-url`). The register row
 * is written first (`pending`), then Storage signs an upload URL for exactly
 * that object: an upload can never exist without its row. The participant
 * PUTs the file to the URL (supabase-js `uploadToSignedUrl`); the bucket
 * enforces the size limit and the allowed types on the bytes themselves, and
 * `confirm_deal_documents()` (the participant's RPC after the upload, and
 * every run of `apa-auto-handover`) marks the row `uploaded` with the size
 * and type Storage recorded. An unused URL's row is `expired` by the job.
 *
 * @module
 */
import type { z } from "zod";
import type {
  CreateUploadUrlInput,
  CreateUploadUrlOutput,
} from "../../../../shared/document_schemas.ts";
import { DEAL_DOCUMENTS_BUCKET } from "../../../../shared/documents.ts";
import type { Context } from "../platform/context.ts";
import { conflict, invalidInput } from "../platform/errors.ts";
import { storageError, storageFor } from "../platform/storage.ts";
import { dealTakingDocuments } from "./deal_access.ts";
import { documentCount, MAX_DOCUMENTS_PER_DEAL, uploadPath } from "./document_rows.ts";
import { checkFileName } from "./file_names.ts";

/** How long a signed upload URL is valid: Storage's fixed 2 hours. */
export const UPLOAD_URL_SECONDS = 2 * 60 * 60;

/** A signed upload URL for one file of `uploaderId`'s deal; see the module doc. */
export async function createUploadUrl(
  ctx: Context,
  uploaderId: string,
  input: z.infer<typeof CreateUploadUrlInput>,
): Promise<z.infer<typeof CreateUploadUrlOutput>> {
  const checked = checkFileName(input.fileName);
  if ("refused" in checked) {
    throw invalidInput(`Cannot accept the file name: ${checked.refused}`, { field: "fileName" });
  }
  const fileName = checked.name;
  const path = uploadPath(input.dealId, input.kind, fileName);
  const expiresAt = new Date(ctx.now().getTime() + UPLOAD_URL_SECONDS * 1000);
  // Storage unconfigured (503 not_configured) must leave no row behind.
  const storage = await storageFor(ctx);
  const documentId = await ctx.db.tx(async (sql) => {
    await dealTakingDocuments(sql, input.dealId, "upload documents");
    // Serializes uploads of one deal for the count below (no network inside).
    await sql.query("select pg_advisory_xact_lock(hashtextextended($1, 0))", [
      `deal-documents:${input.dealId}`,
    ]);
    if (await documentCount(sql, input.dealId) >= MAX_DOCUMENTS_PER_DEAL) {
      throw conflict(
        `Cannot upload more: a deal holds at most ${MAX_DOCUMENTS_PER_DEAL} documents`,
        {
          reason: "too_many_documents",
        },
      );
    }
    const row = await sql.one<{ id: string }>(
      `insert into public.deal_documents
         (deal_id, uploaded_by, kind, path, file_name, content_type, size_bytes, upload_expires_at)
       values ($1, $2, $3, $4, $5, $6, $7, $8)
       returning id`,
      [
        input.dealId,
        uploaderId,
        input.kind,
        path,
        fileName,
        input.contentType,
        input.size,
        expiresAt,
      ],
    );
    return row.id;
  });
  const { data, error } = await storage.from(DEAL_DOCUMENTS_BUCKET).createSignedUploadUrl(path);
  if (error || !data) {
    // No URL, no upload: the row goes (it could only ever expire).
    await ctx.db.query("delete from public.deal_documents where id = $1 and status = 'pending'", [
      documentId,
    ]).catch((cleanup) =>
      ctx.log.warn("cannot remove the unsigned upload", { error: String(cleanup) })
    );
    throw storageError("sign the upload URL", error ?? { message: "no URL returned" });
  }
  return {
    documentId,
    path,
    signedUrl: data.signedUrl,
    token: data.token,
    expiresIn: UPLOAD_URL_SECONDS,
  };
}
