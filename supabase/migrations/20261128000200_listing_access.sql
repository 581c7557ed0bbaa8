-- =============================================================================
-- Listing access: confidential listings and NDA-gated access requests
--
-- A seller may keep what identifies a business confidential until a buyer
-- has signed the platform's NDA and been let in:
--
--   listings.access_mode          open (everyone who sees the listing sees
--                                 its fields, as before; the default) | nda
--   listings.confidential_fields  the blur-able field keys (blurred_fields)
--                                 an nda listing keeps from viewers without
--                                 approved access; default {seller,url}
--
-- The hiding itself (listing_view_secure, can_view_field, alerts, digests)
-- is the next migration's one rule; this one holds the data and the moves.
--
-- Confidentiality and review. Changing access_mode or confidential_fields of
-- an approved listing is a content change when it reveals more — nda -> open,
-- or a field dropped from confidential_fields — and sends the listing back to
-- pending_review, as any content edit by its seller does (an admin's edit
-- stays approved). Hiding more (open -> nda, a field added) applies at once.
--
-- The NDA. nda_documents holds every published version of the platform's
-- NDA text with its SHA-256; a version is permanent (never edited or
-- deleted: buyers accepted its exact words) and the current one is the
-- newest published. Admins publish a new version by inserting it.
--
-- Access requests. A signed-in buyer asks for access to an approved nda
-- listing with request_listing_access(), accepting the current NDA version
-- (its version, sha256 and the time are stored on the request; the client's
-- network address, by the contact form's header rule, is kept apart in
-- nda_acceptance_addresses, which the seller does not read). The seller (or
-- an admin) decides.
--
-- listing_access_requests.status (enforced by guard_listing_access_request()):
--
--            ┌─ decide_listing_access(approve) (seller, admin) ─► approved ─┐
--   pending ─┼─ decide_listing_access(decline) (seller, admin) ─► declined  │
--            ├─ withdraw_listing_access (buyer) ────────────────► withdrawn │
--            └─ 14 days without an answer (daily run) ──────────► expired   │
--                                                                           │
--   revoked ◄─ revoke_listing_access (seller, admin); block_conversation ───┘
--              by the seller
--
--   from      to         who / how
--   pending   approved   the listing's seller or an admin: decide_listing_access()
--   pending   declined   the listing's seller or an admin: decide_listing_access();
--                        also block_conversation() by the seller
--   pending   withdrawn  the buyer: withdraw_listing_access()
--   pending   expired    expire_listing_access_requests() (the daily run),
--                        or the buyer's new request replacing a lapsed one
--   approved  revoked    the listing's seller or an admin: revoke_listing_access();
--                        block_conversation() by the seller
--
-- declined, withdrawn, expired and revoked are final; any other move fails
-- with PT409 (HTTP 409). A pending request past expires_at counts as expired:
-- deciding or withdrawing it is refused. The terms of a request (listing,
-- buyer, seller, message, NDA) never change.
--
-- One open request per buyer and listing: a second request_listing_access()
-- while one is pending or approved returns the same id (concurrent ones too:
-- a unique index). After withdrawn or expired the buyer may ask again; after
-- declined or revoked the seller's answer stands and a new request is
-- refused (PT409).
--
-- What approval does: the buyer sees the listing's confidential fields (next
-- migration), may make offers on it (an offer on an nda listing needs
-- approved access: 42501 otherwise) and may talk to the seller (the
-- conversations migration opens their conversation on approval).
--
-- Who is told (the notice queue): the seller of every new request; the buyer
-- of every decision (approved, declined, revoked) and of an expiry. Every
-- new request and every status change is pushed to the buyer's and the
-- seller's private topics user:<id>, as offers are.
--
-- Who reads: the buyer and the listing's seller read a request; admins read
-- all. Nobody writes the tables directly: every move is one of the RPCs
-- below (definer rights, caller checked first, assert_signed_in() before
-- anything). Limit: client_limits access_request:per_day (new requests per
-- buyer per day, default 30), PT429 beyond.
--
-- Lock order: the listing row (for share to ask; for no key update to
-- decide, withdraw or revoke, which may change the listing's access_buyers:
-- the confidential blur migration), then the request, then (the
-- conversations migration) the conversation.
--
-- SQLSTATEs: 42501 not allowed (403), PT404 no such listing or request, or
-- one the caller may not see (404), PT409 not in a state for it (409), 22023
-- a bad argument (400), PT429 over a limit (429), 23514 an invalid listing
-- setting (400).
-- =============================================================================

-- -----------------------------------------------------------------------------
-- listings.access_mode and listings.confidential_fields
-- -----------------------------------------------------------------------------
alter table public.listings
  add column if not exists access_mode text not null default 'open',
  add column if not exists confidential_fields text[] not null default '{seller,url}';

do $$
begin
  if not exists (
    select 1 from pg_constraint
    where conrelid = 'public.listings'::regclass and conname = 'listings_access_mode_known'
  ) then
    alter table public.listings
      add constraint listings_access_mode_known check (access_mode in ('open', 'nda'));
  end if;
  if not exists (
    select 1 from pg_constraint
    where conrelid = 'public.listings'::regclass and conname = 'listings_nda_hides_something'
  ) then
    alter table public.listings
      add constraint listings_nda_hides_something
      check (access_mode = 'open' or cardinality(confidential_fields) > 0);
  end if;
end
$$;

comment on column public.listings.access_mode is
  'open: everyone who sees the listing sees its fields (by their plan) | nda: confidential_fields are hidden from viewers without approved access (listing_access_requests)';
comment on column public.listings.confidential_fields is
  'The blur-able field keys (blurred_fields.field_key) an nda listing hides from viewers without approved access, sorted and without repeats; default {seller,url}, what identifies the business';
comment on constraint listings_access_mode_known on public.listings is 'access_mode is open or nda';
comment on constraint listings_nda_hides_something on public.listings is
  'An nda listing keeps at least one field confidential';

grant insert (access_mode, confidential_fields) on table public.listings to authenticated;
grant update (access_mode, confidential_fields) on table public.listings to authenticated;

-- -----------------------------------------------------------------------------
-- check_confidential_fields(): only blur-able keys, sorted, once each
-- -----------------------------------------------------------------------------
create or replace function public.check_confidential_fields()
returns trigger
language plpgsql
-- Invoker rights: reads blurred_fields, which every client may read.
set search_path = ''
as $$
declare
  v_unknown text;
