-- =============================================================================
-- Letters of intent: terms, counter-offers, an exclusivity window and due
-- diligence
--
-- An offer may carry the terms of a letter of intent (offers.terms); the two
-- sides answer each other with counter-offers until one accepts; accepting
-- an LOI gives the buyer an exclusivity window for due diligence (a deal in
-- the new state in_diligence: the listing is off the market, the data room
-- open), after which the buyer proceeds to payment or walks away.
--
-- ---------------------------------------------------------------- the terms
-- offers.terms is null for a plain offer, or an object with exactly these
-- keys (offer_terms_checked(): 23514 naming the broken rule; shared/
-- offer_terms_schemas.ts is the same rule in zod, tests/db/offer_terms.test.ts
-- keeps the two equal). Stored normalized, every key present:
--
--   cash_at_close        decimal string in major units, > 0 and <= the
--                        offer's amount, whole in the currency's smallest
--                        unit; default the amount. amount - cash_at_close is
--                        the holdback
--   holdback_days        0-60; at least 1 when there is a holdback, 0 when
--                        there is none (default 0)
--   inspection_days      1-30, default 7
--   exclusivity_days     0-45, default 14; 0 means no diligence window
--   proposed_close_date  'YYYY-MM-DD', today (UTC) or later; or null
--   conditions           up to 10 strings, each 1-500 characters of plain
--                        text (clean_user_text's rule), default []
--
-- ------------------------------------------------ the offer chain (counters)
-- A buyer's offer is version 1 (proposed_by 'buyer'). The side that did not
-- write the live version may accept it, decline it or counter it; the side
-- that wrote it may withdraw it. counter_offer() marks the live version
-- countered and inserts the next (parent_offer_id -> the countered one,
-- proposed_by the counter's side, same listing, buyer and currency). One
-- live (pending) version per chain: a version is countered at most once (a
-- unique index on parent_offer_id) and a buyer has one pending offer per
-- listing. Every version is immutable and read by both sides (the offers
-- policies: buyer_id is the chain's buyer, listing_id the seller's listing).
--
--            ┌─ accept_offer (the other side) ─► accepted   deal_id = the deal
--            ├─ decline_offer (the other side) ► declined   decline_reason null
--   pending ─┼─ counter_offer (the other side) ► countered  a newer version exists
--            ├─ withdraw_offer (its author) ───► withdrawn
--            ├─ expires_at passed ─────────────► expired
--            └─ another offer accepted ────────► declined   decline_reason
--                                                           listing_under_loi |
--                                                           another_offer_accepted
--
-- accepted, declined, withdrawn, expired and countered are final. Accepting,
-- declining or countering a countered version is PT409 ("answer the newest
-- version"); the author accepting or countering their own version, or the
-- other side withdrawing it, is 42501. A chain holds at most 20 versions
-- (PT409 beyond). Counters count against client_limits offer_counter:per_day.
--
-- ------------------------------------------------------- diligence (deals)
-- accept_offer() on a version whose terms give exclusivity_days > 0 creates
-- the deal in in_diligence, with deals.terms (the frozen copy of the agreed
-- terms) and deals.exclusive_until = acceptance + exclusivity_days. Any other
-- offer (no terms, or exclusivity_days 0) goes to pending_payment as before
-- (with its terms copied when it had some).
--
--   from          to               who / how                         cause
--   (new)         in_diligence     accept_offer() on an LOI          offer_accepted
--   in_diligence  pending_payment  confirm_diligence() by the buyer  diligence_confirmed
--   in_diligence  cancelled        withdraw_from_deal() by either    withdrawn
--                                  side (reason on the event)
--   in_diligence  cancelled        exclusive_until passed: the       exclusivity_lapsed
--                                  deal-deadlines job
--                                  (lapse_deal_exclusivity)
--   in_diligence  cancelled        cancel-deal / cancel_deal by a    cancelled
--                                  participant or an admin
--   in_diligence  in_diligence     extend_exclusivity() by the       exclusivity_extended
--                                  seller (an event without a state  (deal_events.detail:
--                                  change; total <= 45 days from     days, before, after)
--                                  acceptance)
--
-- Past exclusive_until the window is over even before the job runs: confirm
-- and extend refuse it (PT409); withdrawing still cancels.
--
-- ------------------------------------------------- the listing under an LOI
-- While a listing has a deal in in_diligence (listing_under_loi()):
--   * new offers on it are refused, 42501 with hint listing_under_loi (a
--     trigger before the insert policy, and again under the listing's share
--     lock after the insert, for an offer racing the accept);
--   * new access requests are refused, and a pending request cannot be
--     approved, 42501 with hint listing_under_loi;
--   * accepting the LOI declined the other pending offers (decline_reason
--     listing_under_loi) and suspended every other buyer's approved access
--     (listing_access_requests.status suspended: the confidential fields are
--     hidden from them again, as the blur rule reads approved access only).
-- When that deal ends without the sale (cancelled or refunded, however it
-- got there), the suspended access is approved again and the listing takes
-- offers again. listing_access_requests gains:
--
--   approved   suspended  accept_offer() of another buyer's LOI
--   suspended  approved   the LOI's deal cancelled or refunded (trigger)
--   suspended  revoked    revoke_listing_access() by the seller or an admin
--
-- A buyer with a suspended request cannot ask again (PT409) while it is
-- suspended: it comes back by itself.
--
-- -------------------------------------------------------------- who is told
-- The notice queue (send-queued-notices), in the transaction of the move:
--   offer_countered            the other side of a new version
--   offer_accepted             the author of the accepted version
--   deal_diligence_confirmed   the seller: the buyer proceeds to payment
--   deal_withdrawn             the other side of a withdrawal
--   deal_exclusivity_extended  the buyer: the seller extended the window
--   deal_exclusivity_ending    both sides, 48 hours before exclusive_until
--                              (queued due then; moved by an extension)
--   deal_exclusivity_lapsed    both sides, when the job cancels the deal
-- Offers and deals are pushed on both participants' user:<id> topics (the
-- tables' broadcast triggers; an extension too), and the notices under the
-- handover preference type (pushed).
--
-- Lock order: the listing row, then offers, then the deal, then access
-- requests (accept_offer); a deal's moves lock the deal, then its listing's
-- access requests (the restore trigger) and the listing (access_buyers),
-- then its queued notices (an extension moves the reminder; leaving
-- diligence drops it). The queue's builders read offers and deals without
-- locking them, so a run holding queue rows never waits for a deal.
--
-- SQLSTATEs: 42501 not allowed or the listing is under an LOI (403), PT404
-- no such offer or deal, or one the caller may not see (404), PT409 not in a
-- state for it (409), 22023 a bad argument (400), 23514 broken terms (400),
-- PT429 over a limit (429).
-- =============================================================================

-- -----------------------------------------------------------------------------
-- offer_terms_checked(): the rule of the terms, and their stored form
-- -----------------------------------------------------------------------------
create or replace function public.offer_terms_checked(
  p_terms jsonb,
  p_amount numeric,
  p_currency text
)
returns jsonb
language plpgsql
stable
-- Definer rights: the offers guard runs as the client, who may not call
-- clean_user_text() or offer_term_days(); this is a function of its
-- arguments and today's date, and reads nothing.
security definer
set search_path = ''
as $$
declare
  v_unknown text;
  v_digits integer := public.currency_minor_digits(p_currency);
  v_cash numeric;
  v_holdback_days integer;
  v_inspection integer;
  v_exclusivity integer;
  v_close date;
  v_conditions jsonb := '[]'::jsonb;
  v_condition jsonb;
  v_text text;
  v_position integer := 0;
begin
  if p_terms is null or jsonb_typeof(p_terms) = 'null' then
    return null;
  end if;
  if jsonb_typeof(p_terms) <> 'object' then
    raise exception 'Cannot make offer: its terms are a JSON object, not %', jsonb_typeof(p_terms)
      using errcode = '23514';
  end if;
  select string_agg(k, ', ' order by k) into v_unknown
  from jsonb_object_keys(p_terms) k
  where k not in ('cash_at_close', 'holdback_days', 'inspection_days', 'exclusivity_days',
                  'proposed_close_date', 'conditions');
  if v_unknown is not null then
    raise exception 'Cannot make offer: unknown term %', v_unknown using errcode = '23514',
      hint = 'The terms are cash_at_close, holdback_days, inspection_days, exclusivity_days, proposed_close_date and conditions';
  end if;

  -- cash_at_close: a decimal string in major units, like every amount of the API.
  if coalesce(jsonb_typeof(p_terms -> 'cash_at_close'), 'null') = 'null' then
    v_cash := p_amount;
  elsif jsonb_typeof(p_terms -> 'cash_at_close') <> 'string'
        or (p_terms ->> 'cash_at_close') !~ '^[0-9]{1,10}(\.[0-9]{1,2})?$' then
    raise exception 'Cannot make offer: cash_at_close is a decimal string in major units, like "900.00"'
      using errcode = '23514';
  else
    v_cash := (p_terms ->> 'cash_at_close')::numeric;
    if v_cash <= 0 then
      raise exception 'Cannot make offer: cash_at_close must be more than 0' using errcode = '23514';
    end if;
    if v_cash > p_amount then
      raise exception 'Cannot make offer: cash_at_close (%) is more than the amount (%)', v_cash, p_amount
        using errcode = '23514';
    end if;
    if v_cash <> round(v_cash, v_digits) then
      raise exception 'Cannot make offer: cash_at_close must be whole in %''s smallest unit', p_currency
        using errcode = '23514';
    end if;
  end if;

  v_holdback_days := public.offer_term_days(p_terms, 'holdback_days', 0, 60, 0);
  if v_cash < p_amount and v_holdback_days = 0 then
    raise exception 'Cannot make offer: holdback_days (1 to 60) is required when cash_at_close is below the amount'
      using errcode = '23514';
  end if;
  if v_cash = p_amount and v_holdback_days > 0 then
    raise exception 'Cannot make offer: holdback_days must be 0 without a holdback (cash_at_close is the whole amount)'
      using errcode = '23514';
  end if;
  v_inspection := public.offer_term_days(p_terms, 'inspection_days', 1, 30, 7);
  v_exclusivity := public.offer_term_days(p_terms, 'exclusivity_days', 0, 45, 14);

  if coalesce(jsonb_typeof(p_terms -> 'proposed_close_date'), 'null') <> 'null' then
    if jsonb_typeof(p_terms -> 'proposed_close_date') = 'string'
       and (p_terms ->> 'proposed_close_date') ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' then
      begin
        v_close := (p_terms ->> 'proposed_close_date')::date;
      exception when datetime_field_overflow or invalid_datetime_format then
        v_close := null;
      end;
    end if;
    if v_close is null then
      raise exception 'Cannot make offer: proposed_close_date is a date like "2027-01-31"'
        using errcode = '23514';
    end if;
    if v_close < (now() at time zone 'UTC')::date then
      raise exception 'Cannot make offer: proposed_close_date % is in the past', v_close
        using errcode = '23514';
    end if;
  end if;

  if coalesce(jsonb_typeof(p_terms -> 'conditions'), 'null') <> 'null' then
    if jsonb_typeof(p_terms -> 'conditions') <> 'array' then
      raise exception 'Cannot make offer: conditions is a list of texts' using errcode = '23514';
    end if;
    if jsonb_array_length(p_terms -> 'conditions') > 10 then
      raise exception 'Cannot make offer: at most 10 conditions, not %',
        jsonb_array_length(p_terms -> 'conditions') using errcode = '23514';
    end if;
    for v_condition in select value from jsonb_array_elements(p_terms -> 'conditions') loop
      v_position := v_position + 1;
      if jsonb_typeof(v_condition) <> 'string' then
        raise exception 'Cannot make offer: condition % is not a text', v_position using errcode = '23514';
      end if;
      begin
        v_text := public.clean_user_text(v_condition #>> '{}', format('condition %s', v_position), 500, true);
      exception when sqlstate '22023' then
        raise exception 'Cannot make offer: %', replace(sqlerrm, 'Cannot save ', '') using errcode = '23514';
      end;
      v_conditions := v_conditions || to_jsonb(v_text);
    end loop;
  end if;

  return jsonb_build_object(
    'cash_at_close', v_cash::numeric(12, 2)::text,
    'holdback_days', v_holdback_days,
    'inspection_days', v_inspection,
    'exclusivity_days', v_exclusivity,
    'proposed_close_date', to_jsonb(pg_catalog.to_char(v_close, 'YYYY-MM-DD')),
    'conditions', v_conditions
  );
end
$$;

create or replace function public.offer_term_days(
  p_terms jsonb,
  p_key text,
  p_min integer,
  p_max integer,
  p_default integer
)
returns integer
language plpgsql
immutable
set search_path = ''
as $$
declare
  v_value jsonb := p_terms -> p_key;
begin
  if coalesce(jsonb_typeof(v_value), 'null') = 'null' then
    return p_default;
  end if;
  if jsonb_typeof(v_value) <> 'number' or (v_value #>> '{}')::numeric <> trunc((v_value #>> '{}')::numeric)
     or (v_value #>> '{}')::numeric not between p_min and p_max then
    raise exception 'Cannot make offer: % is a whole number of days from % to %', p_key, p_min, p_max
      using errcode = '23514';
  end if;
  return (v_value #>> '{}')::integer;
end
$$;
comment on function public.offer_term_days(jsonb, text, integer, integer, integer) is
  'Internal to offer_terms_checked(): term p_key of p_terms as a whole number of days from p_min to p_max (23514 otherwise), p_default when absent or null';
revoke execute on function public.offer_term_days(jsonb, text, integer, integer, integer)
  from public, anon, authenticated;
grant execute on function public.offer_term_days(jsonb, text, integer, integer, integer) to service_role;

comment on function public.offer_terms_checked(jsonb, numeric, text) is
  'The letter-of-intent terms p_terms of an offer of p_amount p_currency, checked (23514 naming the broken rule: unknown key, cash_at_close not a decimal string above 0 and at most the amount, holdback_days 1-60 exactly when there is a holdback, inspection_days 1-30, exclusivity_days 0-45, proposed_close_date a date from today (UTC), at most 10 conditions of 1-500 characters of plain text) and normalized: every key present, defaults filled (cash_at_close the amount, holdback_days 0, inspection_days 7, exclusivity_days 14, conditions []), cash_at_close with two decimals, conditions cleaned. Null for null terms. The offers guard calls it; offerTermsSchema in shared/offer_terms_schemas.ts is the same rule';
revoke execute on function public.offer_terms_checked(jsonb, numeric, text) from public, anon;
grant execute on function public.offer_terms_checked(jsonb, numeric, text) to authenticated, service_role;

-- -----------------------------------------------------------------------------
-- offers: terms, the chain, and why a rival was declined
-- -----------------------------------------------------------------------------
alter table public.offers
  add column if not exists terms jsonb,
  add column if not exists parent_offer_id uuid references public.offers (id),
  add column if not exists proposed_by text not null default 'buyer',
  add column if not exists decline_reason text;

alter table public.offers drop constraint if exists offers_status_known;
alter table public.offers add constraint offers_status_known check (
  status in ('pending', 'accepted', 'declined', 'withdrawn', 'expired', 'countered')
);
alter table public.offers drop constraint if exists offers_terms_is_object;
alter table public.offers add constraint offers_terms_is_object
  check (terms is null or jsonb_typeof(terms) = 'object');
alter table public.offers drop constraint if exists offers_proposed_by_known;
alter table public.offers add constraint offers_proposed_by_known
  check (proposed_by in ('buyer', 'seller'));
alter table public.offers drop constraint if exists offers_first_version_by_buyer;
alter table public.offers add constraint offers_first_version_by_buyer
  check (parent_offer_id is not null or proposed_by = 'buyer');
alter table public.offers drop constraint if exists offers_decline_reason_known;
alter table public.offers add constraint offers_decline_reason_known check (
  decline_reason is null
  or (status = 'declined' and decline_reason in ('listing_under_loi', 'another_offer_accepted'))
);

comment on column public.offers.status is
  'pending | accepted | declined | withdrawn | expired | countered; changed only along the transitions in the offers and letters of intent migration headers';
comment on column public.offers.terms is
  'The letter-of-intent terms (offer_terms_checked(): cash_at_close, holdback_days, inspection_days, exclusivity_days, proposed_close_date, conditions), normalized; null for a plain offer';
comment on column public.offers.parent_offer_id is
  'The version this one counters (counter_offer()); null for a buyer''s first offer';
comment on column public.offers.proposed_by is
  'Which side wrote this version: buyer (every first offer) or seller (a counter-offer). The other side accepts, declines or counters it; this side may withdraw it';
comment on column public.offers.decline_reason is
  'Why the offer was declined without a party deciding: listing_under_loi (another buyer''s letter of intent was accepted) or another_offer_accepted; null otherwise';
comment on constraint offers_status_known on public.offers is
  'status is pending, accepted, declined, withdrawn, expired or countered';
comment on constraint offers_terms_is_object on public.offers is 'terms is a JSON object or null';
comment on constraint offers_proposed_by_known on public.offers is 'proposed_by is buyer or seller';
comment on constraint offers_first_version_by_buyer on public.offers is
  'A chain starts with the buyer''s offer; the seller writes only counters';
comment on constraint offers_decline_reason_known on public.offers is
  'decline_reason is listing_under_loi or another_offer_accepted, and only on a declined offer';
comment on constraint offers_parent_offer_id_fkey on public.offers is 'The countered version is an offer';

create unique index if not exists offers_one_counter_per_version
  on public.offers (parent_offer_id) where parent_offer_id is not null;
comment on index public.offers_one_counter_per_version is
  'A version is countered at most once: a chain has one live version';

grant insert (terms) on table public.offers to authenticated;

-- -----------------------------------------------------------------------------
-- guard_offer_state(): the status state machine, with counters and terms
-- -----------------------------------------------------------------------------
create or replace function public.guard_offer_state()
returns trigger
language plpgsql
set search_path = ''
as $$
declare
  v_parent public.offers;
begin
  if tg_op = 'INSERT' then
    -- Clients cannot name these columns (grants); this holds for every writer.
    if new.status is distinct from 'pending' or new.deal_id is not null
       or new.decided_at is not null or new.decline_reason is not null then
      raise exception 'Cannot make offer: a new offer starts "pending" without a deal, not "%"',
        new.status using errcode = 'PT409';
    end if;
    if new.expires_at <= now() then
      raise exception 'Cannot make offer: its expiry "%" is not in the future', new.expires_at
        using errcode = '23514';
    end if;
    if new.parent_offer_id is not null then
      select * into v_parent from public.offers o where o.id = new.parent_offer_id;
      if v_parent.status is distinct from 'countered'
         or (v_parent.listing_id, v_parent.buyer_id, v_parent.currency)
            is distinct from (new.listing_id, new.buyer_id, new.currency)
         or v_parent.proposed_by = new.proposed_by then
        raise exception 'Cannot make offer: a counter-offer answers a countered version of the same chain, written by the other side'
          using errcode = 'PT409';
      end if;
    end if;
    new.terms := public.offer_terms_checked(new.terms, new.amount, new.currency);
    return new;
  end if;

  if (new.id, new.listing_id, new.buyer_id, new.amount, new.currency, new.message, new.created_at,
      new.terms, new.parent_offer_id, new.proposed_by)
     is distinct from
     (old.id, old.listing_id, old.buyer_id, old.amount, old.currency, old.message, old.created_at,
      old.terms, old.parent_offer_id, old.proposed_by)
  then
    raise exception 'Cannot change offer "%": its terms are fixed; counter it, or withdraw it and make a new offer',
      old.id using errcode = 'PT409';
  end if;

  if new.status = old.status then
    if new.deal_id is distinct from old.deal_id
       or new.decided_at is distinct from old.decided_at
       or new.decline_reason is distinct from old.decline_reason
       or (old.status <> 'pending' and new.expires_at is distinct from old.expires_at) then
      raise exception 'Cannot change offer "%": it is %, and its deal, decision and expiry change only with its status',
        old.id, old.status using errcode = 'PT409';
    end if;
    return new;
  end if;

  if old.status <> 'pending'
     or new.status not in ('accepted', 'declined', 'withdrawn', 'expired', 'countered') then
    raise exception 'Cannot change offer "%": "%" cannot become "%"', old.id, old.status, new.status
      using errcode = 'PT409';
  end if;
  if (new.status = 'accepted') <> (new.deal_id is not null) then
    raise exception 'Cannot change offer "%" to "%": an offer has a deal exactly when it is accepted',
      old.id, new.status using errcode = 'PT409';
  end if;
  new.decided_at := now();
  return new;
end
$$;
comment on function public.guard_offer_state() is
  'Trigger on offers: a new offer starts pending, without deal, decision or decline reason, expiring in the future (PT409, 23514), a counter answers a countered version of its chain written by the other side (PT409), and its terms are checked and normalized (offer_terms_checked, 23514); afterwards only pending -> accepted (with its deal) | declined | withdrawn | expired | countered, the terms never change (PT409 otherwise), and leaving pending stamps decided_at';

-- -----------------------------------------------------------------------------
-- assert_offer_pending(): a countered version is answered by its successor
-- -----------------------------------------------------------------------------
create or replace function public.assert_offer_pending(p_offer public.offers, p_action text)
returns void
language plpgsql
stable
set search_path = ''
as $$
declare
  v_next uuid;
begin
  if p_offer.status = 'countered' then
    select o.id into v_next from public.offers o where o.parent_offer_id = p_offer.id;
    raise exception 'Cannot % offer "%": it was countered; answer the newest version', p_action,
      p_offer.id using errcode = 'PT409', hint = format('The counter-offer is "%s"', v_next);
  end if;
  if p_offer.status <> 'pending' then
    raise exception 'Cannot % offer "%": %', p_action, p_offer.id,
      case p_offer.status
        when 'accepted' then 'it was already accepted'
        when 'declined' then 'it was already declined'
        when 'withdrawn' then 'it was already withdrawn'
        when 'expired' then 'it has expired'
        else format('it is "%s"', p_offer.status)
      end
      using errcode = 'PT409';
  end if;
  if p_offer.expires_at <= now() then
    raise exception 'Cannot % offer "%": it expired at %', p_action, p_offer.id,
      to_char(p_offer.expires_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI "UTC"')
      using errcode = 'PT409';
  end if;
end
$$;
comment on function public.assert_offer_pending(public.offers, text) is
  'Raises PT409 (with a message for the client naming p_action; for a countered version a hint naming its counter-offer) unless the offer is pending and not past expires_at';

-- -----------------------------------------------------------------------------
-- lock_offer(): the shared first steps of every move on an offer
-- -----------------------------------------------------------------------------
create or replace function public.lock_offer(p_offer uuid, p_action text, p_by_author boolean)
returns public.offers
language plpgsql
-- Invoker rights: only the owner (the definer RPCs below) and service_role call it.
set search_path = ''
as $$
declare
  v_uid uuid := auth.uid();
  v_listing_id uuid;
  v_seller uuid;
  v_offer public.offers;
  v_side text;
begin
  perform public.assert_signed_in(p_action || ' this offer');
  -- listing_id never changes, so it may be read before the locks.
  select o.listing_id into v_listing_id from public.offers o where o.id = p_offer;
  if found then
    -- The lock order: the listing, then the offer. Every move on the
    -- listing's offers queues here; the next finds what the previous committed.
    select l.seller_id into v_seller from public.listings l where l.id = v_listing_id for update;
    select * into v_offer from public.offers o where o.id = p_offer for update;
  end if;
  if v_offer.id is null
     or (public.is_client_request() and v_uid is distinct from v_offer.buyer_id
         and v_uid is distinct from v_seller and not public.is_admin()) then
    raise exception 'Cannot % offer "%": it does not exist', p_action, p_offer using errcode = 'PT404';
  end if;
  if public.is_client_request() then
    v_side := case
      when v_uid = v_offer.buyer_id then 'buyer'
      when v_uid = v_seller then 'seller'
    end;
    if v_side is null then
      raise exception 'Cannot % offer "%": only the buyer and the listing''s seller may', p_action,
        p_offer using errcode = '42501';
    end if;
    if p_by_author and v_side <> v_offer.proposed_by then
      raise exception 'Cannot % offer "%": only the side that made it (the %) may', p_action, p_offer,
        v_offer.proposed_by using errcode = '42501',
        hint = 'Decline it or counter it instead';
    end if;
    if not p_by_author and v_side = v_offer.proposed_by then
      raise exception 'Cannot % offer "%": you made it; the % answers it', p_action, p_offer,
        case v_offer.proposed_by when 'buyer' then 'seller' else 'buyer' end
        using errcode = '42501', hint = 'Withdraw it to take it back';
    end if;
  end if;
  return v_offer;
end
$$;
comment on function public.lock_offer(uuid, text, boolean) is
  'Internal: refuses an anonymous caller (42501), locks the offer''s listing and the offer and answers it; PT404 when it does not exist or the caller may not read it; 42501 unless the caller is the side that may make the move (p_by_author: the side that wrote the version, else the other side). Any caller on the service connection';
revoke execute on function public.lock_offer(uuid, text, boolean) from public, anon, authenticated;
grant execute on function public.lock_offer(uuid, text, boolean) to service_role;

-- -----------------------------------------------------------------------------
-- listing_under_loi(): is another buyer doing due diligence on this listing?
-- -----------------------------------------------------------------------------
create or replace function public.listing_under_loi(p_listing uuid)
returns boolean
language sql
stable
-- Definer rights: a buyer may not read another buyer's deal. It tells only
-- what the listing page shows anyway: the listing is off the market.
security definer
set search_path = ''
as $$
  select exists (
    select 1 from public.deals d where d.listing_id = p_listing and d.status = 'in_diligence'
  )
$$;
comment on function public.listing_under_loi(uuid) is
  'True while the listing has a deal in in_diligence: an accepted letter of intent holds it off the market (no new offers or access requests). supabase.rpc("listing_under_loi", { p_listing })';
revoke execute on function public.listing_under_loi(uuid) from public;
grant execute on function public.listing_under_loi(uuid) to anon, authenticated, service_role;

create or replace function public.assert_listing_not_under_loi(p_listing uuid, p_action text)
returns void
language plpgsql
stable
set search_path = ''
as $$
begin
  if public.listing_under_loi(p_listing) then
    raise exception 'Cannot %: the listing is under a letter of intent; another buyer has exclusivity for due diligence',
      p_action using errcode = '42501', hint = 'listing_under_loi';
  end if;
end
$$;
comment on function public.assert_listing_not_under_loi(uuid, text) is
  'Raises 42501 with hint listing_under_loi (naming p_action) while the listing is under a letter of intent (listing_under_loi)';
revoke execute on function public.assert_listing_not_under_loi(uuid, text) from public, anon, authenticated;
grant execute on function public.assert_listing_not_under_loi(uuid, text) to service_role;

-- -----------------------------------------------------------------------------
-- Offers on a listing under an LOI: refused before the insert policy and
-- again under the listing's lock
-- -----------------------------------------------------------------------------
create or replace function public.refuse_offer_under_loi()
returns trigger
language plpgsql
-- Definer rights: the buyer may not read the listing's deals.
security definer
set search_path = ''
as $$
begin
  -- A counter-offer's own chain is already closed by the accept; this is
  -- about a new offer on a listing that is off the market.
  perform public.assert_listing_not_under_loi(new.listing_id, 'make an offer on this listing');
  return new;
end
$$;
comment on function public.refuse_offer_under_loi() is
  'Trigger on offers (before insert, so before the insert policy): 42501 with hint listing_under_loi while the listing is under a letter of intent';
revoke execute on function public.refuse_offer_under_loi() from public, anon, authenticated;

drop trigger if exists offers_refuse_under_loi on public.offers;
create trigger offers_refuse_under_loi
  before insert on public.offers
  for each row execute function public.refuse_offer_under_loi();
comment on trigger offers_refuse_under_loi on public.offers is
  'A listing under a letter of intent takes no new offers (42501, hint listing_under_loi)';

-- As the listing access migration wrote it, with the LOI check before the
-- active-deal check: an offer that raced the accept of an LOI waits here for
-- it and is then refused for the same reason as one made after it.
create or replace function public.check_offer_listing()
returns trigger
language plpgsql
-- Definer rights: the buyer may not read the listing row or its deals.
-- After insert, so RLS has refused a client's offer on a listing it may not
-- make one on before anything about that listing is told in a message.
security definer
set search_path = ''
as $$
declare
  v_listing record;
begin
  -- Waits for an accept_offer() in progress on the listing, then looks again
  -- with what it committed (the insert policy saw the statement's snapshot).
  select l.seller_id, l.currency, l.review_status, l.access_mode into v_listing
  from public.listings l where l.id = new.listing_id
  for share;
  if not found then
    return null; -- the foreign key refuses it
  end if;
  if new.buyer_id = v_listing.seller_id then
    raise exception 'Cannot make offer on listing "%": it is the buyer''s own listing', new.listing_id
      using errcode = '23514';
  end if;
  if new.currency <> v_listing.currency then
    raise exception 'Cannot make offer on listing "%": the offer is in "%" but the listing is priced in "%"',
      new.listing_id, new.currency, v_listing.currency using errcode = '23514';
  end if;
  if v_listing.review_status <> 'approved' then
    raise exception 'Cannot make offer on listing "%": it is not on sale', new.listing_id
      using errcode = 'PT409';
  end if;
  if v_listing.access_mode = 'nda' and not public.has_listing_access(new.listing_id, new.buyer_id) then
    raise exception 'Cannot make offer on listing "%": it is confidential, and the seller has not approved your access',
      new.listing_id using errcode = '42501',
        hint = 'Accept the NDA and ask for access first: supabase.rpc("request_listing_access")';
  end if;
  perform public.assert_listing_not_under_loi(new.listing_id, 'make an offer on this listing');
  if not public.listing_open_for_offers(new.listing_id) then
    raise exception 'Cannot make offer on listing "%": it already has a deal in progress',
      new.listing_id using errcode = 'PT409';
  end if;
  return null;
end
$$;
comment on function public.check_offer_listing() is
  'Trigger on offers (after insert): under a share lock on the listing, refuses an offer by the listing''s seller or in another currency than the listing''s (23514), on a listing that is not approved or has an active deal (PT409), on a confidential (nda) listing by a buyer without approved access (42501), or on a listing under a letter of intent (42501, hint listing_under_loi)';

-- -----------------------------------------------------------------------------
-- deals: the agreed terms and the exclusivity window
-- -----------------------------------------------------------------------------
alter table public.deals
  add column if not exists terms jsonb,
  add column if not exists exclusive_until timestamptz;

alter table public.deals drop constraint if exists deals_status_known;
alter table public.deals add constraint deals_status_known check (
  status in ('in_diligence', 'pending_payment', 'funded', 'in_handover', 'completed', 'cancelled',
             'refunded', 'disputed')
);
alter table public.deals drop constraint if exists deals_terms_is_object;
alter table public.deals add constraint deals_terms_is_object
  check (terms is null or jsonb_typeof(terms) = 'object');
alter table public.deals drop constraint if exists deals_diligence_has_window;
alter table public.deals add constraint deals_diligence_has_window
  check (status <> 'in_diligence' or exclusive_until is not null);

comment on column public.deals.status is
  'in_diligence | pending_payment | funded | in_handover | completed | cancelled | refunded | disputed (state tables in the deal_states and letters of intent migrations); written only by transition_deal()';
comment on column public.deals.terms is
  'The agreed letter-of-intent terms, frozen at acceptance (a copy of the accepted offer''s terms: cash_at_close, holdback_days, inspection_days, exclusivity_days, proposed_close_date, conditions); null for a plain offer''s deal. Never changes';
comment on column public.deals.exclusive_until is
  'When the buyer''s exclusivity for due diligence ends (acceptance + exclusivity_days, moved later by extend_exclusivity, at most 45 days after acceptance); past it an in_diligence deal lapses. Null for a deal that never was in diligence';
comment on constraint deals_status_known on public.deals is
  'status is one of the deal states';
comment on constraint deals_terms_is_object on public.deals is 'terms is a JSON object or null';
comment on constraint deals_diligence_has_window on public.deals is
  'A deal in due diligence has an exclusivity end';

create index if not exists deals_in_diligence_exclusive_until_idx
  on public.deals (exclusive_until) where status = 'in_diligence';
comment on index public.deals_in_diligence_exclusive_until_idx is
  'Deals in due diligence by the end of their exclusivity (the deal-deadlines job)';
create index if not exists deals_in_diligence_listing_idx
  on public.deals (listing_id) where status = 'in_diligence';
comment on index public.deals_in_diligence_listing_idx is
  'The listing''s deal in due diligence (listing_under_loi)';

create or replace function public.deal_transition_allowed(p_from text, p_to text)
returns boolean
language sql
immutable
set search_path = ''
as $$
  select coalesce((p_from, p_to) in (
    ('in_diligence', 'pending_payment'),
    ('in_diligence', 'cancelled'),
    ('pending_payment', 'funded'),
    ('pending_payment', 'cancelled'),
    ('funded', 'in_handover'),
    ('funded', 'completed'),
    ('in_handover', 'completed'),
    ('funded', 'refunded'),
    ('in_handover', 'refunded'),
    ('funded', 'disputed'),
    ('in_handover', 'disputed'),
    ('disputed', 'funded'),
    ('disputed', 'refunded'),
    ('completed', 'refunded')
  ), false)
$$;
comment on function public.deal_transition_allowed(text, text) is
  'True when the deal state machine allows p_from → p_to (the state tables in the deal_states and letters of intent migrations); false for nulls';

-- transition_deal() takes the event's detail: a move that says why (a
-- withdrawal's reason, the window that lapsed, a cancellation's reason) writes
-- it in the one audit row, instead of amending the row afterwards.
drop function if exists public.transition_deal(uuid, text, text, text, uuid);
create or replace function public.transition_deal(
  p_deal uuid,
  p_to text,
  p_cause text,
  p_payproc_object text default null,
  p_actor uuid default null,
  p_detail jsonb default '{}'::jsonb
)
returns public.deals
language plpgsql
-- Invoker rights: only the service connection (and definer functions such as
-- cancel_deal, which check the caller first) may execute it.
set search_path = ''
as $$
declare
  v_deal public.deals;
  v_from text;
begin
  select * into v_deal from public.deals where id = p_deal for update;
  if not found then
    raise exception 'Cannot change deal "%": it does not exist', p_deal using errcode = 'P0002';
  end if;
  v_from := v_deal.status;
  if not public.deal_transition_allowed(v_from, p_to) then
    raise exception 'Cannot move the deal from % to %', replace(v_from, '_', ' '), replace(p_to, '_', ' ')
      using errcode = 'PT409',
            detail = format('deal %s: %s → %s refused (%s)', p_deal, v_from, p_to, p_cause);
  end if;
  perform set_config('marketplace.deal_transition', p_deal::text, true);
  update public.deals d set
    status = p_to,
    commission = case
      when p_to = 'funded' and d.commission is null
        then public.deal_commission(d.amount, d.currency, d.seller_id)
      else d.commission
    end,
    funded_at = case when p_to = 'funded' then coalesce(d.funded_at, now()) else d.funded_at end,
    closed_at = case when p_to in ('completed', 'cancelled', 'refunded') then now() else null end
  where d.id = p_deal
  returning * into v_deal;
  perform set_config('marketplace.deal_transition', '', true);
  insert into public.deal_events
    (deal_id, from_status, to_status, cause, payproc_object_id, actor_id, detail)
  values (p_deal, v_from, p_to, p_cause, p_payproc_object, p_actor, coalesce(p_detail, '{}'::jsonb));
  return v_deal;
end
$$;
comment on function public.transition_deal(uuid, text, text, text, uuid, jsonb) is
  'Moves deal p_deal to p_to under a row lock when the state table allows it (PT409 otherwise), freezes the commission on entering funded, stamps funded_at/closed_at and records the transition in deal_events with p_cause, the processor object, the actor and p_detail (a JSON object: why, as the mover says it). The only writer of deals.status';
revoke execute on function public.transition_deal(uuid, text, text, text, uuid, jsonb)
  from public, anon, authenticated;
grant execute on function public.transition_deal(uuid, text, text, text, uuid, jsonb) to service_role;

create or replace function public.guard_deal_state()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if tg_op = 'INSERT' then
    if new.status not in ('pending_payment', 'in_diligence') or new.commission is not null
       or new.funded_at is not null or new.closed_at is not null then
      raise exception 'Cannot create a deal in state %: deals start pending payment, or in due diligence',
        new.status using errcode = 'PT409';
    end if;
    return new;
  end if;
  if (new.status, new.commission, new.funded_at, new.closed_at)
       is distinct from (old.status, old.commission, old.funded_at, old.closed_at)
     and current_setting('marketplace.deal_transition', true) is distinct from old.id::text then
    raise exception 'Cannot change the deal''s state directly: use transition_deal()'
      using errcode = 'PT409';
  end if;
  if new.terms is distinct from old.terms then
    raise exception 'Cannot change deal "%": its agreed terms are frozen', old.id using errcode = 'PT409';
  end if;
  if new.exclusive_until is distinct from old.exclusive_until
     and (old.status <> 'in_diligence' or new.exclusive_until is null
          or new.exclusive_until < old.exclusive_until) then
    raise exception 'Cannot change deal "%": exclusivity only moves later, during due diligence', old.id
      using errcode = 'PT409';
  end if;
  return new;
end
$$;
comment on function public.guard_deal_state() is
  'Trigger on deals: a new deal starts pending_payment or in_diligence without commission; status, commission, funded_at and closed_at change only inside transition_deal(); the agreed terms never change; exclusive_until only moves later during in_diligence (PT409 otherwise)';

-- An extension is pushed as a state change is.
drop trigger if exists deals_broadcast_exclusivity on public.deals;
create trigger deals_broadcast_exclusivity
  after update of exclusive_until on public.deals
  for each row
  when (old.exclusive_until is distinct from new.exclusive_until)
  execute function public.broadcast_deal_change();
comment on trigger deals_broadcast_exclusivity on public.deals is
  'Pushes an extended exclusivity window to the buyer''s and the seller''s topics user:<id>';

-- -----------------------------------------------------------------------------
-- The handover checklist is drafted during due diligence too
-- -----------------------------------------------------------------------------
-- As the deal handover migration wrote it, with in_diligence among the states
-- that take new steps: the assets the agreement lists are agreed while the
-- buyer looks at them.
create or replace function public.lock_deal_for_handover(p_deal uuid, p_side text, p_action text)
returns public.deals
language plpgsql
-- Invoker rights: reached only from the definer functions of the checklist.
set search_path = ''
as $$
declare
  v_user uuid := auth.uid();
  v_deal public.deals;
begin
  -- A share lock: participants' step changes run side by side; the job's
  -- completion (an update lock on the deal) waits for them, and they for it.
  select * into v_deal from public.deals where id = p_deal for share;
  if not found or v_user is null
     or (p_side = 'seller' and v_deal.seller_id <> v_user)
     or (p_side = 'buyer' and v_deal.buyer_id <> v_user) then
    raise exception 'Cannot %: only the deal''s % may', p_action, p_side using errcode = '42501';
  end if;
  if v_deal.handover_completed_at is not null then
    raise exception 'Cannot %: the handover is complete', p_action using errcode = 'PT409';
  end if;
  if p_action <> 'add a handover step' and v_deal.status not in ('funded', 'in_handover') then
    raise exception 'Cannot %: the deal is %', p_action, replace(v_deal.status, '_', ' ')
      using errcode = 'PT409';
  end if;
  if p_action = 'add a handover step'
     and v_deal.status not in ('in_diligence', 'pending_payment', 'funded', 'in_handover') then
    raise exception 'Cannot %: the deal is %', p_action, replace(v_deal.status, '_', ' ')
      using errcode = 'PT409';
  end if;
  return v_deal;
end
$$;
comment on function public.lock_deal_for_handover(uuid, text, text) is
  'Share-locks deal p_deal for a change of its checklist and checks it: the caller (auth.uid()) is its p_side (seller or buyer; 42501 otherwise, also for unknown deals), the handover is not complete and the deal is funded or in handover (in due diligence or pending payment too for adding steps; PT409 otherwise)';

-- -----------------------------------------------------------------------------
-- Access requests: suspended while another buyer's LOI holds the listing
-- -----------------------------------------------------------------------------
alter table public.listing_access_requests drop constraint if exists listing_access_requests_status_known;
alter table public.listing_access_requests add constraint listing_access_requests_status_known check (
  status in ('pending', 'approved', 'suspended', 'declined', 'withdrawn', 'expired', 'revoked')
);
comment on constraint listing_access_requests_status_known on public.listing_access_requests is
  'status is pending, approved, suspended, declined, withdrawn, expired or revoked';
comment on column public.listing_access_requests.status is
  'pending | approved | suspended | declined | withdrawn | expired | revoked; changed only along the transitions in the listing access and letters of intent migration headers';

-- One open request per buyer and listing: a suspended one is still theirs.
drop index if exists public.listing_access_requests_one_open;
create unique index listing_access_requests_one_open
  on public.listing_access_requests (listing_id, buyer_id)
  where status in ('pending', 'approved', 'suspended');
comment on index public.listing_access_requests_one_open is
  'A buyer has at most one open (pending, approved or suspended) request per listing: asking again returns it';

create or replace function public.guard_listing_access_request()
returns trigger
language plpgsql
set search_path = ''
as $$
declare
  v_move text;
begin
  if tg_op = 'INSERT' then
    if new.status is distinct from 'pending' or new.decided_at is not null
       or new.revoked_at is not null then
      raise exception 'Cannot request access: a new request starts "pending", not "%"', new.status
        using errcode = 'PT409';
    end if;
    return new;
  end if;

  if (new.id, new.listing_id, new.buyer_id, new.seller_id, new.message, new.nda_version,
      new.nda_sha256, new.nda_accepted_at, new.expires_at, new.created_at)
     is distinct from
     (old.id, old.listing_id, old.buyer_id, old.seller_id, old.message, old.nda_version,
      old.nda_sha256, old.nda_accepted_at, old.expires_at, old.created_at) then
    raise exception 'Cannot change access request "%": its terms are fixed', old.id
      using errcode = 'PT409';
  end if;

  if new.status = old.status then
    if (new.decided_at, new.decided_by, new.decision_reason, new.revoked_at, new.revoked_by,
        new.revoke_reason)
       is distinct from
       (old.decided_at, old.decided_by, old.decision_reason, old.revoked_at, old.revoked_by,
        old.revoke_reason) then
      raise exception 'Cannot change access request "%": it is %, and its decision changes only with its status',
        old.id, old.status using errcode = 'PT409';
    end if;
    return new;
  end if;

  v_move := old.status || ' -> ' || new.status;
  if v_move in ('pending -> approved', 'pending -> declined', 'pending -> withdrawn',
                'pending -> expired') then
    new.decided_at := now();
    new.revoked_at := null;
  elsif v_move in ('approved -> revoked', 'suspended -> revoked') then
    new.revoked_at := now();
  elsif v_move in ('approved -> suspended', 'suspended -> approved') then
    -- The decision stands; only whether it applies now changes.
    if (new.decided_at, new.decided_by, new.decision_reason)
       is distinct from (old.decided_at, old.decided_by, old.decision_reason) then
      raise exception 'Cannot change access request "%": suspending keeps the decision', old.id
        using errcode = 'PT409';
    end if;
  else
    raise exception 'Cannot change access request "%": "%" cannot become "%"', old.id, old.status,
      new.status using errcode = 'PT409';
  end if;
  return new;
end
$$;
comment on function public.guard_listing_access_request() is
  'Trigger on listing_access_requests: a new request starts pending; afterwards only pending -> approved | declined | withdrawn | expired (stamps decided_at), approved | suspended -> revoked (stamps revoked_at) and approved <-> suspended (the decision kept); the terms never change (PT409 otherwise)';

create or replace function public.refuse_access_under_loi()
returns trigger
language plpgsql
-- Definer rights: the caller may not read the listing's deals or other
-- requests.
security definer
set search_path = ''
as $$
begin
  if tg_op = 'INSERT' then
    perform public.assert_listing_not_under_loi(new.listing_id, 'request access to this listing');
    if exists (
      select 1 from public.listing_access_requests r
      where r.listing_id = new.listing_id and r.buyer_id = new.buyer_id and r.status = 'suspended'
    ) then
      raise exception 'Cannot request access to listing "%": your access is suspended while another buyer''s deal holds the listing',
        new.listing_id using errcode = 'PT409',
          hint = 'It is restored by itself if that deal is cancelled';
    end if;
  elsif old.status = 'pending' and new.status = 'approved' then
    perform public.assert_listing_not_under_loi(new.listing_id, 'approve access to this listing');
  end if;
  return new;
end
$$;
comment on function public.refuse_access_under_loi() is
  'Trigger on listing_access_requests (before insert, and before approving): 42501 with hint listing_under_loi while the listing is under a letter of intent; PT409 for a new request of a buyer whose access is suspended';
revoke execute on function public.refuse_access_under_loi() from public, anon, authenticated;

drop trigger if exists listing_access_requests_refuse_under_loi on public.listing_access_requests;
create trigger listing_access_requests_refuse_under_loi
  before insert or update of status on public.listing_access_requests
  for each row execute function public.refuse_access_under_loi();
comment on trigger listing_access_requests_refuse_under_loi on public.listing_access_requests is
  'A listing under a letter of intent takes no new access requests and approves none (42501, hint listing_under_loi)';

create or replace function public.revoke_listing_access(p_request uuid, p_reason text default null)
returns void
language plpgsql
-- Definer rights: a seller may not update requests; the caller is checked
-- first (lock_listing_access_request).
security definer
set search_path = ''
as $$
declare
  v_request public.listing_access_requests;
  v_reason text;
begin
  v_request := public.lock_listing_access_request(p_request, 'revoke access', true);
  v_reason := public.clean_user_text(p_reason, 'the reason', 500, false);
  if v_request.status not in ('approved', 'suspended') then
    raise exception 'Cannot revoke access: access request "%" is %, not approved', v_request.id,
      v_request.status using errcode = 'PT409';
  end if;
  update public.listing_access_requests
  set status = 'revoked', revoked_by = auth.uid(), revoke_reason = v_reason
  where id = v_request.id;
  perform public.queue_notice('listing_access_revoked', v_request.buyer_id, v_request.id);
end
$$;
comment on function public.revoke_listing_access(uuid, text) is
  'The listing''s seller or an admin (42501 for the buyer; PT404 for others and unknown requests) revokes approved or suspended access (PT409 otherwise), with an optional reason (at most 500 characters, 22023); the buyer is told and no longer sees the confidential fields. supabase.rpc("revoke_listing_access", { p_request, p_reason })';

-- The LOI's deal ends without the sale: the suspended access comes back.
create or replace function public.restore_suspended_access()
returns trigger
language plpgsql
-- Definer rights: the move may be made by a participant's RPC, which may not
-- write access requests.
security definer
set search_path = ''
as $$
begin
  update public.listing_access_requests r set status = 'approved'
  where r.listing_id = new.listing_id and r.status = 'suspended';
  return null;
end
$$;
comment on function public.restore_suspended_access() is
  'Trigger on deals: a deal that ends without the sale (cancelled or refunded) approves again the access it suspended on its listing';
revoke execute on function public.restore_suspended_access() from public, anon, authenticated;

drop trigger if exists deals_restore_suspended_access on public.deals;
create trigger deals_restore_suspended_access
  after update of status on public.deals
  for each row
  when (new.status in ('cancelled', 'refunded') and old.status is distinct from new.status)
  execute function public.restore_suspended_access();
comment on trigger deals_restore_suspended_access on public.deals is
  'The listing reopens: access suspended by a letter of intent is approved again';

-- -----------------------------------------------------------------------------
-- The notice queue's new kinds, and the counter limit
-- -----------------------------------------------------------------------------
alter table public.notice_queue drop constraint if exists notice_queue_kind_known;
alter table public.notice_queue add constraint notice_queue_kind_known check (
  kind in ('listing_access_requested', 'listing_access_approved', 'listing_access_declined',
           'listing_access_revoked', 'listing_access_expired', 'conversation_unread',
           'conversation_reported', 'offer_countered', 'offer_accepted',
           'deal_diligence_confirmed', 'deal_withdrawn', 'deal_exclusivity_extended',
           'deal_exclusivity_ending', 'deal_exclusivity_lapsed')
);
comment on constraint notice_queue_kind_known on public.notice_queue is
  'kind is one of shared/notice_kinds.ts';
comment on table public.notice_queue is
  'Notices that changes made in SQL owe a user (an access request to its seller, a decision to its buyer, unread messages, a report to the admins, a counter-offer or an acceptance to the other side, a deal''s diligence moves and exclusivity reminders), queued in the transaction of the change and written once by send-queued-notices every minute (state machine in the notice queue migration header). Admins read it; only the service connection writes';
comment on column public.notice_queue.subject_id is
  'What it is about, by kind: a listing access request, a conversation, a conversation report, an offer version (offer_*) or a deal (deal_*)';

-- A deal that leaves due diligence owes no more reminders: what is still
-- pending about its window is dropped in the same transaction. (The queue's
-- builders read deals without locking them, so the deal's lock, held here,
-- and the queue rows' locks, held by a run, never wait on each other.)
create or replace function public.drop_diligence_notices()
returns trigger
language plpgsql
-- Definer rights: the move may be made by a participant's RPC, which may not
-- write the queue.
security definer
set search_path = ''
as $$
begin
  update public.notice_queue q
  set status = 'dropped', outcome = 'deal ' || replace(new.status, '_', ' '), done_at = clock_timestamp()
  where q.subject_id = new.id and q.status = 'pending'
    and q.kind in ('deal_exclusivity_ending', 'deal_exclusivity_extended');
  return null;
end
$$;
comment on function public.drop_diligence_notices() is
  'Trigger on deals: a deal leaving in_diligence drops its pending exclusivity reminders and extension notices (outcome "deal <new status>")';
revoke execute on function public.drop_diligence_notices() from public, anon, authenticated;

drop trigger if exists deals_drop_diligence_notices on public.deals;
create trigger deals_drop_diligence_notices
  after update of status on public.deals
  for each row
  when (old.status = 'in_diligence' and new.status <> 'in_diligence')
  execute function public.drop_diligence_notices();
comment on trigger deals_drop_diligence_notices on public.deals is
  'Leaving due diligence drops the reminders about its window';

insert into public.client_limits (name, max_hits, window_seconds, description) values
  ('offer_counter:per_day', 50, 86400,
   'Counter-offers a user makes, per day (key offer_counter:per_day:<user id>)')
on conflict (name) do nothing;

-- -----------------------------------------------------------------------------
-- counter_offer(): the other side answers with a new version
-- -----------------------------------------------------------------------------
create or replace function public.counter_offer(
  p_offer uuid,
  p_amount numeric,
  p_terms jsonb,
  p_message text default null
)
returns uuid
language plpgsql
-- Definer rights: neither side may write offers this way itself; the caller
-- is checked first (lock_offer).
security definer
set search_path = ''
as $$
declare
  v_offer public.offers;
  v_seller uuid;
  v_side text;
  v_versions integer;
  v_message text;
  v_id uuid;
begin
  v_offer := public.lock_offer(p_offer, 'counter', false);
  perform public.assert_offer_pending(v_offer, 'counter');
  if p_amount is null then
    raise exception 'Cannot counter offer "%": name the amount (p_amount)', p_offer using errcode = '22023';
  end if;
  v_message := public.clean_user_text(p_message, 'the message', 2000, false);
  with recursive chain as (
    select o.id, o.parent_offer_id from public.offers o where o.id = v_offer.id
    union all
    select o.id, o.parent_offer_id from public.offers o join chain c on o.id = c.parent_offer_id
  )
  select count(*) into v_versions from chain;
  if v_versions >= 20 then
    raise exception 'Cannot counter offer "%": the negotiation already has 20 versions; accept, decline or withdraw',
      p_offer using errcode = 'PT409';
  end if;

  v_side := case v_offer.proposed_by when 'buyer' then 'seller' else 'buyer' end;
  update public.offers o set status = 'countered' where o.id = v_offer.id;
  insert into public.offers (
    listing_id, buyer_id, amount, currency, message, terms, parent_offer_id, proposed_by
  )
  values (
    v_offer.listing_id, v_offer.buyer_id, p_amount, v_offer.currency, v_message, p_terms,
    v_offer.id, v_side
  )
  returning id into v_id;

  perform public.take_user_limit('offer_counter:per_day', 'counter an offer');
  select l.seller_id into v_seller from public.listings l where l.id = v_offer.listing_id;
  perform public.queue_notice(
    'offer_countered',
    case v_side when 'seller' then v_offer.buyer_id else v_seller end,
    v_id
  );
  return v_id;
end
$$;
comment on function public.counter_offer(uuid, numeric, jsonb, text) is
  'The side that did not write pending offer p_offer (42501 for its author; PT404 for others and unknown offers) answers it with a new version at p_amount with terms p_terms (null: a plain offer; checked as offers.terms, 23514) and an optional message (22023 when over 2000 characters or not plain text): p_offer becomes countered, the new version (parent_offer_id p_offer) is pending, the other side is told, and its id is answered. PT409 when p_offer is not pending (a countered one: answer the newest version), has expired, the listing is no longer open, or the chain has 20 versions; 42501 with hint listing_under_loi while another LOI holds the listing; PT429 beyond client_limits offer_counter:per_day. supabase.rpc("counter_offer", { p_offer, p_amount, p_terms, p_message })';
revoke execute on function public.counter_offer(uuid, numeric, jsonb, text) from public, anon;
grant execute on function public.counter_offer(uuid, numeric, jsonb, text) to authenticated, service_role;

-- -----------------------------------------------------------------------------
-- accept_offer(): the other side accepts; an LOI starts due diligence
-- -----------------------------------------------------------------------------
create or replace function public.accept_offer(p_offer uuid)
returns uuid
language plpgsql
-- Definer rights: no side may update offers or insert deals; the caller is
-- checked first (lock_offer).
security definer
set search_path = ''
as $$
declare
  v_listing public.listings;
  v_offer public.offers;
  v_diligence boolean;
  v_exclusive_until timestamptz;
  v_cause text;
  v_deal uuid;
begin
  v_offer := public.lock_offer(p_offer, 'accept', false);
  -- Locked by lock_offer (the listing first).
  select * into v_listing from public.listings l where l.id = v_offer.listing_id;

  perform public.assert_offer_pending(v_offer, 'accept');
  if v_listing.review_status <> 'approved' then
    raise exception 'Cannot accept offer "%": the listing is not on sale', p_offer
      using errcode = 'PT409';
  end if;
  if not public.listing_open_for_offers(v_listing.id) then
    raise exception 'Cannot accept offer "%": the listing already has a deal in progress', p_offer
      using errcode = 'PT409';
  end if;
  if v_offer.currency <> v_listing.currency then
    raise exception 'Cannot accept offer "%": the listing is now priced in "%", not "%"',
      p_offer, v_listing.currency, v_offer.currency using errcode = 'PT409';
  end if;

  v_diligence := coalesce((v_offer.terms ->> 'exclusivity_days')::integer, 0) > 0;
  if v_diligence then
    v_exclusive_until := now() + make_interval(days => (v_offer.terms ->> 'exclusivity_days')::integer);
  end if;

  -- The deal's first event (deals_record_creation) says why it exists.
  v_cause := current_setting('marketplace.deal_cause', true);
  perform set_config('marketplace.deal_cause', 'offer_accepted', true);
  insert into public.deals (
    listing_id, buyer_id, seller_id, amount, currency, offer_id, status, terms, exclusive_until
  )
  values (
    v_listing.id, v_offer.buyer_id, v_listing.seller_id, v_offer.amount, v_offer.currency, v_offer.id,
    case when v_diligence then 'in_diligence' else 'pending_payment' end, v_offer.terms,
    v_exclusive_until
  )
  returning id into v_deal;
  perform set_config('marketplace.deal_cause', coalesce(v_cause, ''), true);

  update public.offers o set status = 'accepted', deal_id = v_deal where o.id = p_offer;
  -- The rivals: declined with the reason, or expired when they had already lapsed.
  update public.offers o
  set status = case when o.expires_at <= now() then 'expired' else 'declined' end,
      decline_reason = case
        when o.expires_at <= now() then null
        when v_diligence then 'listing_under_loi'
        else 'another_offer_accepted'
      end
  where o.listing_id = v_listing.id and o.status = 'pending' and o.id <> p_offer;

  perform public.queue_notice(
    'offer_accepted',
    case v_offer.proposed_by when 'buyer' then v_offer.buyer_id else v_listing.seller_id end,
    v_offer.id
  );
  if v_diligence then
    -- Other buyers' access is suspended for the window (restored if the deal
    -- ends without the sale: restore_suspended_access).
    update public.listing_access_requests r set status = 'suspended'
    where r.listing_id = v_listing.id and r.status = 'approved' and r.buyer_id <> v_offer.buyer_id;
    perform public.queue_exclusivity_reminders(v_deal);
  end if;
  return v_deal;
end
$$;
comment on function public.accept_offer(uuid) is
  'The side that did not write pending offer p_offer (the seller for a buyer''s offer, the buyer for a seller''s counter; 42501 for its author; PT404 for others and unknown offers) accepts it on an approved listing without an active deal (PT409 otherwise, and for a countered, decided or expired version): creates the deal at the offered amount and currency (deal_events cause offer_accepted) — in in_diligence with exclusive_until and the frozen terms when the terms give exclusivity_days > 0, else pending_payment — marks the offer accepted, declines the listing''s other pending offers (decline_reason listing_under_loi or another_offer_accepted), suspends other buyers'' approved access during diligence, tells the author and returns the deal''s id. Serialized per listing by a row lock, so concurrent accepts create one deal. supabase.rpc("accept_offer", { p_offer })';

-- -----------------------------------------------------------------------------
-- decline_offer(), withdraw_offer(): the recipient says no, the author takes it back
-- -----------------------------------------------------------------------------
create or replace function public.decline_offer(p_offer uuid)
returns void
language plpgsql
-- Definer rights: no side may update offers; the caller is checked first.
security definer
set search_path = ''
as $$
declare
  v_offer public.offers;
begin
  v_offer := public.lock_offer(p_offer, 'decline', false);
  perform public.assert_offer_pending(v_offer, 'decline');
  update public.offers o set status = 'declined' where o.id = p_offer;
end
$$;
comment on function public.decline_offer(uuid) is
  'The side that did not write pending offer p_offer (the seller for a buyer''s offer, the buyer for a counter-offer; 42501 for its author; PT404 for others and unknown offers) declines it (PT409 when it is not pending or has expired). supabase.rpc("decline_offer", { p_offer })';

create or replace function public.withdraw_offer(p_offer uuid)
returns void
language plpgsql
-- Definer rights: no side may update offers; the caller is checked first.
security definer
set search_path = ''
as $$
declare
  v_offer public.offers;
begin
  v_offer := public.lock_offer(p_offer, 'withdraw', true);
  perform public.assert_offer_pending(v_offer, 'withdraw');
  update public.offers o set status = 'withdrawn' where o.id = p_offer;
end
$$;
comment on function public.withdraw_offer(uuid) is
  'The side that wrote pending offer p_offer (the buyer for their offer, the seller for their counter-offer; 42501 for the other side; PT404 for others and unknown offers) takes it back (PT409 when it is not pending or has expired). supabase.rpc("withdraw_offer", { p_offer })';

-- -----------------------------------------------------------------------------
-- queue_exclusivity_reminders(): both sides, 48 hours before the window ends
-- -----------------------------------------------------------------------------
create or replace function public.queue_exclusivity_reminders(p_deal uuid)
returns void
language plpgsql
-- Invoker rights: only the owner (the definer RPCs) and service_role call it.
set search_path = ''
as $$
declare
  v_deal public.deals;
  v_due timestamptz;
begin
  select * into v_deal from public.deals d where d.id = p_deal;
  if v_deal.status is distinct from 'in_diligence' then
    return;
  end if;
  v_due := v_deal.exclusive_until - interval '48 hours';
  if v_due <= now() then
    -- The window is (now) shorter than the notice: accepting or extending
    -- told them its end.
    return;
  end if;
  -- A reminder still pending (before an extension) moves to the new time.
  update public.notice_queue q set due_at = v_due
  where q.kind = 'deal_exclusivity_ending' and q.subject_id = p_deal and q.status = 'pending';
  perform public.queue_notice('deal_exclusivity_ending', v_deal.buyer_id, p_deal, v_due);
  perform public.queue_notice('deal_exclusivity_ending', v_deal.seller_id, p_deal, v_due);
end
$$;
comment on function public.queue_exclusivity_reminders(uuid) is
  'Internal: queues (or moves) the deal_exclusivity_ending notice of deal p_deal to its buyer and seller, due 48 hours before exclusive_until; nothing when the deal is not in due diligence or ends sooner than that';
revoke execute on function public.queue_exclusivity_reminders(uuid) from public, anon, authenticated;
grant execute on function public.queue_exclusivity_reminders(uuid) to service_role;

-- -----------------------------------------------------------------------------
-- lock_diligence_deal(): the shared first steps of every move out of diligence
-- -----------------------------------------------------------------------------
create or replace function public.lock_diligence_deal(p_deal uuid, p_action text, p_side text)
returns public.deals
language plpgsql
-- Invoker rights: only the owner (the definer RPCs below) and service_role call it.
set search_path = ''
as $$
declare
  v_uid uuid := auth.uid();
  v_deal public.deals;
begin
  perform public.assert_signed_in(p_action);
  select * into v_deal from public.deals d where d.id = p_deal for update;
  if v_deal.id is null
     or (public.is_client_request() and v_uid is distinct from v_deal.buyer_id
         and v_uid is distinct from v_deal.seller_id and not public.is_admin()) then
    raise exception 'Cannot %: deal "%" does not exist', p_action, p_deal using errcode = 'PT404';
  end if;
  if public.is_client_request()
     and not (p_side in ('buyer', 'either') and v_uid = v_deal.buyer_id)
     and not (p_side in ('seller', 'either') and v_uid = v_deal.seller_id) then
    raise exception 'Cannot %: only the deal''s % may', p_action,
      case p_side when 'either' then 'buyer or seller' else p_side end
      using errcode = '42501';
  end if;
  if v_deal.status = 'pending_payment' then
    raise exception 'Cannot %: the deal already awaits payment; due diligence is over', p_action
      using errcode = 'PT409', hint = 'cancel-deal';
  end if;
  if v_deal.status <> 'in_diligence' then
    raise exception 'Cannot %: the deal is %, not in due diligence', p_action,
      replace(v_deal.status, '_', ' ') using errcode = 'PT409';
  end if;
  return v_deal;
end
$$;
comment on function public.lock_diligence_deal(uuid, text, text) is
  'Internal: refuses an anonymous caller (42501), locks deal p_deal and answers it; PT404 when it does not exist or the caller may not read it; 42501 unless the caller is the side p_side (buyer, seller or either); PT409 unless it is in due diligence (hint cancel-deal when it already awaits payment). Any caller on the service connection';
revoke execute on function public.lock_diligence_deal(uuid, text, text) from public, anon, authenticated;
grant execute on function public.lock_diligence_deal(uuid, text, text) to service_role;

create or replace function public.assert_exclusivity_open(p_deal public.deals, p_action text)
returns void
language plpgsql
stable
set search_path = ''
as $$
begin
  if p_deal.exclusive_until <= now() then
    raise exception 'Cannot %: the exclusivity ended at %; the deal lapses', p_action,
      to_char(p_deal.exclusive_until at time zone 'UTC', 'YYYY-MM-DD HH24:MI "UTC"')
      using errcode = 'PT409';
  end if;
end
$$;
comment on function public.assert_exclusivity_open(public.deals, text) is
  'Raises PT409 (naming p_action) when the deal''s exclusivity window has ended, whether or not the job has cancelled it yet';
revoke execute on function public.assert_exclusivity_open(public.deals, text) from public, anon, authenticated;
grant execute on function public.assert_exclusivity_open(public.deals, text) to service_role;

-- -----------------------------------------------------------------------------
-- confirm_diligence(): the buyer proceeds to payment
-- -----------------------------------------------------------------------------
create or replace function public.confirm_diligence(p_deal uuid)
returns public.deals
language plpgsql
-- Definer rights: clients may not execute transition_deal(); the caller is
-- checked first (lock_diligence_deal).
security definer
set search_path = ''
as $$
declare
  v_deal public.deals;
begin
  v_deal := public.lock_diligence_deal(p_deal, 'confirm due diligence', 'buyer');
  perform public.assert_exclusivity_open(v_deal, 'confirm due diligence');
  v_deal := public.transition_deal(p_deal, 'pending_payment', 'diligence_confirmed', null, auth.uid());
  perform public.queue_notice('deal_diligence_confirmed', v_deal.seller_id, p_deal);
  return v_deal;
end
$$;
comment on function public.confirm_diligence(uuid) is
  'The deal''s buyer (42501 for the seller; PT404 for others and unknown deals) ends due diligence and proceeds to payment: in_diligence -> pending_payment (cause diligence_confirmed; PT409 in another state or once exclusive_until has passed); the seller is told. Answers the deal. supabase.rpc("confirm_diligence", { p_deal })';
revoke execute on function public.confirm_diligence(uuid) from public, anon;
grant execute on function public.confirm_diligence(uuid) to authenticated, service_role;

-- -----------------------------------------------------------------------------
-- withdraw_from_deal(): either side walks away during diligence
-- -----------------------------------------------------------------------------
create or replace function public.withdraw_from_deal(p_deal uuid, p_reason text)
returns public.deals
language plpgsql
-- Definer rights: clients may not execute transition_deal(); the caller is
-- checked first (lock_diligence_deal).
security definer
set search_path = ''
as $$
declare
  v_uid uuid := auth.uid();
  v_deal public.deals;
  v_reason text;
  v_by text;
begin
  v_deal := public.lock_diligence_deal(p_deal, 'withdraw from the deal', 'either');
  v_reason := public.clean_user_text(p_reason, 'the reason', 500, true);
  v_by := case
    when v_uid = v_deal.buyer_id then 'buyer'
    when v_uid = v_deal.seller_id then 'seller'
    else 'service'
  end;
  v_deal := public.transition_deal(
    p_deal, 'cancelled', 'withdrawn', null, v_uid, jsonb_build_object('reason', v_reason, 'by', v_by)
  );
  if v_by <> 'buyer' then
    perform public.queue_notice('deal_withdrawn', v_deal.buyer_id, p_deal);
  end if;
  if v_by <> 'seller' then
    perform public.queue_notice('deal_withdrawn', v_deal.seller_id, p_deal);
  end if;
  return v_deal;
end
$$;
comment on function public.withdraw_from_deal(uuid, text) is
  'The deal''s buyer or seller (PT404 for others and unknown deals) walks away during due diligence with a reason (1-500 characters, 22023): in_diligence -> cancelled (cause withdrawn, the reason and side on the event''s detail; PT409 in another state, hint cancel-deal once it awaits payment); the other side is told, the listing reopens and suspended access is restored. Answers the deal. supabase.rpc("withdraw_from_deal", { p_deal, p_reason })';
revoke execute on function public.withdraw_from_deal(uuid, text) from public, anon;
grant execute on function public.withdraw_from_deal(uuid, text) to authenticated, service_role;

-- -----------------------------------------------------------------------------
-- extend_exclusivity(): the seller gives the buyer more time
-- -----------------------------------------------------------------------------
create or replace function public.extend_exclusivity(p_deal uuid, p_days integer)
returns public.deals
language plpgsql
-- Definer rights: clients may not update deals; the caller is checked first
-- (lock_diligence_deal).
security definer
set search_path = ''
as $$
declare
  v_deal public.deals;
  v_before timestamptz;
  v_limit timestamptz;
  v_left integer;
begin
  v_deal := public.lock_diligence_deal(p_deal, 'extend the exclusivity', 'seller');
  perform public.assert_exclusivity_open(v_deal, 'extend the exclusivity');
  v_limit := v_deal.created_at + interval '45 days';
  v_left := floor(extract(epoch from (v_limit - v_deal.exclusive_until)) / 86400)::integer;
  if p_days is null or p_days < 1 or p_days > 45 then
    raise exception 'Cannot extend the exclusivity by % days: give 1 to 45', coalesce(p_days::text, 'null')
      using errcode = '22023';
  end if;
  if p_days > v_left then
    raise exception 'Cannot extend the exclusivity by % days: it lasts at most 45 days from acceptance, so % more at most',
      p_days, greatest(v_left, 0) using errcode = '22023';
  end if;
  v_before := v_deal.exclusive_until;
  update public.deals d set exclusive_until = d.exclusive_until + make_interval(days => p_days)
  where d.id = p_deal
  returning * into v_deal;
  perform public.record_deal_event(
    p_deal, 'exclusivity_extended', null,
    jsonb_build_object('days', p_days, 'before', v_before, 'after', v_deal.exclusive_until),
    auth.uid()
  );
  perform public.queue_exclusivity_reminders(p_deal);
  perform public.queue_notice('deal_exclusivity_extended', v_deal.buyer_id, p_deal);
  return v_deal;
end
$$;
comment on function public.extend_exclusivity(uuid, integer) is
  'The deal''s seller (42501 for the buyer; PT404 for others and unknown deals) extends the buyer''s exclusivity by p_days (22023 unless 1-45 and the window stays within 45 days of acceptance); PT409 unless the deal is in due diligence and its window still open. Records exclusivity_extended (detail: days, before, after), moves the 48-hour reminder and tells the buyer. Answers the deal. supabase.rpc("extend_exclusivity", { p_deal, p_days })';
revoke execute on function public.extend_exclusivity(uuid, integer) from public, anon;
grant execute on function public.extend_exclusivity(uuid, integer) to authenticated, service_role;

-- -----------------------------------------------------------------------------
-- lapse_deal_exclusivity(): the deal-deadlines job cancels a lapsed window
-- -----------------------------------------------------------------------------
create or replace function public.lapse_deal_exclusivity(p_deal uuid)
returns boolean
language plpgsql
-- Invoker rights: only the service role may execute it.
set search_path = ''
as $$
declare
  v_deal public.deals;
begin
  -- A deal locked by a move in progress (a confirm, a withdrawal, another
  -- run) is passed by: that move decides, or the next run looks again. No
  -- key update: a document or event being written for the deal (a key share
  -- lock) does not make it wait for the next run.
  select * into v_deal from public.deals d
  where d.id = p_deal and d.status = 'in_diligence' and d.exclusive_until <= now()
  for no key update skip locked;
  if not found then
    return false;
  end if;
  perform public.transition_deal(
    p_deal, 'cancelled', 'exclusivity_lapsed', null, null,
    jsonb_build_object('exclusive_until', v_deal.exclusive_until)
  );
  perform public.queue_notice('deal_exclusivity_lapsed', v_deal.buyer_id, p_deal);
  perform public.queue_notice('deal_exclusivity_lapsed', v_deal.seller_id, p_deal);
  return true;
end
$$;
comment on function public.lapse_deal_exclusivity(uuid) is
  'Cancels deal p_deal with cause exclusivity_lapsed (detail: the exclusive_until that passed) when it is in due diligence past exclusive_until and not locked by a move in progress, and tells both sides; answers whether it did (false too for a deal not due, not in diligence or unknown). The deal-deadlines job (service role only)';
revoke execute on function public.lapse_deal_exclusivity(uuid) from public, anon, authenticated;
grant execute on function public.lapse_deal_exclusivity(uuid) to service_role;

-- -----------------------------------------------------------------------------
-- The schedule: deal deadlines every 15 minutes
-- -----------------------------------------------------------------------------
insert into public.job_schedules (function_name, cron, description) values
  ('deal-deadlines', '*/15 * * * *',
   'Every 15 minutes: cancel deals whose due-diligence exclusivity lapsed, and tell both sides')
on conflict (function_name) do nothing;

select public.schedule_jobs();
