/**
 * Test helpers for deal handovers: the participants' step actions through
 * their SQL functions (as the frontend calls them with supabase-js `rpc`),
 * and an agreement recorded as `generate-apa-pdf` records it.
 *
 * @module
 */
import type pg from "pg";
import { randomHex } from "../../supabase/functions/_shared/lib/hex.ts";
import type { TestDeal } from "./deals.ts";
import { queryAs, type TestUser } from "./sql.ts";

/** A handover step as tests read it. */
export interface TestStep {
  id: string;
  position: number;
  title: string;
  status: string;
  confirmation: string | null;
  confirmed_at: Date | null;
}

/** The deal's checklist in order. */
export async function stepsOf(pool: pg.Pool, dealId: string): Promise<TestStep[]> {
  const { rows } = await pool.query<TestStep>(
    `select id, position, title, status, confirmation, confirmed_at
     from public.deal_handover_steps where deal_id = $1 order by position`,
    [dealId],
  );
  return rows;
}

/** `user` calls SQL function `fn` with `args` through RLS (committed), as `supabase.rpc` does. */
export async function rpc(
  pool: pg.Pool,
  user: TestUser,
  fn: string,
  args: unknown[],
): Promise<void> {
  const params = args.map((_, i) => `$${i + 1}`).join(", ");
  await queryAs(pool, user, `select public.${fn}(${params})`, args);
}

/** The seller delivers every pending step of `deal`. */
export async function deliverAll(pool: pg.Pool, deal: TestDeal): Promise<void> {
  for (const step of await stepsOf(pool, deal.id)) {
    if (step.status === "pending") await rpc(pool, deal.seller, "deliver_handover_step", [step.id]);
  }
}

/** The buyer confirms the first `count` delivered steps of `deal` (all by default). */
export async function confirmDelivered(
  pool: pg.Pool,
  deal: TestDeal,
  count = Infinity,
): Promise<void> {
  const delivered = (await stepsOf(pool, deal.id)).filter((s) => s.status === "delivered");
  for (const step of delivered.slice(0, count)) {
    await rpc(pool, deal.buyer, "confirm_handover_step", [step.id]);
  }
}

/** Records an agreement for `dealId` the way generate-apa-pdf does (no PDF is stored). */
export async function recordApa(pool: pg.Pool, dealId: string): Promise<void> {
  const sha256 = randomHex(32);
  await pool.query(
    `insert into public.deal_documents
       (deal_id, kind, path, file_name, content_type, size_bytes, status, sha256, version,
        uploaded_at)
     select $1::uuid, 'apa', $1::text || '/apa/' || $2 || '.pdf', 'asset-purchase-agreement.pdf',
            'application/pdf', 1000, 'uploaded', $2,
            coalesce(max(version), 0) + 1, now()
     from public.deal_documents where deal_id = $1::uuid and kind = 'apa'`,
    [dealId, sha256],
  );
}