begin
  if new.confidential_fields is null then
    return new; -- the not-null constraint refuses it
  end if;
  select f into v_unknown
  from unnest(new.confidential_fields) f
  where f is null or not exists (select 1 from public.blurred_fields b where b.field_key = f)
  limit 1;
  if found then
    raise exception 'Cannot save listing: "%" is not a field that can be kept confidential',
      coalesce(v_unknown, 'null')
      using errcode = '22023',
        hint = 'Confidential fields are blur-able field keys: '
          || (select string_agg(b.field_key, ', ' order by b.field_key) from public.blurred_fields b);
  end if;
  new.confidential_fields := array(select distinct f from unnest(new.confidential_fields) f order by f);
  return new;
end
$$;
comment on function public.check_confidential_fields() is
  'Trigger on listings (before insert or update): every confidential_fields key must be a blur-able field key of blurred_fields (22023 otherwise, with the keys in the hint); stores them sorted and once each';
revoke execute on function public.check_confidential_fields() from public, anon, authenticated;

-- Named to fire before listings_guard_review (triggers fire in name order),
-- which compares the normalized arrays.
drop trigger if exists listings_check_confidential_fields on public.listings;
create trigger listings_check_confidential_fields
  before insert or update on public.listings
  for each row execute function public.check_confidential_fields();
comment on trigger listings_check_confidential_fields on public.listings is
  'Refuses unknown confidential field keys (22023) and sorts and dedupes the rest';

-- -----------------------------------------------------------------------------
-- listings_guard_review(): revealing confidential fields is a content change
-- -----------------------------------------------------------------------------
-- As the listing content review migration wrote it, with one more kind of
-- content change: a client that is not an admin revealing more of an approved
-- listing (nda -> open, or a field dropped from confidential_fields).
create or replace function public.listings_guard_review()
returns trigger
language plpgsql
set search_path = ''
as $$
declare
  v_client boolean := public.is_client_request();
  v_admin boolean := false;
  v_seller_may boolean;
  v_content_edit boolean := false;
  v_reveals boolean;
begin
  if v_client then
    v_admin := public.is_admin();
  end if;

  if tg_op = 'INSERT' then
    if new.review_status not in ('draft', 'pending_review') then
      raise exception 'Cannot create listing: a new listing starts as "draft" or "pending_review", not "%"',
        new.review_status using errcode = 'PT409';
    end if;
    if v_client and not v_admin and new.rejection_reason is not null then
      raise exception 'Cannot create listing: only an admin sets rejection_reason'
        using errcode = '42501';
    end if;
    if new.review_status = 'pending_review' then
      new.submitted_at := now();
    end if;
    return new;
  end if;

  if v_client and not v_admin
     and new.rejection_reason is distinct from old.rejection_reason
     and not (new.review_status = 'pending_review' and new.rejection_reason is null) then
    raise exception 'Cannot update listing "%": only an admin sets rejection_reason', old.id
      using errcode = '42501';
  end if;

  -- Revealing more of a confidential listing: nda -> open, or a confidential
  -- field dropped. Hiding more is not a content change.
  v_reveals := old.access_mode = 'nda'
    and (new.access_mode = 'open' or not (old.confidential_fields <@ new.confidential_fields));

  -- A client that is not an admin changing the content of an approved
  -- listing sends it back to review, unless the same update takes it to
  -- another status of its own (archived; a reserved one fails below).
  if v_client and not v_admin
     and old.review_status = 'approved'
     and new.review_status in ('approved', 'pending_review')
     and (
       v_reveals
       or (new.title, new.description, new.url, new.category, new.asking_price, new.currency,
           new.monthly_revenue, new.monthly_profit, new.monthly_traffic)
          is distinct from
          (old.title, old.description, old.url, old.category, old.asking_price, old.currency,
           old.monthly_revenue, old.monthly_profit, old.monthly_traffic)
     ) then
    v_content_edit := true;
    new.review_status := 'pending_review';
  end if;

  if new.review_status is not distinct from old.review_status then
    return new;
  end if;

  -- true: the seller may; false: only an admin or the service connection;
  -- null: not a transition of the state machine.
  v_seller_may := case old.review_status || ' -> ' || new.review_status
    when 'draft -> pending_review' then true
    when 'pending_review -> draft' then true
    when 'pending_review -> approved' then false
    when 'pending_review -> rejected' then false
    when 'rejected -> pending_review' then true
    when 'rejected -> draft' then true
    -- Only by a seller's content edit (above); never asked for on its own.
    when 'approved -> pending_review' then case when v_content_edit then true end
    when 'approved -> archived' then true
    when 'approved -> rejected' then false
    when 'archived -> draft' then true
  end;

  if v_seller_may is null then
    raise exception 'Cannot change review status of listing "%": "%" cannot become "%"',
      old.id, old.review_status, new.review_status using errcode = 'PT409';
  end if;
  if v_client and not v_admin and not v_seller_may then
    raise exception 'Cannot change review status of listing "%" to "%": only an admin may',
      old.id, new.review_status using errcode = '42501';
  end if;

  if new.review_status = 'pending_review' then
    new.submitted_at := now();
    new.rejection_reason := null;
  elsif new.review_status in ('approved', 'rejected') then
    new.reviewed_at := now();
    new.reviewed_by := auth.uid();
    if new.review_status = 'approved' then
      new.rejection_reason := null;
    end if;
  end if;
  return new;
end
$$;
comment on function public.listings_guard_review() is
  'Trigger on listings: allows only the review status transitions of the state machine (PT409 otherwise), reserves approve/reject/take-down to admins and the service connection (42501), sends an approved listing back to pending_review when a client that is not an admin changes its content (title, description, url, category, asking_price, currency, monthly_revenue, monthly_profit, monthly_traffic) or reveals more of it (access_mode nda -> open, a confidential field dropped), and stamps submitted_at, reviewed_at and reviewed_by';
revoke execute on function public.listings_guard_review() from public, anon, authenticated;

-- -----------------------------------------------------------------------------
-- clean_user_text(): the one rule for free text a user writes
-- -----------------------------------------------------------------------------
create or replace function public.clean_user_text(
  p_text text,
  p_what text,
  p_max_length integer,
  p_required boolean
)
returns text
language plpgsql
immutable
-- Invoker rights: a pure function of its arguments.
set search_path = ''
as $$
declare
  v_text text;
