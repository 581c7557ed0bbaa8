-- =============================================================================
-- Sellers: who counts as one (the `seller` access rule)
--
-- A seller is a user with a listing (any review status) or a connected payout
-- account (a connect_accounts row). Nothing is stored: is_seller() derives it
-- from those two tables, so there is no flag to keep in line with them.
-- Starting payout onboarding (connect-onboarding-link, open to every
-- signed-in user) creates the connect_accounts row, which is how a user with
-- no listing becomes a seller; the seller functions (connect-dashboard-link,
-- refresh-kyc-status) refuse everyone else with 403 and point there.
--
--   user ──(writes a listing | starts payout onboarding)──► seller
--
-- A seller stops being one only when both their listings and their account
-- row are gone (e.g. the user is deleted).
-- =============================================================================

-- -----------------------------------------------------------------------------
-- is_seller(): the seller access rule
-- -----------------------------------------------------------------------------
create or replace function public.is_seller(p_user uuid)
returns boolean
language plpgsql
stable
-- Definer rights: the answer must not depend on who asks. The access rule
-- asks on the service connection, a client asks about itself, and a policy
-- of another table may ask without re-entering the row level security of
-- listings and connect_accounts; assert_may_ask_about() keeps a client to
-- itself.
security definer
set search_path = ''
as $$
begin
  if p_user is null then
    return false;
  end if;
  perform public.assert_may_ask_about(p_user, 'check seller status');
  return exists (select 1 from public.listings l where l.seller_id = p_user)
    or exists (select 1 from public.connect_accounts a where a.user_id = p_user);
end
$$;
comment on function public.is_seller(uuid) is
  'True when p_user has a listing (any review status) or a connected payout account (connect_accounts); false for null and for everyone else. Admins are not sellers by role. A client may ask only about itself';
revoke execute on function public.is_seller(uuid) from public, anon;
grant execute on function public.is_seller(uuid) to authenticated, service_role;
