-- =============================================================================
-- has_role() private: clients no longer ask who holds a role
--
-- has_role(user, role) answers for any user, and `authenticated` could call
-- it, so any signed-in user could probe who the admins are. Clients now ask
-- only about themselves, through is_admin(); has_role() stays for the
-- service connection (the role that owns it, which the edge functions
-- connect as, and service_role) and for the security definer functions,
-- which run as that owner.
--
-- Callers, and why each still works:
--   is_admin()              security definer: calls has_role() as its owner
--   assert_may_ask_about()  invoker rights, reached only from security
--                           definer functions (current_plan, can_view_field,
--                           listing_viewer, calculate_commission,
--                           is_deal_participant), so it already ran as their
--                           owner; it now asks is_admin() instead, so that
--                           it keeps working if an invoker-rights function
--                           ever calls it for a client
--   policies                use is_admin(), never has_role()
--   listing_viewer_rows(),  read user_roles inline (definer rights)
--   listing_viewer()
--   edge functions          _shared/access.ts isAdmin() on the service
--                           connection
-- =============================================================================

-- -----------------------------------------------------------------------------
-- has_role(): service connection and definer functions only
-- -----------------------------------------------------------------------------
revoke execute on function public.has_role(uuid, text) from public, anon, authenticated;
grant execute on function public.has_role(uuid, text) to service_role;
comment on function public.has_role(uuid, text) is
  'True when the user holds the role (e.g. admin); false for a null user. Not callable by clients (it would tell who the admins are): they use is_admin()';

-- -----------------------------------------------------------------------------
-- assert_may_ask_about(): the admin check through is_admin()
-- -----------------------------------------------------------------------------
create or replace function public.assert_may_ask_about(p_user uuid, p_action text)
returns void
language plpgsql
stable
set search_path = ''
as $$
begin
  -- Asking about the anonymous viewer reveals nothing about anyone.
  if p_user is null or not public.is_client_request() then
    return;
  end if;
  if p_user = auth.uid() then
    return;
  end if;
  -- is_admin() (definer rights) rather than has_role(), which clients may
  -- not execute: the check holds whichever role this runs as.
  if auth.uid() is not null and public.is_admin() then
    return;
  end if;
  raise exception 'Cannot %: user "%" is not the signed-in user', p_action, p_user
    using errcode = '42501';
end
$$;
comment on function public.assert_may_ask_about(uuid, text) is
  'Raises 42501 unless the caller may ask about p_user: the user themselves, an admin, or the service connection; p_action names the refused action in the message';
revoke execute on function public.assert_may_ask_about(uuid, text) from public, anon, authenticated;
grant execute on function public.assert_may_ask_about(uuid, text) to service_role;