begin
  -- Line breaks are kept, as \n; the text is trimmed of surrounding white space.
  v_text := btrim(replace(replace(p_text, E'\r\n', E'\n'), E'\r', E'\n'), E' \t\n');
  if v_text is null or v_text = '' then
    if p_required then
      raise exception 'Cannot save %: it is empty', p_what using errcode = '22023';
    end if;
    return null;
  end if;
  -- C0 controls other than tab and line feed, DEL and C1 controls. (NUL
  -- cannot reach a function: PostgreSQL text cannot hold it, and the
  -- statement is refused before the call.)
  if v_text ~ '[\x01-\x08\x0b-\x1f\x7f-\x9f]' then
    raise exception 'Cannot save %: it contains a control character', p_what
      using errcode = '22023', hint = 'Plain text only: letters, punctuation, spaces, tabs and line breaks';
  end if;
  if char_length(v_text) > p_max_length then
    raise exception 'Cannot save %: it is % characters long; at most % are allowed',
      p_what, char_length(v_text), p_max_length using errcode = '22023';
  end if;
  return v_text;
end
$$;
comment on function public.clean_user_text(text, text, integer, boolean) is
  'Free text a user writes (a message, a reason, a note): line breaks made \n, trimmed, then refused with 22023 when empty and p_required, when it holds a control character other than tab and line feed, or when longer than p_max_length characters; answers the cleaned text (null for an empty optional one). p_what names it in the message';
revoke execute on function public.clean_user_text(text, text, integer, boolean)
  from public, anon, authenticated;
grant execute on function public.clean_user_text(text, text, integer, boolean) to service_role;

-- -----------------------------------------------------------------------------
-- take_user_limit(): count a client's write against a per-user limit
-- -----------------------------------------------------------------------------
create or replace function public.take_user_limit(p_name text, p_action text)
returns void
language plpgsql
volatile
-- Invoker rights: only the owner (the definer RPCs below) and service_role
-- may call it; both may take client limits.
set search_path = ''
as $$
declare
  v_take record;
begin
  -- The service connection is not limited.
  if not public.is_client_request() or auth.uid() is null then
    return;
  end if;
  select * into v_take
  from public.take_client_limit(p_name, p_name || ':' || auth.uid()::text);
  if not v_take.allowed then
    raise exception 'Cannot %: too many; try again in % seconds', p_action,
      v_take.retry_after_seconds
      using errcode = 'PT429',
        hint = format('At most %s per %s seconds (client_limits %s)',
          v_take.max_hits, v_take.window_seconds, p_name);
  end if;
end
$$;
comment on function public.take_user_limit(text, text) is
  'Counts a client''s write against the client_limits row p_name, keyed by the signed-in user (<p_name>:<user id>); PT429 (PostgREST answers 429) naming p_action when over it. Nothing on the service connection. A refused call rolls back, so only accepted writes count';
revoke execute on function public.take_user_limit(text, text) from public, anon, authenticated;
grant execute on function public.take_user_limit(text, text) to service_role;

insert into public.client_limits (name, max_hits, window_seconds, description) values
  ('access_request:per_day', 30, 86400,
   'New listing access requests per buyer (key access_request:per_day:<user id>)')
on conflict (name) do nothing;

-- -----------------------------------------------------------------------------
-- nda_documents: the platform's NDA, every published version
-- -----------------------------------------------------------------------------
create table if not exists public.nda_documents (
  version text primary key,
  body text not null,
  sha256 text not null,
  published_at timestamptz not null default now(),
  constraint nda_documents_version_format check (version ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,19}$'),
  constraint nda_documents_body_length check (char_length(body) between 100 and 50000),
  constraint nda_documents_sha256_format check (sha256 ~ '^[0-9a-f]{64}$')
);

comment on table public.nda_documents is
  'The platform''s mutual non-disclosure agreement, every published version: a buyer accepts the current one (the newest published_at) when asking for access to a confidential listing. Permanent once published (never edited or deleted). Signed-in users read it; admins publish a new version by inserting it';
comment on column public.nda_documents.version is 'The version''s name (1, 2, 2026-12, ...)';
comment on column public.nda_documents.body is 'The full text, plain text with line breaks';
comment on column public.nda_documents.sha256 is
  'SHA-256 of the body''s UTF-8 bytes, lower-case hex (set by the trigger): what an acceptance records';
comment on column public.nda_documents.published_at is
  'When it was published (set by the trigger); the newest is the current version';
comment on constraint nda_documents_version_format on public.nda_documents is
  'A version is 1 to 20 letters, digits, ".", "_" or "-", starting with a letter or digit';
comment on constraint nda_documents_body_length on public.nda_documents is
  'An NDA text is 100 to 50000 characters';
comment on constraint nda_documents_sha256_format on public.nda_documents is
  'sha256 is 64 lower-case hex digits';
comment on constraint nda_documents_pkey on public.nda_documents is 'One row per version';
comment on index public.nda_documents_pkey is 'One row per version';

create index if not exists nda_documents_published_at_idx
  on public.nda_documents (published_at desc, version desc);
comment on index public.nda_documents_published_at_idx is 'The current version: the newest published';

create or replace function public.guard_nda_document()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if tg_op = 'INSERT' then
    new.sha256 := encode(sha256(convert_to(new.body, 'UTF8')), 'hex');
    new.published_at := now();
    return new;
  end if;
  raise exception 'Cannot % NDA version "%": a published version never changes; publish a new version',
    lower(tg_op), old.version using errcode = 'PT409';
end
$$;
comment on function public.guard_nda_document() is
  'Trigger on nda_documents: a new version gets its sha256 and published_at from the database; an update or delete of a published version fails with PT409';
revoke execute on function public.guard_nda_document() from public, anon, authenticated;

drop trigger if exists nda_documents_guard on public.nda_documents;
create trigger nda_documents_guard
  before insert or update or delete on public.nda_documents
  for each row execute function public.guard_nda_document();
comment on trigger nda_documents_guard on public.nda_documents is
  'Computes sha256 and published_at of a new version; refuses to change or delete a published one';

alter table public.nda_documents enable row level security;

drop policy if exists "Signed-in users can read the NDA" on public.nda_documents;
create policy "Signed-in users can read the NDA" on public.nda_documents
  for select to authenticated
  using (true);
comment on policy "Signed-in users can read the NDA" on public.nda_documents is
  'Every signed-in user reads every version of the NDA (they accept the current one)';

drop policy if exists "Admins can publish an NDA version" on public.nda_documents;
create policy "Admins can publish an NDA version" on public.nda_documents
  for insert to authenticated
  with check ((select public.is_signed_in_user()) and (select public.is_admin()));
comment on policy "Admins can publish an NDA version" on public.nda_documents is
  'A signed-in admin publishes a new version; nobody changes a published one (trigger)';

revoke all on table public.nda_documents from public, anon, authenticated;
grant select on table public.nda_documents to authenticated;
grant insert (version, body) on table public.nda_documents to authenticated;
grant all on table public.nda_documents to service_role;

