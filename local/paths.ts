/**
 * Paths of the repository and of the git-ignored local state folder.
 *
 * @module
 */
import { fileURLToPath } from "node:url";

/** The repository root. */
export const REPO_ROOT = fileURLToPath(new URL("../", import.meta.url));
/** Git-ignored local state (database cluster, signing key); `LOCAL_STATE_DIR` overrides. */
export const LOCAL_STATE_DIR = Deno.env.get("LOCAL_STATE_DIR") ?? `${REPO_ROOT}.local`;
/** The local user-token signing key. */
export const SIGNING_KEY_PATH = `${LOCAL_STATE_DIR}/signing-key.json`;
/** The Supabase CLI config. */
export const CONFIG_TOML_PATH = `${REPO_ROOT}supabase/config.toml`;
/** Demo data applied on first init. */
export const SEED_PATH = `${REPO_ROOT}supabase/seed.sql`;
/** Port of the embedded PostgreSQL (`DB_PORT` overrides). */
export const LOCAL_DB_PORT = Number(Deno.env.get("DB_PORT") ?? "54322");
/** Default local database URL (embedded PostgreSQL). */
export const DEFAULT_DB_URL = `postgresql://postgres:postgres@127.0.0.1:${LOCAL_DB_PORT}/postgres`;
