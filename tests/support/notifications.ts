/**
 * Test setup for the e-mail and notification functions: a test database,
 * the e-mail API double, a runtime whose sender goes to the double (the real
 * `resend` SDK), and a second runtime in local capture mode; plus readers of
 * the rows the functions write.
 *
 * @module
 */
import type pg from "pg";
import type { Runtime } from "../../supabase/functions/_shared/platform/runtime.ts";
import { type TestCredentials, testCredentials } from "./credentials.ts";
import { createTestDatabase, type TestDatabase } from "./db.ts";
import { EmailDouble, TEST_EMAIL_KEY } from "./email_double.ts";
import { testRuntime } from "./runtime.ts";

/** The sender address in tests. */
export const TEST_EMAIL_FROM = "Marketplace <no-reply@market.example.test>";

/** Env that sends e-mail through `double`. */
export function emailEnv(double: EmailDouble): Record<string, string> {
  return {
    RESEND_API_KEY: TEST_EMAIL_KEY,
    RESEND_BASE_URL: double.url,
    EMAIL_FROM: TEST_EMAIL_FROM,
    EMAIL_TIMEOUT_MS: "2000",
  };
}

/** Everything a notifications test file needs. */
export interface NotificationsSetup {
  db: TestDatabase;
  double: EmailDouble;
  /** Sends through the double. */
  runtime: Runtime;
  /** `LOCAL_DEV=true` without a provider key: mail is captured. */
  captureRuntime: Runtime;
  keys: TestCredentials;
  close(): Promise<void>;
}

/** A database, the e-mail double and runtimes on both. */
export async function notificationsSetup(
  env: Record<string, string> = {},
): Promise<NotificationsSetup> {
  const db = await createTestDatabase();
  const double = new EmailDouble();
  const runtime = await testRuntime(db, { ...emailEnv(double), ...env });
  const captureRuntime = await testRuntime(db, { LOCAL_DEV: "true", ...env });
  return {
    db,
    double,
    runtime,
    captureRuntime,
    keys: await testCredentials(),
    async close() {
      await runtime.close();
      await captureRuntime.close();
      await double.close();
      await db.close();
    },
  };
}

/** An `email_logs` row as tests read it. */
export interface TestEmailLog {
  id: string;
  recipient_email: string;
  email_type: string;
  send_status: string;
  error_message: string | null;
  user_id: string | null;
  subject: string;
  html: string | null;
  text_body: string | null;
  attempts: number;
  next_attempt_at: Date | null;
  provider_message_id: string | null;
  idempotency_key: string | null;
}

/** Every `email_logs` row (optionally of one type), oldest first. */
export async function emailLogs(pool: pg.Pool, emailType?: string): Promise<TestEmailLog[]> {
  const { rows } = await pool.query<TestEmailLog>(
    `select id, recipient_email, email_type, send_status, error_message, user_id, subject, html,
            text_body, attempts, next_attempt_at, provider_message_id, idempotency_key
     from public.email_logs where $1::text is null or email_type = $1
     order by created_at, id`,
    [emailType ?? null],
  );
  return rows;
}

/** A `notifications` row as tests read it. */
export interface TestNotification {
  id: string;
  user_id: string;
  type: string;
  title: string;
  body: string;
  link: string | null;
  data: Record<string, unknown>;
  read_at: Date | null;
  dedupe_key: string | null;
}

/** A user's notifications, oldest first. */
export async function notificationsOf(pool: pg.Pool, userId: string): Promise<TestNotification[]> {
  const { rows } = await pool.query<TestNotification>(
    `select id, user_id, type, title, body, link, data, read_at, dedupe_key
     from public.notifications where user_id = $1 order by created_at, id`,
    [userId],
  );
  return rows;
}

/** Sets `userId`'s preference for `type`. */
export async function setPreference(
  pool: pg.Pool,
  userId: string,
  type: string,
  channels: { email: boolean; inApp: boolean },
): Promise<void> {
  await pool.query(
    `insert into public.notification_preferences (user_id, type, email, in_app)
     values ($1, $2, $3, $4)
     on conflict (user_id, type) do update set email = excluded.email, in_app = excluded.in_app`,
    [userId, type, channels.email, channels.inApp],
  );
}

/** Makes every e-mail row due now (as if the backoff had passed). */
export async function makeEmailsDue(pool: pg.Pool): Promise<void> {
  await pool.query(
    `update public.email_logs set next_attempt_at = now() - interval '1 second'
     where next_attempt_at is not null`,
  );
}