create or replace function public.current_nda_version()
returns text
language sql
stable
-- Invoker rights: the caller reads nda_documents through its own grant.
set search_path = ''
as $$
  select d.version from public.nda_documents d
  order by d.published_at desc, d.version desc
  limit 1
$$;
comment on function public.current_nda_version() is
  'The current NDA version (the newest published), which request_listing_access() requires. supabase.rpc("current_nda_version")';
revoke execute on function public.current_nda_version() from public, anon;
grant execute on function public.current_nda_version() to authenticated, service_role;

insert into public.nda_documents (version, body) values ('1', $nda$MUTUAL NON-DISCLOSURE AGREEMENT (version 1)

This agreement is made between the prospective buyer who accepts it on the marketplace (the "Buyer") and the seller of the listing the Buyer asks to see (the "Seller"). It takes effect when the Buyer accepts it and covers every disclosure the two make to each other about the listed business.

1. Confidential Information. "Confidential Information" means everything one party discloses to the other about the listed business, through the marketplace or otherwise: its name, address and domain, the identity of its owner, its financial records, traffic and customer data, code, suppliers, processes and plans, and the fact that it is for sale. It does not include information that (a) is or becomes public through no fault of the receiving party, (b) the receiving party already held lawfully without a duty of confidence, (c) the receiving party receives lawfully from a third party without a duty of confidence, or (d) the receiving party develops independently without using the Confidential Information.

2. Purpose. The receiving party uses Confidential Information only to evaluate, negotiate and complete a possible purchase of the listed business (the "Purpose"), and for nothing else.

3. Duty of care. The receiving party keeps Confidential Information secret with at least the care it gives its own confidential information, and no less than reasonable care. It may share it only with its employees, advisers and financiers who need it for the Purpose and are bound by duties of confidence no weaker than these; it is responsible for their compliance.

4. No contact. The Buyer does not contact the business's employees, customers, suppliers or partners about the business without the Seller's written consent, and does not use the Confidential Information to compete with, solicit from or harm the business.

5. Required disclosure. A party that is required by law, regulation or court order to disclose Confidential Information may do so, to the extent required, after telling the other party promptly (where the law allows) so that it may seek protection.

6. Return and deletion. When the Purpose ends, or when the disclosing party asks, the receiving party stops using the Confidential Information and deletes or returns it, except copies it must keep by law, which remain confidential.

7. No obligation and no warranty. Neither party must enter into a transaction. Confidential Information is provided as is; only a signed purchase agreement gives warranties about the business.

8. Duration. These duties last for two years after the Buyer's acceptance, and for trade secrets as long as they remain trade secrets.

9. Remedies. A breach may cause harm that money cannot repair; the disclosing party may seek an injunction in addition to any other remedy.

10. The marketplace. The marketplace records the Buyer's acceptance (this version, its SHA-256 fingerprint, the time and the network address it came from) as evidence of this agreement. It is not a party to this agreement.

11. Entire agreement. This is the whole agreement on its subject. A change must be in writing and accepted by both parties. If a provision is unenforceable, the rest remains in force.$nda$)
on conflict (version) do nothing;

-- -----------------------------------------------------------------------------
-- listing_access_requests
-- -----------------------------------------------------------------------------
create table if not exists public.listing_access_requests (
  id uuid primary key default gen_random_uuid(),
  listing_id uuid not null,
  buyer_id uuid not null references auth.users (id) on delete cascade,
  seller_id uuid not null references auth.users (id) on delete cascade,
  status text not null default 'pending',
  message text,
  nda_version text not null references public.nda_documents (version),
  nda_sha256 text not null,
  nda_accepted_at timestamptz not null default now(),
  expires_at timestamptz not null default (now() + interval '14 days'),
  decided_at timestamptz,
  decided_by uuid references auth.users (id) on delete set null,
  decision_reason text,
  revoked_at timestamptz,
  revoked_by uuid references auth.users (id) on delete set null,
  revoke_reason text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  -- The seller is the listing's seller.
  constraint listing_access_requests_listing_seller_fkey
    foreign key (listing_id, seller_id) references public.listings (id, seller_id) on delete cascade,
  constraint listing_access_requests_status_known check (
    status in ('pending', 'approved', 'declined', 'withdrawn', 'expired', 'revoked')
  ),
  constraint listing_access_requests_not_own check (buyer_id <> seller_id),
  constraint listing_access_requests_message_length check (char_length(message) <= 2000),
  constraint listing_access_requests_nda_sha256_format check (nda_sha256 ~ '^[0-9a-f]{64}$'),
  constraint listing_access_requests_decided_when_not_pending check (
    (status = 'pending') = (decided_at is null)
  ),
  constraint listing_access_requests_revoked_when_revoked check (
    (status = 'revoked') = (revoked_at is not null)
  ),
  constraint listing_access_requests_decision_reason_length check (
    char_length(decision_reason) <= 500
  ),
  constraint listing_access_requests_revoke_reason_length check (char_length(revoke_reason) <= 500)
);

comment on table public.listing_access_requests is
  'A buyer''s request to see a confidential (nda) listing, with their acceptance of the NDA. Status: pending -> approved | declined | withdrawn | expired; approved -> revoked (see the listing access migration header). The buyer and the listing''s seller read it, admins all; every change goes through the request_/decide_/withdraw_/revoke_listing_access RPCs';
comment on column public.listing_access_requests.id is 'The request''s id';
comment on column public.listing_access_requests.listing_id is 'The confidential listing';
comment on column public.listing_access_requests.buyer_id is 'Who asks for access (accepted the NDA)';
comment on column public.listing_access_requests.seller_id is 'The listing''s seller, who decides';
comment on column public.listing_access_requests.status is
  'pending | approved | declined | withdrawn | expired | revoked; changed only along the transitions in the listing access migration header';
comment on column public.listing_access_requests.message is 'The buyer''s note to the seller (at most 2000 characters)';
comment on column public.listing_access_requests.nda_version is 'The NDA version the buyer accepted';
comment on column public.listing_access_requests.nda_sha256 is 'SHA-256 of that version''s text, as accepted';
comment on column public.listing_access_requests.nda_accepted_at is 'When the buyer accepted the NDA';
comment on column public.listing_access_requests.expires_at is
  'When a pending request lapses without an answer (14 days after it was made)';
comment on column public.listing_access_requests.decided_at is
  'When the request left pending (approved, declined, withdrawn or expired)';
comment on column public.listing_access_requests.decided_by is
  'Who moved it out of pending (the seller, an admin or the buyer); null when it expired or the service did it';
