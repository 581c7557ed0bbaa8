-- Demo data for local runs (applied by `deno task start` on first init).
-- Users: one per plan and an admin. Sign in as any of them with
--   deno task token --email free@example.com
insert into auth.users (id, email, email_confirmed_at, raw_user_meta_data) values
  ('00000000-0000-4000-8000-000000000001', 'admin@example.com', now(), '{"full_name":"Ada Admin"}'),
  ('00000000-0000-4000-8000-000000000002', 'free@example.com', now(), '{"full_name":"Fred Free"}'),
  ('00000000-0000-4000-8000-000000000003', 'starter@example.com', now(), '{"full_name":"Stella Starter"}'),
  ('00000000-0000-4000-8000-000000000004', 'pro@example.com', now(), '{"full_name":"Prue Pro"}')
on conflict (id) do nothing;

insert into public.user_roles (user_id, role) values
  ('00000000-0000-4000-8000-000000000001', 'admin')
on conflict do nothing;
