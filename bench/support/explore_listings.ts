/**
 * The explore page's data for benchmarks: a free-plan viewer, 1000 sellers
 * and `count` listings, 8 in 10 approved (the rest in review or drafts),
 * created a minute apart.
 *
 * @module
 */
import type pg from "pg";

/** The signed-in viewer on the free plan (no subscription row). */
export const EXPLORE_VIEWER = "00000000-0000-4000-8000-00000000f4ee";

/** Listings approved, out of every ten generated. */
export const APPROVED_PER_TEN = 8;

/**
 * Creates the viewer, the sellers and the listings in bulk (without the
 * review state machine and realtime triggers), then analyzes. `viewsCount`
 * says whether listings start with views (`g % 500`) or at zero.
 */
export async function seedExploreListings(
  client: pg.Client,
  count: number,
  options: { viewsCount: boolean },
): Promise<void> {
  await client.query(
    `insert into auth.users (id, email) values ($1, 'free-viewer@example.test')`,
    [EXPLORE_VIEWER],
  );
  await client.query(
    `insert into auth.users (email)
     select 'seller-' || g || '@example.test' from generate_series(1, 1000) g`,
  );
  await client.query("begin");
  await client.query("set local session_replication_role = replica");
  await client.query(
    `with sellers as (
       select id, row_number() over (order by id) - 1 as n from auth.users where id <> $2
     )
     insert into public.listings (
       seller_id, title, description, url, category, asking_price, currency,
       monthly_revenue, monthly_profit, monthly_traffic, review_status, views_count,
       created_at, updated_at
     )
     select s.id, 'Project ' || g, 'Description of project ' || g,
       'https://project-' || g || '.example', (array['saas', 'content', 'ecommerce', 'app'])[1 + g % 4],
       1000 + g % 50000, 'USD', g % 9000, g % 4000 - 500, g % 100000,
       case when g % 10 < $3 then 'approved'
            when g % 10 = $3 then 'pending_review' else 'draft' end,
       case when $4 then g % 500 else 0 end,
       now() - g * interval '1 minute', now() - g * interval '1 minute'
     from generate_series(1, $1::int) g
     join sellers s on s.n = g % 1000`,
    [count, EXPLORE_VIEWER, APPROVED_PER_TEN, options.viewsCount],
  );
  await client.query("commit");
  await client.query("analyze");
}
