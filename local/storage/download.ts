/**
 * Answers a download with an object's bytes and the headers hosted Storage's
 * asset renderer sets (`src/storage/renderer/renderer.ts`): Content-Type
 * (the stored type; `text/html` is served as `text/plain`), Content-Length,
 * ETag, Last-Modified, Cache-Control (or Expires for signed URLs),
 * `X-Robots-Tag: none`, and Content-Disposition when `download` is asked.
 *
 * @module
 */
import type { FileStore } from "./files.ts";
import type { StoredObject } from "./objects.ts";

/** How to render one download. */
export interface RenderOptions {
  bucket: string;
  name: string;
  object: StoredObject;
  /** The `download` query parameter: absent, `""` (attachment) or a file name. */
  download: string | null;
  /** A signed URL's expiry (epoch seconds): sent as Expires instead of Cache-Control. */
  expires?: number;
  /** HEAD: headers only. */
  head: boolean;
}

/** The object's bytes (or, for HEAD, just their headers). */
export async function renderObject(files: FileStore, options: RenderOptions): Promise<Response> {
  const metadata = options.object.metadata ?? {};
  const headers = new Headers({
    "Content-Type": normalizeContentType(metadata.mimetype ?? "application/octet-stream"),
    "X-Robots-Tag": "none",
  });
  if (metadata.eTag) headers.set("ETag", metadata.eTag);
  const lastModified = metadata.lastModified ? new Date(metadata.lastModified) : undefined;
  if (lastModified && !Number.isNaN(lastModified.getTime())) {
    headers.set("Last-Modified", lastModified.toUTCString());
  }
  if (options.expires !== undefined) {
    headers.set("Expires", new Date(options.expires * 1000).toUTCString());
  } else if (metadata.cacheControl) {
    headers.set("Cache-Control", metadata.cacheControl);
  }
  if (options.download !== null) {
    if (options.download === "") {
      headers.set("Content-Disposition", "attachment;");
    } else {
      const encoded = encodeURIComponent(options.download);
      headers.set(
        "Content-Disposition",
        `attachment; filename=${encoded}; filename*=UTF-8''${encoded}`,
      );
    }
  }
  if (options.head) {
    headers.set("Content-Length", String(await files.sizeOf(options.bucket, options.name)));
    return new Response(null, { status: 200, headers });
  }
  const file = await files.open(options.bucket, options.name);
  headers.set("Content-Length", String(file.size));
  return new Response(file.body, { status: 200, headers });
}

function normalizeContentType(contentType: string): string {
  return contentType.includes("text/html") ? "text/plain" : contentType;
}