comment on column public.listing_access_requests.decision_reason is
  'Why, as the seller or admin gave it (at most 500 characters)';
comment on column public.listing_access_requests.revoked_at is 'When approved access was revoked';
comment on column public.listing_access_requests.revoked_by is 'Who revoked it (the seller or an admin)';
comment on column public.listing_access_requests.revoke_reason is 'Why it was revoked (at most 500 characters)';
comment on column public.listing_access_requests.created_at is 'When the buyer asked';
comment on column public.listing_access_requests.updated_at is 'Moves on every change (trigger)';
comment on constraint listing_access_requests_listing_seller_fkey on public.listing_access_requests is
  'The request''s seller is its listing''s seller';
comment on constraint listing_access_requests_status_known on public.listing_access_requests is
  'status is pending, approved, declined, withdrawn, expired or revoked';
comment on constraint listing_access_requests_not_own on public.listing_access_requests is
  'Nobody asks for access to their own listing';
comment on constraint listing_access_requests_message_length on public.listing_access_requests is
  'A message is at most 2000 characters';
comment on constraint listing_access_requests_nda_sha256_format on public.listing_access_requests is
  'nda_sha256 is 64 lower-case hex digits';
comment on constraint listing_access_requests_decided_when_not_pending on public.listing_access_requests is
  'decided_at is set exactly when the request is no longer pending';
comment on constraint listing_access_requests_revoked_when_revoked on public.listing_access_requests is
  'revoked_at is set exactly when access was revoked';
comment on constraint listing_access_requests_decision_reason_length on public.listing_access_requests is
  'A decision reason is at most 500 characters';
comment on constraint listing_access_requests_revoke_reason_length on public.listing_access_requests is
  'A revoke reason is at most 500 characters';
comment on constraint listing_access_requests_pkey on public.listing_access_requests is 'One row per request';
comment on index public.listing_access_requests_pkey is 'One row per request';
comment on constraint listing_access_requests_nda_version_fkey on public.listing_access_requests is
  'The accepted NDA version exists (and, being permanent, keeps its text)';
comment on constraint listing_access_requests_buyer_id_fkey on public.listing_access_requests is
  'The buyer is a user';
comment on constraint listing_access_requests_seller_id_fkey on public.listing_access_requests is
  'The seller is a user';
comment on constraint listing_access_requests_decided_by_fkey on public.listing_access_requests is
  'Who decided is a user (kept null if they are deleted)';
comment on constraint listing_access_requests_revoked_by_fkey on public.listing_access_requests is
  'Who revoked is a user (kept null if they are deleted)';

-- One open request per buyer and listing.
create unique index if not exists listing_access_requests_one_open
  on public.listing_access_requests (listing_id, buyer_id)
  where status in ('pending', 'approved');
comment on index public.listing_access_requests_one_open is
  'A buyer has at most one open (pending or approved) request per listing: asking again returns it';
-- The listings a viewer has access to (the blur rule reads this once per query).
create index if not exists listing_access_requests_approved_buyer_idx
  on public.listing_access_requests (buyer_id, listing_id)
  where status = 'approved';
comment on index public.listing_access_requests_approved_buyer_idx is
  'The listings a buyer has approved access to';
-- A buyer's requests, newest first.
create index if not exists listing_access_requests_buyer_created_at_idx
  on public.listing_access_requests (buyer_id, created_at desc);
comment on index public.listing_access_requests_buyer_created_at_idx is 'A buyer''s requests, newest first';
-- A seller's inbox, newest first.
create index if not exists listing_access_requests_seller_created_at_idx
  on public.listing_access_requests (seller_id, created_at desc);
comment on index public.listing_access_requests_seller_created_at_idx is
  'The requests on a seller''s listings, newest first';
-- A listing's requests (the buyer's earlier answers, the seller's list).
create index if not exists listing_access_requests_listing_buyer_idx
  on public.listing_access_requests (listing_id, buyer_id, created_at desc);
comment on index public.listing_access_requests_listing_buyer_idx is
  'The requests on a listing, per buyer, newest first';
-- The daily expiry.
create index if not exists listing_access_requests_pending_expires_at_idx
  on public.listing_access_requests (expires_at)
  where status = 'pending';
comment on index public.listing_access_requests_pending_expires_at_idx is
  'Pending requests by when they lapse (the daily expiry)';

-- -----------------------------------------------------------------------------
-- nda_acceptance_addresses: where an acceptance came from, kept from the seller
-- -----------------------------------------------------------------------------
create table if not exists public.nda_acceptance_addresses (
  request_id uuid primary key references public.listing_access_requests (id) on delete cascade,
  client_address text,
  recorded_at timestamptz not null default now(),
  constraint nda_acceptance_addresses_address_length check (char_length(client_address) <= 64)
);
comment on table public.nda_acceptance_addresses is
  'The client network address an NDA acceptance came from (request_client_address(): the contact form''s header rule; null when the request carried none), one row per access request. Evidence for admins: the buyer and admins read it, the seller does not';
comment on column public.nda_acceptance_addresses.request_id is 'The access request whose NDA acceptance this is';
comment on column public.nda_acceptance_addresses.client_address is
  'The caller''s IP address in canonical form, or null when the request said none';
comment on column public.nda_acceptance_addresses.recorded_at is 'When it was recorded (the acceptance)';
comment on constraint nda_acceptance_addresses_address_length on public.nda_acceptance_addresses is
  'An address is at most 64 characters';
comment on constraint nda_acceptance_addresses_pkey on public.nda_acceptance_addresses is
  'One address per acceptance';
comment on index public.nda_acceptance_addresses_pkey is 'One address per acceptance';
comment on constraint nda_acceptance_addresses_request_id_fkey on public.nda_acceptance_addresses is
  'The address belongs to an access request';

alter table public.nda_acceptance_addresses enable row level security;

drop policy if exists "Buyers can read where their NDA acceptances came from, admins all"
  on public.nda_acceptance_addresses;
create policy "Buyers can read where their NDA acceptances came from, admins all"
  on public.nda_acceptance_addresses
  for select to authenticated
  using (
    (select public.is_admin())
    or exists (
      select 1 from public.listing_access_requests r
      where r.id = nda_acceptance_addresses.request_id and r.buyer_id = (select auth.uid())
    )
  );
comment on policy "Buyers can read where their NDA acceptances came from, admins all"
  on public.nda_acceptance_addresses is
  'A buyer reads the address of their own acceptances; admins read all; the seller does not';

revoke all on table public.nda_acceptance_addresses from public, anon, authenticated;
grant select on table public.nda_acceptance_addresses to authenticated;
grant all on table public.nda_acceptance_addresses to service_role;

