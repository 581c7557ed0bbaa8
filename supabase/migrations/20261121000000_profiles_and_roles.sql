-- =============================================================================
-- Profiles and roles: one profile per auth user, and the admin role
--
-- Profiles are created by a trigger when Supabase Auth inserts a user. Admin is
-- a row in user_roles, never a client-editable column; has_role() is the one
-- place that answers "is this user an admin?".
-- =============================================================================

-- -----------------------------------------------------------------------------
-- profiles
-- -----------------------------------------------------------------------------
create table if not exists public.profiles (
  id uuid primary key references auth.users (id) on delete cascade,
  email text,
  full_name text,
  avatar_url text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
comment on table public.profiles is
  'Public profile of each user; created by handle_new_user() when the auth user is created';

alter table public.profiles enable row level security;

drop policy if exists "Users can read their own profile" on public.profiles;
create policy "Users can read their own profile" on public.profiles
  for select to authenticated
  using (id = (select auth.uid()));

drop policy if exists "Users can update their own profile" on public.profiles;
create policy "Users can update their own profile" on public.profiles
  for update to authenticated
  using (id = (select auth.uid()))
  with check (id = (select auth.uid()));

-- Users may change their name and avatar; everything else is written by the
-- service connection.
revoke insert, update, delete on public.profiles from anon, authenticated;
grant update (full_name, avatar_url) on public.profiles to authenticated;

-- -----------------------------------------------------------------------------
-- set_updated_at(): shared trigger function for updated_at columns
-- -----------------------------------------------------------------------------
create or replace function public.set_updated_at() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  -- clock_timestamp(), not now(): a second change in the same transaction
  -- moves updated_at too.
  new.updated_at := clock_timestamp();
  return new;
end
$$;
comment on function public.set_updated_at() is
  'Trigger: moves updated_at to the current time on every update';

drop trigger if exists profiles_set_updated_at on public.profiles;
create trigger profiles_set_updated_at
  before update on public.profiles
  for each row execute function public.set_updated_at();

-- -----------------------------------------------------------------------------
-- handle_new_user(): a profile for every new auth user
-- -----------------------------------------------------------------------------
create or replace function public.handle_new_user() returns trigger
language plpgsql
-- Definer rights: runs inside Supabase Auth's insert, whose role may not
-- write public.profiles.
security definer
set search_path = ''
as $$
begin
  insert into public.profiles (id, email, full_name)
  values (
    new.id,
    new.email,
    nullif(new.raw_user_meta_data ->> 'full_name', '')
  )
  on conflict (id) do nothing;
  return new;
end
$$;
comment on function public.handle_new_user() is
  'Trigger on auth.users: creates the user''s profile row';
revoke execute on function public.handle_new_user() from public, anon, authenticated;

drop trigger if exists on_auth_user_created on auth.users;
create trigger on_auth_user_created
  after insert on auth.users
  for each row execute function public.handle_new_user();

-- -----------------------------------------------------------------------------
-- user_roles and has_role()
-- -----------------------------------------------------------------------------
create table if not exists public.user_roles (
  user_id uuid not null references auth.users (id) on delete cascade,
  role text not null check (role in ('admin')),
  created_at timestamptz not null default now(),
  primary key (user_id, role)
);
comment on table public.user_roles is
  'Roles granted to users (admin); written only by the service connection';

alter table public.user_roles enable row level security;

drop policy if exists "Users can read their own roles" on public.user_roles;
create policy "Users can read their own roles" on public.user_roles
  for select to authenticated
  using (user_id = (select auth.uid()));

revoke insert, update, delete on public.user_roles from anon, authenticated;

create or replace function public.has_role(p_user uuid, p_role text)
returns boolean
-- PL/pgSQL rather than SQL: policies call it on every query, and PL/pgSQL
-- keeps its plan for the session where a SQL function with SET is re-planned
-- on every call.
language plpgsql
stable
-- Definer rights: policies call it for any user, and user_roles is only
-- readable by its owner.
security definer
set search_path = ''
as $$
begin
  return exists (
    select 1 from public.user_roles r
    where r.user_id = p_user and r.role = p_role
  );
end
$$;
comment on function public.has_role(uuid, text) is
  'True when the user holds the role (e.g. admin); false for a null user';
revoke execute on function public.has_role(uuid, text) from public, anon;
grant execute on function public.has_role(uuid, text) to authenticated, service_role;

create or replace function public.is_admin() returns boolean
language plpgsql
stable
-- Definer rights: policies evaluated for anon call it too, and anon may not
-- call has_role() directly (it would tell who the admins are).
security definer
set search_path = ''
as $$
begin
  return coalesce(public.has_role(auth.uid(), 'admin'), false);
end
$$;
comment on function public.is_admin() is
  'True when the signed-in caller is an admin; for use in policies';
revoke execute on function public.is_admin() from public;
grant execute on function public.is_admin() to anon, authenticated, service_role;
