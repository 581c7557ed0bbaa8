/**
 * A small `multipart/form-data` reader for upload bodies. supabase-js sends
 * the file as a part with an empty field name (`form.append('', file)`),
 * which `Request.formData()` drops, so the parts are read here: the body is
 * read up to a byte limit (then 413), and split on its boundary.
 *
 * @module
 */
import { readAtMost } from "../../supabase/functions/_shared/lib/bytes.ts";
import { entityTooLarge, noContentProvided } from "./errors.ts";

/** One part of a multipart body. */
export interface Part {
  /** The field name (may be empty). */
  name: string;
  /** The file name, for file parts. */
  filename?: string;
  /** The part's Content-Type, if it has one. */
  contentType?: string;
  data: Uint8Array;
}

/** Reads `body` whole, failing with 413 `EntityTooLarge` past `limit` bytes (the rest unread). */
export async function readLimited(
  body: ReadableStream<Uint8Array> | null,
  limit: number,
): Promise<Uint8Array> {
  if (!body) return new Uint8Array();
  // Not cancelled: the server would then read the rest of the body.
  const { bytes, truncated } = await readAtMost(body, limit, { cancelRest: false });
  if (truncated) throw entityTooLarge();
  return bytes;
}

/** The parts of multipart `body` whose Content-Type is `contentType`; 400 when malformed. */
export function parseMultipart(body: Uint8Array, contentType: string): Part[] {
  const boundary = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  if (!boundary) throw noContentProvided();
  const encoder = new TextEncoder();
  const delimiter = encoder.encode(`--${boundary[1] ?? boundary[2]}`);
  const separator = encoder.encode("\r\n\r\n");
  const parts: Part[] = [];
  let at = indexOf(body, delimiter, 0);
  if (at < 0) throw noContentProvided();
  for (;;) {
    at += delimiter.length;
    if (body[at] === 0x2d && body[at + 1] === 0x2d) return parts; // "--": the closing delimiter
    if (body[at] === 0x0d && body[at + 1] === 0x0a) at += 2;
    const headersEnd = indexOf(body, separator, at);
    if (headersEnd < 0) throw noContentProvided();
    const headers = new TextDecoder().decode(body.subarray(at, headersEnd));
    const dataStart = headersEnd + separator.length;
    const next = indexOf(body, delimiter, dataStart);
    if (next < 0) throw noContentProvided();
    // The data ends before the CRLF that precedes the next delimiter.
    const dataEnd = body[next - 2] === 0x0d && body[next - 1] === 0x0a ? next - 2 : next;
    parts.push({ ...describePart(headers), data: body.subarray(dataStart, dataEnd) });
    at = next;
  }
}

/** The field name, file name and type from a part's headers. */
function describePart(headers: string): Omit<Part, "data"> {
  let disposition = "";
  let contentType: string | undefined;
  for (const line of headers.split("\r\n")) {
    const colon = line.indexOf(":");
    if (colon < 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (name === "content-disposition") disposition = value;
    else if (name === "content-type") contentType = value;
  }
  const param = (key: string) =>
    new RegExp(`(?:^|;)\\s*${key}="((?:[^"\\\\]|\\\\.)*)"`, "i").exec(disposition)?.[1] ??
      new RegExp(`(?:^|;)\\s*${key}=([^;]*)`, "i").exec(disposition)?.[1]?.trim();
  return { name: param("name") ?? "", filename: param("filename"), contentType };
}

/** The index of `needle` in `haystack` from `from`, or -1. */
function indexOf(haystack: Uint8Array, needle: Uint8Array, from: number): number {
  const first = needle[0]!;
  const last = haystack.length - needle.length;
  for (
    let i = haystack.indexOf(first, from);
    i >= 0 && i <= last;
    i = haystack.indexOf(first, i + 1)
  ) {
    let match = true;
    for (let j = 1; j < needle.length; j++) {
      if (haystack[i + j] !== needle[j]) {
        match = false;
        break;
      }
    }
    if (match) return i;
  }
  return -1;
}