-- -----------------------------------------------------------------------------
-- guard_listing_access_request(): the status state machine, for every writer
-- -----------------------------------------------------------------------------
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
  elsif v_move = 'approved -> revoked' then
    new.revoked_at := now();
  else
    raise exception 'Cannot change access request "%": "%" cannot become "%"', old.id, old.status,
      new.status using errcode = 'PT409';
  end if;
  return new;
end
$$;
comment on function public.guard_listing_access_request() is
  'Trigger on listing_access_requests: a new request starts pending; afterwards only pending -> approved | declined | withdrawn | expired (stamps decided_at) and approved -> revoked (stamps revoked_at); the terms never change (PT409 otherwise)';
revoke execute on function public.guard_listing_access_request() from public, anon, authenticated;

drop trigger if exists listing_access_requests_guard_state on public.listing_access_requests;
create trigger listing_access_requests_guard_state
  before insert or update on public.listing_access_requests
  for each row execute function public.guard_listing_access_request();
comment on trigger listing_access_requests_guard_state on public.listing_access_requests is
  'Keeps the status state machine and the fixed terms';

drop trigger if exists listing_access_requests_set_updated_at on public.listing_access_requests;
create trigger listing_access_requests_set_updated_at
  before update on public.listing_access_requests
  for each row execute function public.set_updated_at();
comment on trigger listing_access_requests_set_updated_at on public.listing_access_requests is
  'Moves updated_at on every change';

-- -----------------------------------------------------------------------------
-- Realtime: every new request and status change, to the buyer and the seller
-- -----------------------------------------------------------------------------
create or replace function public.broadcast_listing_access_change()
returns trigger
language plpgsql
-- Definer rights: the RPCs run as the client, which may not insert into
-- realtime.messages.
security definer
set search_path = ''
as $$
begin
  perform realtime.broadcast_changes(
    'user:' || new.buyer_id::text, tg_op, tg_op, tg_table_name, tg_table_schema, new, old
  );
  perform realtime.broadcast_changes(
    'user:' || new.seller_id::text, tg_op, tg_op, tg_table_name, tg_table_schema, new, old
  );
  return null;
end
$$;
comment on function public.broadcast_listing_access_change() is
  'Trigger on listing_access_requests: broadcasts a new request and every status change to the buyer''s and the seller''s private topics user:<id>';
revoke execute on function public.broadcast_listing_access_change() from public, anon, authenticated;

drop trigger if exists listing_access_requests_broadcast_insert on public.listing_access_requests;
create trigger listing_access_requests_broadcast_insert
  after insert on public.listing_access_requests
  for each row execute function public.broadcast_listing_access_change();
comment on trigger listing_access_requests_broadcast_insert on public.listing_access_requests is
  'Pushes a new request to the buyer and the seller';

drop trigger if exists listing_access_requests_broadcast_status_change
  on public.listing_access_requests;
create trigger listing_access_requests_broadcast_status_change
  after update on public.listing_access_requests
  for each row
  when (old.status is distinct from new.status)
  execute function public.broadcast_listing_access_change();
comment on trigger listing_access_requests_broadcast_status_change
  on public.listing_access_requests is
  'Pushes every status change to the buyer and the seller';

-- -----------------------------------------------------------------------------
-- Row level security
-- -----------------------------------------------------------------------------
alter table public.listing_access_requests enable row level security;

drop policy if exists "Buyers and sellers can read their access requests, admins all"
  on public.listing_access_requests;
create policy "Buyers and sellers can read their access requests, admins all"
  on public.listing_access_requests
  for select to authenticated
  using (
    buyer_id = (select auth.uid())
    or seller_id = (select auth.uid())
    or (select public.is_admin())
  );
comment on policy "Buyers and sellers can read their access requests, admins all"
  on public.listing_access_requests is
  'The buyer who asked and the listing''s seller read a request; admins read all. Nobody writes the table directly';

revoke all on table public.listing_access_requests from public, anon, authenticated;
grant select on table public.listing_access_requests to authenticated;
grant all on table public.listing_access_requests to service_role;

-- -----------------------------------------------------------------------------
-- has_listing_access(): does this user have approved access to this listing?
-- -----------------------------------------------------------------------------
create or replace function public.has_listing_access(p_listing uuid, p_user uuid)
returns boolean
language sql
stable
-- Invoker rights: only the owner (definer functions) and service_role call it.
set search_path = ''
as $$
  select exists (
    select 1 from public.listing_access_requests r
    where r.listing_id = p_listing and r.buyer_id = p_user and r.status = 'approved'
  )
$$;
comment on function public.has_listing_access(uuid, uuid) is
  'True when p_user has approved access (an approved listing_access_requests row) to listing p_listing. Service role and definer functions only';
revoke execute on function public.has_listing_access(uuid, uuid) from public, anon, authenticated;
grant execute on function public.has_listing_access(uuid, uuid) to service_role;

-- -----------------------------------------------------------------------------
-- request_listing_access(): a buyer accepts the NDA and asks to be let in
-- -----------------------------------------------------------------------------
create or replace function public.request_listing_access(
  p_listing uuid,
  p_nda_version text,
  p_message text default null
)
returns uuid
language plpgsql
-- Definer rights: a buyer may neither read another seller's listing row nor
-- write requests; the caller is checked first.
security definer
set search_path = ''
as $$
declare
  v_uid uuid := auth.uid();
  v_listing record;
  v_request public.listing_access_requests;
  v_nda public.nda_documents;
  v_current text;
  v_message text;
  v_id uuid;
