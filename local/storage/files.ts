/**
 * The on-disk object store: each object's bytes at `<root>/<bucket>/<name>`.
 * An upload is first streamed to a staging file in `<root>/.uploads/`
 * (counted, hashed, cut off past the size limit), then renamed into place,
 * so a reader never sees half a file. Every path is resolved and checked to
 * lie under the root before it is used.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { dirname, resolve, sep } from "node:path";
import { entityTooLarge, invalidKey, resourceNotFound } from "./errors.ts";
import { mustBeValidBucketName, mustBeValidKey } from "./names.ts";

/** A body written to a staging file, not yet in place. */
export interface StagedFile {
  /** The staging file's path. */
  path: string;
  /** Bytes written. */
  size: number;
  /** The MD5 of the bytes, hex (hosted's S3 ETag of a single-part upload). */
  md5: string;
}

/** An object's bytes opened for reading. */
export interface StoredFile {
  body: ReadableStream<Uint8Array>;
  size: number;
}

/** The staging folder under the root (never a bucket: bucket names cannot start with a dot). */
const STAGING = ".uploads";

/** Files of objects under one root folder. */
export class FileStore {
  private readonly root: string;

  /** A store under `root` (created on the first write). */
  constructor(root: string) {
    this.root = resolve(root);
  }

  /**
   * The path of object `name` in `bucket`: validated again here, resolved,
   * and refused (400 `InvalidKey`) unless it lies under the root.
   */
  pathOf(bucket: string, name: string): string {
    mustBeValidBucketName(bucket);
    mustBeValidKey(name);
    const path = resolve(this.root, bucket, ...name.split("/"));
    if (!path.startsWith(this.root + sep)) throw invalidKey(name);
    return path;
  }

  /**
   * Streams `body` to a new staging file; 413 `EntityTooLarge` (and the
   * staging file removed) as soon as more than `maxBytes` arrive: the rest
   * of the body is not read.
   */
  async stage(body: ReadableStream<Uint8Array> | null, maxBytes: number): Promise<StagedFile> {
    const staging = resolve(this.root, STAGING);
    await Deno.mkdir(staging, { recursive: true });
    const path = resolve(staging, `${crypto.randomUUID()}.part`);
    const file = await Deno.open(path, { write: true, createNew: true });
    const hash = createHash("md5");
    let size = 0;
    try {
      if (body) {
        const reader = body.getReader();
        try {
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            size += value.byteLength;
            if (size > maxBytes) throw entityTooLarge();
            hash.update(value);
            for (let offset = 0; offset < value.byteLength;) {
              offset += await file.write(value.subarray(offset));
            }
          }
        } finally {
          // Not cancelled: the server would then read the rest of the body.
          reader.releaseLock();
        }
      }
      await file.sync();
    } catch (error) {
      file.close();
      await Deno.remove(path).catch(() => {});
      throw error;
    }
    file.close();
    return { path, size, md5: hash.digest("hex") };
  }

  /**
   * Moves a staged file into place as object `name` of `bucket`, replacing
   * what was there. 400 `InvalidKey` when the name collides with a folder or
   * runs through a file (`a` stored, then `a/b`).
   */
  async commit(staged: StagedFile, bucket: string, name: string): Promise<void> {
    const path = this.pathOf(bucket, name);
    try {
      await Deno.mkdir(dirname(path), { recursive: true });
      await Deno.rename(staged.path, path);
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (code === "EEXIST" || code === "EISDIR" || code === "ENOTDIR" || code === "ENOTEMPTY") {
        throw invalidKey(name);
      }
      throw error;
    }
  }

  /** Removes a staged file that was not committed (no error if it is gone). */
  async discard(staged: StagedFile): Promise<void> {
    await Deno.remove(staged.path).catch(() => {});
  }

  /** The size of object `name`'s file; 404 when the file is missing. */
  async sizeOf(bucket: string, name: string): Promise<number> {
    try {
      const info = await Deno.stat(this.pathOf(bucket, name));
      if (!info.isFile) throw resourceNotFound();
      return info.size;
    } catch (error) {
      if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory) {
        throw resourceNotFound();
      }
      throw error;
    }
  }

  /** Opens object `name`'s file for reading; 404 when the file is missing. */
  async open(bucket: string, name: string): Promise<StoredFile> {
    let file: Deno.FsFile;
    try {
      file = await Deno.open(this.pathOf(bucket, name), { read: true });
    } catch (error) {
      if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory) {
        throw resourceNotFound();
      }
      throw error;
    }
    try {
      const info = await file.stat();
      if (!info.isFile) throw resourceNotFound();
      return { body: file.readable, size: info.size };
    } catch (error) {
      file.close();
      throw error;
    }
  }
}
