-- =============================================================================
-- Demo data for local runs (applied by `deno task start` on first init; run it
-- again with SEED=true). Safe to re-run: fixed ids, `on conflict do nothing`.
--
-- Users — sign in as any of them with `deno task token --email <address>`:
--   admin@example.com    admin (sees everything)
--   free@example.com     free plan: most numbers blurred, URL and seller hidden
--   starter@example.com  Starter (monthly), a seller
--   pro@example.com      Pro (yearly), a seller: sees every field
--   granted@example.com  Starter granted for 14 days (source 'grant')
--   pastdue@example.com  Pro, but past due: treated as free
-- Listings: 12 approved (more than one explore page of 9) and one each of
-- draft, pending_review, rejected and archived, which only their seller and
-- admins see. One deal: free@ buys "Inbox Zero SaaS" from starter@.
-- Confidential: "Local SEO Agency Tool" (pro@'s) keeps its URL, seller and
-- revenue behind the NDA; free@ was let in and talks with pro@ about it,
-- starter@'s request waits for pro@'s answer.
-- Letter of intent: pro@'s offer for "Recipe Blog Network", starter@'s
-- counter-offer, accepted: a deal in due diligence.
-- =============================================================================

insert into auth.users (id, email, email_confirmed_at, raw_user_meta_data) values
  ('00000000-0000-4000-8000-000000000001', 'admin@example.com', now(), '{"full_name":"Ada Admin"}'),
  ('00000000-0000-4000-8000-000000000002', 'free@example.com', now(), '{"full_name":"Fred Free"}'),
  ('00000000-0000-4000-8000-000000000003', 'starter@example.com', now(), '{"full_name":"Stella Starter"}'),
  ('00000000-0000-4000-8000-000000000004', 'pro@example.com', now(), '{"full_name":"Prue Pro"}'),
  ('00000000-0000-4000-8000-000000000005', 'granted@example.com', now(), '{"full_name":"Gus Granted"}'),
  ('00000000-0000-4000-8000-000000000006', 'pastdue@example.com', now(), '{"full_name":"Pat Pastdue"}')
on conflict (id) do nothing;

insert into public.user_roles (user_id, role) values
  ('00000000-0000-4000-8000-000000000001', 'admin')
on conflict do nothing;

insert into public.subscriptions (
  user_id, subscription_level, subscription_status, source, billing_interval,
  current_period_start, current_period_end
) values
  ('00000000-0000-4000-8000-000000000003', 'starter', 'active', 'payproc', 'month', now() - interval '3 days', now() + interval '27 days'),
  ('00000000-0000-4000-8000-000000000004', 'pro', 'active', 'payproc', 'year', now() - interval '30 days', now() + interval '335 days'),
  ('00000000-0000-4000-8000-000000000005', 'starter', 'active', 'grant', null, now(), now() + interval '14 days'),
  ('00000000-0000-4000-8000-000000000006', 'pro', 'past_due', 'payproc', 'month', now() - interval '35 days', now() - interval '5 days')
on conflict (user_id) do nothing;

-- Listings start in review (the state machine admits new rows only as draft or
-- pending_review) and are approved below.
insert into public.listings (
  id, seller_id, title, description, url, category, asking_price, currency,
  monthly_revenue, monthly_profit, monthly_traffic, review_status, created_at
) values
  ('10000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000003', 'Inbox Zero SaaS', 'E-mail triage for small teams; 140 paying accounts.', 'https://inboxzero.example', 'saas', 48000, 'USD', 2100, 1600, 18000, 'pending_review', now() - interval '1 day'),
  ('10000000-0000-4000-8000-000000000002', '00000000-0000-4000-8000-000000000003', 'Recipe Blog Network', 'Three recipe sites with display ads and affiliate income.', 'https://recipes.example', 'content', 22000, 'USD', 900, 700, 120000, 'pending_review', now() - interval '2 days'),
  ('10000000-0000-4000-8000-000000000003', '00000000-0000-4000-8000-000000000004', 'Pet Supplies Shop', 'Online store for pet supplies, 30% repeat customers.', 'https://petshop.example', 'ecommerce', 65000, 'EUR', 5400, 1200, 40000, 'pending_review', now() - interval '4 days'),
  ('10000000-0000-4000-8000-000000000004', '00000000-0000-4000-8000-000000000004', 'Habit Tracker iOS App', 'Subscription habit tracker; profitable once ads are cut.', 'https://habits.example', 'app', 15000, 'USD', 600, -150, 9000, 'pending_review', now() - interval '6 days'),
  ('10000000-0000-4000-8000-000000000005', '00000000-0000-4000-8000-000000000003', 'Invoice Generator', 'Freemium invoice tool with a Stripe-billed pro tier.', 'https://invoices.example', 'saas', 36000, 'USD', 1500, 1300, 22000, 'pending_review', now() - interval '8 days'),
  ('10000000-0000-4000-8000-000000000006', '00000000-0000-4000-8000-000000000004', 'Indie Game Newsletter', '12k subscribers, sponsorship sold out for two months.', 'https://gamesletter.example', 'newsletter', 18000, 'USD', 800, 750, 12000, 'pending_review', now() - interval '10 days'),
  ('10000000-0000-4000-8000-000000000007', '00000000-0000-4000-8000-000000000003', 'Chrome Tab Manager', 'Browser extension with 40k weekly users.', 'https://tabs.example', 'extension', 9000, 'USD', 300, 280, 40000, 'pending_review', now() - interval '12 days'),
  ('10000000-0000-4000-8000-000000000008', '00000000-0000-4000-8000-000000000004', 'Local SEO Agency Tool', 'Rank tracking for agencies, 25 agencies on annual plans.', 'https://localseo.example', 'saas', 120000, 'USD', 6200, 4100, 15000, 'pending_review', now() - interval '14 days'),
  ('10000000-0000-4000-8000-000000000009', '00000000-0000-4000-8000-000000000003', 'Vintage Poster Store', 'Print-on-demand posters, no inventory.', 'https://posters.example', 'ecommerce', 12000, 'GBP', 1100, 400, 16000, 'pending_review', now() - interval '16 days'),
  ('10000000-0000-4000-8000-000000000010', '00000000-0000-4000-8000-000000000004', 'Remote Jobs Board', 'Job board with paid postings and a weekly digest.', 'https://remotejobs.example', 'marketplace', 54000, 'USD', 2600, 2200, 60000, 'pending_review', now() - interval '18 days'),
  ('10000000-0000-4000-8000-000000000011', '00000000-0000-4000-8000-000000000003', 'Photography Presets', 'Lightroom presets sold through a storefront.', 'https://presets.example', 'digital-products', 7000, 'USD', 450, 420, 8000, 'pending_review', now() - interval '20 days'),
  ('10000000-0000-4000-8000-000000000012', '00000000-0000-4000-8000-000000000004', 'Meal Planner App', 'Android and iOS meal planner, 1.2k subscribers.', 'https://mealplan.example', 'app', 42000, 'USD', 1900, 1100, 25000, 'pending_review', now() - interval '22 days'),
  ('10000000-0000-4000-8000-000000000013', '00000000-0000-4000-8000-000000000004', 'Draft: Podcast Network', 'Not yet submitted.', 'https://podcasts.example', 'content', 30000, 'USD', 1200, 900, 30000, 'draft', now() - interval '3 days'),
  ('10000000-0000-4000-8000-000000000014', '00000000-0000-4000-8000-000000000004', 'Awaiting review: Fitness Blog', 'Submitted, waiting for an admin.', 'https://fitness.example', 'content', 14000, 'USD', 700, 600, 35000, 'pending_review', now() - interval '5 days'),
  ('10000000-0000-4000-8000-000000000015', '00000000-0000-4000-8000-000000000004', 'Rejected: Crypto Signals', 'Rejected: revenue not shown.', 'https://signals.example', 'saas', 90000, 'USD', 8000, 7000, 5000, 'pending_review', now() - interval '7 days'),
  ('10000000-0000-4000-8000-000000000016', '00000000-0000-4000-8000-000000000003', 'Archived: Wedding Planner', 'Sold elsewhere and archived.', 'https://weddings.example', 'saas', 25000, 'USD', 1000, 800, 9000, 'pending_review', now() - interval '40 days')
on conflict (id) do nothing;

update public.listings set review_status = 'approved', reviewed_by = '00000000-0000-4000-8000-000000000001'
where id between '10000000-0000-4000-8000-000000000001' and '10000000-0000-4000-8000-000000000012'
  and review_status = 'pending_review';

update public.listings set review_status = 'rejected', rejection_reason = 'Please add proof of revenue',
  reviewed_by = '00000000-0000-4000-8000-000000000001'
where id = '10000000-0000-4000-8000-000000000015' and review_status = 'pending_review';

update public.listings set review_status = 'approved'
where id = '10000000-0000-4000-8000-000000000016' and review_status = 'pending_review';
update public.listings set review_status = 'archived'
where id = '10000000-0000-4000-8000-000000000016' and review_status = 'approved';

insert into public.deals (id, listing_id, buyer_id, seller_id, amount, currency) values
  ('20000000-0000-4000-8000-000000000001', '10000000-0000-4000-8000-000000000001',
   '00000000-0000-4000-8000-000000000002', '00000000-0000-4000-8000-000000000003', 45000, 'USD')
on conflict (id) do nothing;

-- A confidential listing, an approved and a pending access request, and the
-- conversation approval opened (with fixed ids, created first, so the
-- approval finds it).
update public.listings set access_mode = 'nda', confidential_fields = '{monthly_revenue,seller,url}'
where id = '10000000-0000-4000-8000-000000000008' and access_mode = 'open';

insert into public.listing_access_requests (
  id, listing_id, buyer_id, seller_id, message, nda_version, nda_sha256
)
select r.id, '10000000-0000-4000-8000-000000000008', r.buyer_id,
       '00000000-0000-4000-8000-000000000004', r.message, d.version, d.sha256
from (values
  ('30000000-0000-4000-8000-000000000001'::uuid, '00000000-0000-4000-8000-000000000002'::uuid,
   'I run an SEO consultancy and would like to see the client list.'),
  ('30000000-0000-4000-8000-000000000002'::uuid, '00000000-0000-4000-8000-000000000003'::uuid,
   null)
) as r (id, buyer_id, message)
cross join public.nda_documents d
where d.version = '1'
on conflict do nothing;

insert into public.conversations (id, listing_id, buyer_id, seller_id) values
  ('40000000-0000-4000-8000-000000000001', '10000000-0000-4000-8000-000000000008',
   '00000000-0000-4000-8000-000000000002', '00000000-0000-4000-8000-000000000004')
on conflict do nothing;

update public.listing_access_requests set status = 'approved',
  decided_by = '00000000-0000-4000-8000-000000000004', decision_reason = 'Welcome!'
where id = '30000000-0000-4000-8000-000000000001' and status = 'pending';

insert into public.messages (id, conversation_id, sender_id, body, created_at) values
  ('50000000-0000-4000-8000-000000000001', '40000000-0000-4000-8000-000000000001',
   '00000000-0000-4000-8000-000000000002', 'Thanks for the access! How many of the 25 agencies renewed last year?',
   now() - interval '2 hours'),
  ('50000000-0000-4000-8000-000000000002', '40000000-0000-4000-8000-000000000001',
   '00000000-0000-4000-8000-000000000004', E'All but two.\nHappy to share the renewal report.',
   now() - interval '1 hour')
on conflict do nothing;

update public.conversations set last_message_at = now() - interval '1 hour',
  buyer_last_read_at = now() - interval '2 hours', seller_last_read_at = now() - interval '1 hour'
where id = '40000000-0000-4000-8000-000000000001' and last_message_at is null;

-- A letter of intent: pro@ offers 20,000 for starter@'s "Recipe Blog Network"
-- with a holdback, starter@ counters at 21,000, pro@ accepts: the deal is in
-- due diligence for 14 days and the listing is off the market.
-- (Where not exists, not on conflict: the offers' triggers refuse a new offer
-- on a listing under an LOI before any conflict is looked for.)
insert into public.offers (id, listing_id, buyer_id, amount, currency, message, terms)
select '60000000-0000-4000-8000-000000000001', '10000000-0000-4000-8000-000000000002',
  '00000000-0000-4000-8000-000000000004', 20000, 'USD', 'Ready to move quickly after diligence.',
  '{"cash_at_close": "18000.00", "holdback_days": 30, "inspection_days": 10, "exclusivity_days": 14,
    "conditions": ["Ad network accounts transferred", "Twelve months of traffic reports"]}'
where not exists (select 1 from public.offers where id = '60000000-0000-4000-8000-000000000001');

update public.offers set status = 'countered'
where id = '60000000-0000-4000-8000-000000000001' and status = 'pending';

insert into public.offers (
  id, listing_id, buyer_id, amount, currency, message, terms, parent_offer_id, proposed_by
)
select '60000000-0000-4000-8000-000000000002', '10000000-0000-4000-8000-000000000002',
  '00000000-0000-4000-8000-000000000004', 21000, 'USD', 'Meet me at 21,000; the rest stands.',
  '{"cash_at_close": "19000.00", "holdback_days": 30, "inspection_days": 10, "exclusivity_days": 14,
    "conditions": ["Ad network accounts transferred", "Twelve months of traffic reports"]}',
  '60000000-0000-4000-8000-000000000001', 'seller'
where not exists (select 1 from public.offers where id = '60000000-0000-4000-8000-000000000002');

select public.accept_offer(o.id) from public.offers o
where o.id = '60000000-0000-4000-8000-000000000002' and o.status = 'pending';
