/**
 * Bucket and object names: what hosted Storage accepts (its S3-safe
 * character set, `src/storage/limits.ts`), narrowed so that a name can only
 * ever be a path under the bucket's folder: no empty, `.` or `..` segments,
 * at most 1024 bytes. Checked before anything touches the database or disk.
 *
 * @module
 */
import { invalidBucketName, invalidKey } from "./errors.ts";

/** Hosted Storage's object key characters (no `%`, `\`, control or non-ASCII characters). */
const VALID_OBJECT_KEY = /^[A-Za-z0-9_/!.*'() &$=@;:+,?-]+$/;
/** Hosted Storage's bucket name characters (no `/`). */
const VALID_BUCKET_NAME = /^[A-Za-z0-9_!.*'() &$=@;:+,?-]+$/;
/** The longest object name, in bytes (S3's key limit). */
export const MAX_KEY_BYTES = 1024;

/** Throws 400 `InvalidKey` unless `name` is a safe object name. */
export function mustBeValidKey(name: string): void {
  if (
    !VALID_OBJECT_KEY.test(name) ||
    new TextEncoder().encode(name).length > MAX_KEY_BYTES ||
    name.split("/").some((segment) => segment === "" || segment === "." || segment === "..")
  ) {
    throw invalidKey(name);
  }
}

/**
 * Throws 400 `InvalidBucketName` unless `bucket` is a safe bucket name
 * (hosted's rules, and no leading dot: `.`, `..` and the store's own
 * `.uploads` folder are never buckets).
 */
export function mustBeValidBucketName(bucket: string): void {
  if (bucket.length > 100 || !VALID_BUCKET_NAME.test(bucket) || bucket.startsWith(".")) {
    throw invalidBucketName();
  }
}

/**
 * Splits the path after a route's fixed part into bucket and object name,
 * decoded as hosted Storage's router decodes them (`%2F` in the name is a
 * `/`); null when there is no object part. Throws `InvalidKey` on malformed
 * percent-encoding.
 */
export function splitObjectPath(rawPath: string): { bucket: string; name: string } | null {
  const slash = rawPath.indexOf("/");
  if (slash <= 0) return null;
  try {
    return {
      bucket: decodeURIComponent(rawPath.slice(0, slash)),
      name: decodeURIComponent(rawPath.slice(slash + 1)),
    };
  } catch {
    throw invalidKey(rawPath.slice(slash + 1));
  }
}
