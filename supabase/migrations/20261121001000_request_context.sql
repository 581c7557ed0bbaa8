-- =============================================================================
-- Request context: who is asking
--
-- Several functions answer a question about a user: their plan
-- (current_plan), what they may see of a listing (can_view_field), what
-- commission they pay (calculate_commission), whether they take part in a
-- deal (is_deal_participant). A client — roles anon and authenticated, as
-- PostgREST and ctx.db.asUser() run them — may only ask about itself (or
-- about "nobody", the anonymous viewer). The service connection and admins
-- may ask about anyone.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- is_client_request(): is this statement running on behalf of a client?
-- -----------------------------------------------------------------------------
create or replace function public.is_client_request()
returns boolean
language plpgsql
stable
set search_path = ''
as $$
begin
  -- The role GUC is what `set local role` changed; it keeps its value inside
  -- security definer functions, unlike current_user. The JWT's role claim
  -- covers a client whose claims were set on a connection that kept its role.
  -- (PL/pgSQL rather than SQL: its plan is cached for the session, while a
  -- SQL function with a SET clause is planned again on every call.)
  return coalesce(current_setting('role', true), 'none') in ('anon', 'authenticated')
    or coalesce(auth.role(), '') in ('anon', 'authenticated');
end
$$;
comment on function public.is_client_request() is
  'True when the statement runs for a client (role anon or authenticated, or a JWT with that role); false on the service connection and for service_role';
-- Callable by everyone: it tells the caller only what the caller is, and
-- invoker-rights triggers (listings_guard_review) call it as the client.
revoke execute on function public.is_client_request() from public;
grant execute on function public.is_client_request() to anon, authenticated, service_role;

-- -----------------------------------------------------------------------------
-- assert_may_ask_about(): a client asks only about itself
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
  if auth.uid() is not null and public.has_role(auth.uid(), 'admin') then
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
