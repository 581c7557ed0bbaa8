/**
 * A deal document as the server reads it (`public.deal_documents`): one
 * column list for every query that reads one, and the object names the
 * register uses in the bucket.
 *
 * @module
 */
import type { DocumentKind } from "../../../../shared/document_schemas.ts";
import type { Sql } from "../platform/db.ts";
import { randomHex } from "../lib/hex.ts";

/** A `public.deal_documents` row. */
export interface DocumentRow {
  id: string;
  deal_id: string;
  uploaded_by: string | null;
  kind: DocumentKind;
  path: string;
  file_name: string;
  content_type: string;
  size_bytes: number;
  status: "pending" | "uploaded" | "expired";
  sha256: string | null;
  version: number | null;
  upload_expires_at: Date | null;
  uploaded_at: Date | null;
  created_at: Date;
}

/** The columns of {@linkcode DocumentRow}, for a `from public.deal_documents dd`. */
export const DOCUMENT_COLUMNS = `dd.id, dd.deal_id, dd.uploaded_by, dd.kind, dd.path, dd.file_name,
  dd.content_type, dd.size_bytes::float8 as size_bytes, dd.status, dd.sha256, dd.version,
  dd.upload_expires_at, dd.uploaded_at, dd.created_at`;

/** The most documents one deal may hold (uploads and agreement versions). */
export const MAX_DOCUMENTS_PER_DEAL = 200;

/** How many documents deal `dealId` holds. */
export async function documentCount(sql: Sql, dealId: string): Promise<number> {
  const row = await sql.one<{ n: number }>(
    "select count(*)::int as n from public.deal_documents where deal_id = $1",
    [dealId],
  );
  return row.n;
}

/** The object name of an upload: `<dealId>/<kind>/<16 random hex>-<safe name>`. */
export function uploadPath(dealId: string, kind: DocumentKind, safeName: string): string {
  return `${dealId}/${kind}/${randomHex(8)}-${safeName}`;
}

/** The object name of an agreement: content-addressed, `<dealId>/apa/<sha256>.pdf`. */
export function apaPath(dealId: string, sha256: string): string {
  return `${dealId}/apa/${sha256}.pdf`;
}