begin
  perform public.assert_signed_in('request access to a listing');
  if v_uid is null then
    raise exception 'Cannot request access to a listing: only a signed-in buyer may'
      using errcode = '42501';
  end if;

  -- The lock order: the listing first.
  select l.id, l.seller_id, l.review_status, l.access_mode into v_listing
  from public.listings l where l.id = p_listing
  for share;
  if not found or (v_listing.review_status <> 'approved' and v_listing.seller_id <> v_uid) then
    raise exception 'Cannot request access to listing "%": it does not exist', p_listing
      using errcode = 'PT404';
  end if;
  if v_listing.seller_id = v_uid then
    raise exception 'Cannot request access to listing "%": it is your own listing', p_listing
      using errcode = '42501';
  end if;

  -- An open request: asking again returns it. A pending one past its expiry
  -- is expired now, and a new one takes its place.
  select * into v_request from public.listing_access_requests r
  where r.listing_id = p_listing and r.buyer_id = v_uid and r.status in ('pending', 'approved')
  for update;
  if found then
    if v_request.status = 'approved' or v_request.expires_at > now() then
      return v_request.id;
    end if;
    update public.listing_access_requests set status = 'expired' where id = v_request.id;
    perform public.queue_notice('listing_access_expired', v_request.buyer_id, v_request.id);
  end if;

  if v_listing.access_mode <> 'nda' then
    raise exception 'Cannot request access to listing "%": it is not confidential; everyone who sees it sees its details',
      p_listing using errcode = 'PT409';
  end if;
  -- The seller's answer stands.
  select * into v_request from public.listing_access_requests r
  where r.listing_id = p_listing and r.buyer_id = v_uid and r.status in ('declined', 'revoked')
  order by r.created_at desc
  limit 1;
  if found then
    raise exception 'Cannot request access to listing "%": the seller % on %',
      p_listing,
      case v_request.status when 'declined' then 'declined your request' else 'revoked your access' end,
      to_char(coalesce(v_request.revoked_at, v_request.decided_at) at time zone 'UTC', 'YYYY-MM-DD')
      using errcode = 'PT409', hint = 'A declined or revoked buyer cannot ask again for the same listing';
  end if;

  -- The NDA: the current version, accepted as it stands.
  if p_nda_version is null then
    raise exception 'Cannot request access to listing "%": name the NDA version you accept', p_listing
      using errcode = '22023', hint = 'supabase.rpc("current_nda_version") names the current one';
  end if;
  select * into v_nda from public.nda_documents d where d.version = p_nda_version;
  if not found then
    raise exception 'Cannot request access to listing "%": "%" is not an NDA version', p_listing,
      left(p_nda_version, 40) using errcode = '22023',
        hint = 'supabase.rpc("current_nda_version") names the current one';
  end if;
  v_current := public.current_nda_version();
  if v_nda.version <> v_current then
    raise exception 'Cannot request access to listing "%": NDA version "%" was replaced by version "%"',
      p_listing, v_nda.version, v_current using errcode = 'PT409',
        hint = format('Show the buyer version %s and ask again with p_nda_version "%s"', v_current, v_current);
  end if;

  v_message := public.clean_user_text(p_message, 'the message', 2000, false);

  insert into public.listing_access_requests (
    listing_id, buyer_id, seller_id, message, nda_version, nda_sha256
  )
  values (p_listing, v_uid, v_listing.seller_id, v_message, v_nda.version, v_nda.sha256)
  on conflict (listing_id, buyer_id) where status in ('pending', 'approved') do nothing
  returning id into v_id;
  if v_id is null then
    -- A concurrent request of the same buyer was first: its row is the answer.
    select r.id into v_id from public.listing_access_requests r
    where r.listing_id = p_listing and r.buyer_id = v_uid and r.status in ('pending', 'approved');
    return v_id;
  end if;

  perform public.take_user_limit('access_request:per_day', 'request access to a listing');
  insert into public.nda_acceptance_addresses (request_id, client_address)
  values (v_id, public.request_client_address());
  perform public.queue_notice('listing_access_requested', v_listing.seller_id, v_id);
  return v_id;
end
$$;
comment on function public.request_listing_access(uuid, text, text) is
  'A signed-in buyer (not the seller; 42501 otherwise) accepts NDA version p_nda_version (the current one: PT409 for a replaced version, 22023 for an unknown one) and asks for access to an approved nda listing (PT404 when unknown or not on sale, PT409 when not confidential or after the seller declined or revoked), with an optional note (22023 when over 2000 characters or holding control characters). Records the acceptance (version, sha256, time, client address) and tells the seller. Answers the request''s id; while a request is pending or approved, asking again answers it. PT429 beyond client_limits access_request:per_day. supabase.rpc("request_listing_access", { p_listing, p_nda_version, p_message })';
revoke execute on function public.request_listing_access(uuid, text, text) from public, anon;
grant execute on function public.request_listing_access(uuid, text, text) to authenticated, service_role;

-- -----------------------------------------------------------------------------
-- lock_listing_access_request(): the shared first steps of every decision
-- -----------------------------------------------------------------------------
create or replace function public.lock_listing_access_request(
  p_request uuid,
  p_action text,
  p_by_seller boolean
)
returns public.listing_access_requests
language plpgsql
-- Invoker rights: only the owner (the definer RPCs below) and service_role
-- call it.
set search_path = ''
as $$
declare
  v_uid uuid := auth.uid();
  v_client boolean := public.is_client_request();
  v_listing uuid;
  v_request public.listing_access_requests;
begin
  perform public.assert_signed_in(p_action);
  -- listing_id never changes, so it may be read before the locks.
  select r.listing_id into v_listing from public.listing_access_requests r where r.id = p_request;
  if found then
    -- For update, not for share: a decision may change the listing's
    -- access_buyers (the confidential blur migration), and two decisions
    -- holding a share lock would each wait for the other to update.
    perform 1 from public.listings l where l.id = v_listing for no key update;
    select * into v_request from public.listing_access_requests r where r.id = p_request for update;
  end if;
  if v_request.id is null
     or (v_client and v_uid is distinct from v_request.buyer_id
         and v_uid is distinct from v_request.seller_id and not public.is_admin()) then
    raise exception 'Cannot %: access request "%" does not exist', p_action, p_request
      using errcode = 'PT404';
  end if;
  if v_client then
    if p_by_seller and v_uid is distinct from v_request.seller_id and not public.is_admin() then
      raise exception 'Cannot %: only the listing''s seller or an admin may', p_action
        using errcode = '42501';
    end if;
    if not p_by_seller and v_uid is distinct from v_request.buyer_id then
      raise exception 'Cannot %: only the buyer who asked may', p_action using errcode = '42501';
    end if;
  end if;
  return v_request;
end
$$;
comment on function public.lock_listing_access_request(uuid, text, boolean) is
  'Internal: refuses an anonymous caller (42501), locks the request''s listing (for no key update) and the request (for update) and answers it; PT404 when it does not exist or the caller may not read it; 42501 unless the caller may make the move (p_by_seller: the seller or an admin; else the buyer). Any caller on the service connection';
revoke execute on function public.lock_listing_access_request(uuid, text, boolean)
  from public, anon, authenticated;
grant execute on function public.lock_listing_access_request(uuid, text, boolean) to service_role;

