/**
 * Safe object names for uploaded files. A user's file name becomes part of
 * a Storage key and of a download's `Content-Disposition`, so it must be a
 * plain name: a name no browser produces (folders, "..", control or
 * invisible direction characters) is refused; the rest is reduced to a short
 * name of characters every Storage backend and URL accepts.
 *
 * @module
 */

/** The longest sanitized file name (characters). */
export const MAX_FILE_NAME_LENGTH = 100;

/** Characters kept as they are; everything else becomes "_". */
const UNSAFE = /[^A-Za-z0-9._() -]/g;

/** Path separators, control characters, invisible format characters (bidi overrides, zero-width). */
const TAMPERED = /[\\/\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

/** A file name checked: the safe name, or why it was refused. */
export type FileNameCheck = { name: string } | { refused: string };

/**
 * Checks and sanitizes `name`: refused when it holds a path separator, a
 * control or invisible format character (e.g. U+202E, which makes
 * "invoice‮fdp.exe" read as "invoice.pdf"), or nothing but dots; otherwise
 * accents are folded ("résumé" → "resume"), other characters outside
 * letters, digits, `._()-` and space become "_", runs collapse, leading dots
 * go (no hidden files), and it is cut to {@linkcode MAX_FILE_NAME_LENGTH}
 * characters keeping the extension. Refused too when no letter or digit is
 * left.
 */
export function checkFileName(name: string): FileNameCheck {
  if (TAMPERED.test(name)) {
    return { refused: "a file name cannot hold folders, control or invisible characters" };
  }
  const plain = name.normalize("NFKD")
    .replace(/\p{M}/gu, "")
    .replace(UNSAFE, "_")
    .replace(/_{2,}/g, "_")
    .replace(/ {2,}/g, " ")
    .replace(/^[. _]+/, "")
    .replace(/[. ]+$/, "");
  if (!/[A-Za-z0-9]/.test(plain)) return { refused: "the file name has no letters or digits" };
  return { name: clip(plain) };
}

/** `name` cut to the limit, keeping a short extension. */
function clip(name: string): string {
  if (name.length <= MAX_FILE_NAME_LENGTH) return name;
  const dot = name.lastIndexOf(".");
  const extension = dot > 0 && name.length - dot <= 10 ? name.slice(dot) : "";
  return name.slice(0, MAX_FILE_NAME_LENGTH - extension.length).replace(/[. ]+$/, "") + extension;
}
