-- =============================================================================
-- Subscription checkouts: at most one open subscription checkout per user
--
-- create-checkout keeps here the hosted checkout session (subscription mode)
-- it last made for a user: one row per user. Two open subscription checkouts
-- could both be paid, which would make two subscriptions, so a user has one
-- open session at a time. What a call does with the stored session:
--
--   no row, or stored session complete, expired or gone
--       -> the existing checks (a paying user gets 409), then a new session
--   stored session open, same price, expires more than 10 minutes from now
--       -> answered again (its redirects are those of the call that made it)
--   stored session open, other price or about to expire
--       -> expired at the processor first, then a new session
--
-- The new session is stored only if the row still holds the session it
-- replaces (or none, for a first one), or already holds the new one (a
-- concurrent call with the same idempotency key): an insert ... on conflict
-- (user_id) do update ... where. A call whose session lost expires it at the
-- processor and answers 409. No transaction is open while the processor is
-- called.
--
-- Written and read only by the service connection; clients have no access.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- subscription_checkouts
-- -----------------------------------------------------------------------------
create table if not exists public.subscription_checkouts (
  user_id uuid primary key references auth.users (id) on delete cascade,
  payproc_session_id text not null unique,
  price_id text not null,
  url text not null,
  expires_at timestamptz not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint subscription_checkouts_session_id_length check (
    char_length(payproc_session_id) between 1 and 255
  ),
  constraint subscription_checkouts_price_id_length check (char_length(price_id) between 1 and 255),
  constraint subscription_checkouts_url_length check (char_length(url) between 1 and 4096)
);

comment on table public.subscription_checkouts is
  'The subscription checkout session create-checkout last made for each user (at most one open per user: two open ones could both be paid). Service connection only';
comment on column public.subscription_checkouts.user_id is 'The user the checkout is for (one row per user)';
comment on column public.subscription_checkouts.payproc_session_id is
  'The processor''s checkout session id (cs_...)';
comment on column public.subscription_checkouts.price_id is 'The plan price the session sells';
comment on column public.subscription_checkouts.url is 'The hosted checkout page of the session';
comment on column public.subscription_checkouts.expires_at is
  'When the processor expires the session; within 10 minutes of it a new session replaces it';
comment on column public.subscription_checkouts.created_at is 'When the row was first written';
comment on column public.subscription_checkouts.updated_at is 'Moves on every change (trigger)';
comment on constraint subscription_checkouts_session_id_length on public.subscription_checkouts is
  'A session id is 1 to 255 characters';
comment on constraint subscription_checkouts_price_id_length on public.subscription_checkouts is
  'A price id is 1 to 255 characters';
comment on constraint subscription_checkouts_url_length on public.subscription_checkouts is
  'A URL is 1 to 4096 characters';

drop trigger if exists subscription_checkouts_set_updated_at on public.subscription_checkouts;
create trigger subscription_checkouts_set_updated_at
  before update on public.subscription_checkouts
  for each row execute function public.set_updated_at();
comment on trigger subscription_checkouts_set_updated_at on public.subscription_checkouts is
  'Moves updated_at on every change';

-- No client access: RLS on without policies, and no grants to clients. The
-- service connection reads and writes it (service_role bypasses RLS).
alter table public.subscription_checkouts enable row level security;
revoke all on table public.subscription_checkouts from public, anon, authenticated;
grant all on table public.subscription_checkouts to service_role;