-- -----------------------------------------------------------------------------
-- assert_access_request_pending(): the one refusal of a decided or lapsed request
-- -----------------------------------------------------------------------------
create or replace function public.assert_access_request_pending(
  p_request public.listing_access_requests,
  p_action text
)
returns void
language plpgsql
stable
set search_path = ''
as $$
begin
  if p_request.status <> 'pending' then
    raise exception 'Cannot %: access request "%" is %', p_action, p_request.id,
      case p_request.status
        when 'approved' then 'already approved'
        when 'declined' then 'already declined'
        when 'withdrawn' then 'withdrawn by the buyer'
        when 'expired' then 'expired'
        when 'revoked' then 'revoked'
        else format('"%s"', p_request.status)
      end
      using errcode = 'PT409';
  end if;
  if p_request.expires_at <= now() then
    raise exception 'Cannot %: access request "%" expired at %', p_action, p_request.id,
      to_char(p_request.expires_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI "UTC"')
      using errcode = 'PT409';
  end if;
end
$$;
comment on function public.assert_access_request_pending(public.listing_access_requests, text) is
  'Raises PT409 (naming p_action) unless the request is pending and not past expires_at';
revoke execute on function public.assert_access_request_pending(public.listing_access_requests, text)
  from public, anon, authenticated;
grant execute on function public.assert_access_request_pending(public.listing_access_requests, text)
  to service_role;

-- -----------------------------------------------------------------------------
-- decide_listing_access(): the seller (or an admin) approves or declines
-- -----------------------------------------------------------------------------
create or replace function public.decide_listing_access(
  p_request uuid,
  p_approve boolean,
  p_reason text default null
)
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
  v_request := public.lock_listing_access_request(p_request, 'decide on the access request', true);
  if p_approve is null then
    raise exception 'Cannot decide on the access request: say whether to approve it (p_approve)'
      using errcode = '22023';
  end if;
  v_reason := public.clean_user_text(p_reason, 'the reason', 500, false);
  perform public.assert_access_request_pending(v_request, 'decide on the access request');
  update public.listing_access_requests
  set status = case when p_approve then 'approved' else 'declined' end,
      decided_by = auth.uid(),
      decision_reason = v_reason
  where id = v_request.id;
  perform public.queue_notice(
    case when p_approve then 'listing_access_approved' else 'listing_access_declined' end,
    v_request.buyer_id, v_request.id
  );
end
$$;
comment on function public.decide_listing_access(uuid, boolean, text) is
  'The listing''s seller or an admin (42501 for the buyer; PT404 for others and unknown requests) approves (p_approve true) or declines a pending, unexpired access request (PT409 otherwise), with an optional reason (at most 500 characters, 22023); the buyer is told. Approval lets the buyer see the confidential fields, make offers and talk to the seller. supabase.rpc("decide_listing_access", { p_request, p_approve, p_reason })';
revoke execute on function public.decide_listing_access(uuid, boolean, text) from public, anon;
grant execute on function public.decide_listing_access(uuid, boolean, text) to authenticated, service_role;

-- -----------------------------------------------------------------------------
-- withdraw_listing_access(): the buyer takes a pending request back
-- -----------------------------------------------------------------------------
create or replace function public.withdraw_listing_access(p_request uuid)
returns void
language plpgsql
-- Definer rights: a buyer may not update requests; the caller is checked
-- first (lock_listing_access_request).
security definer
set search_path = ''
as $$
declare
  v_request public.listing_access_requests;
begin
  v_request := public.lock_listing_access_request(p_request, 'withdraw the access request', false);
  perform public.assert_access_request_pending(v_request, 'withdraw the access request');
  update public.listing_access_requests
  set status = 'withdrawn', decided_by = auth.uid()
  where id = v_request.id;
end
$$;
comment on function public.withdraw_listing_access(uuid) is
  'The buyer who asked (42501 for the seller; PT404 for others and unknown requests) withdraws a pending, unexpired access request (PT409 otherwise). supabase.rpc("withdraw_listing_access", { p_request })';
revoke execute on function public.withdraw_listing_access(uuid) from public, anon;
grant execute on function public.withdraw_listing_access(uuid) to authenticated, service_role;

-- -----------------------------------------------------------------------------
-- revoke_listing_access(): the seller (or an admin) takes access back
-- -----------------------------------------------------------------------------
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
  if v_request.status <> 'approved' then
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
  'The listing''s seller or an admin (42501 for the buyer; PT404 for others and unknown requests) revokes approved access (PT409 otherwise), with an optional reason (at most 500 characters, 22023); the buyer is told and no longer sees the confidential fields. supabase.rpc("revoke_listing_access", { p_request, p_reason })';
revoke execute on function public.revoke_listing_access(uuid, text) from public, anon;
grant execute on function public.revoke_listing_access(uuid, text) to authenticated, service_role;

-- -----------------------------------------------------------------------------
-- expire_listing_access_requests(): the daily sweep of lapsed requests
-- -----------------------------------------------------------------------------
create or replace function public.expire_listing_access_requests()
returns integer
language plpgsql
-- Invoker rights: only the service role may execute it.
set search_path = ''
as $$
declare
  v_count integer := 0;
  v_expired record;
begin
  -- Rows locked by a decision in progress are left for the next run: the
  -- sweep never waits, so it never deadlocks with a decision.
  for v_expired in
    with lapsed as (
      select r.id from public.listing_access_requests r
      where r.status = 'pending' and r.expires_at <= now()
      for update skip locked
    )
    update public.listing_access_requests r set status = 'expired'
    from lapsed
    where r.id = lapsed.id
    returning r.id, r.buyer_id
  loop
    perform public.queue_notice('listing_access_expired', v_expired.buyer_id, v_expired.id);
    v_count := v_count + 1;
  end loop;
  return v_count;
end
$$;
comment on function public.expire_listing_access_requests() is
  'Marks every pending access request past expires_at expired, tells each buyer, and returns how many; requests locked by a decision in progress wait for the next run. For the daily run (service role only)';
revoke execute on function public.expire_listing_access_requests() from public, anon, authenticated;
grant execute on function public.expire_listing_access_requests() to service_role;

-- -----------------------------------------------------------------------------
-- check_offer_listing(): an offer on an nda listing needs approved access
-- -----------------------------------------------------------------------------
-- As the offers migration wrote it, with the access check added.
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
  if not public.listing_open_for_offers(new.listing_id) then
    raise exception 'Cannot make offer on listing "%": it already has a deal in progress',
      new.listing_id using errcode = 'PT409';
  end if;
  return null;
end
$$;
comment on function public.check_offer_listing() is
  'Trigger on offers (after insert): under a share lock on the listing, refuses an offer by the listing''s seller or in another currency than the listing''s (23514), on a listing that is not approved or has an active deal (PT409), or on a confidential (nda) listing by a buyer without approved access (42501)';
revoke execute on function public.check_offer_listing() from public, anon, authenticated;
