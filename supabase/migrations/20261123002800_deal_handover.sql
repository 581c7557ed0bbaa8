-- =============================================================================
-- Deal handover: the checklist of what the seller transfers to the buyer
--
-- Every deal gets a checklist when it is created (deal_handover_steps, six
-- default steps; the seller may add steps). The seller marks each step
-- delivered, the buyer confirms it or disputes it:
--
--   pending ──► delivered ──► confirmed        (by the buyer, or by the job
--                 │   ▲                          when the inspection window
--                 ▼   │                          lapsed: confirmation
--               disputed                         inspection_lapsed)
--
--   pending   → delivered   the seller delivered (deliver_handover_step)
--   delivered → confirmed   the buyer confirmed (confirm_handover_step), or
--                           apa-auto-handover after HANDOVER_INSPECTION_DAYS
--                           since the seller delivered the last step
--   delivered → disputed    the buyer disputed, with a reason
--                           (dispute_handover_step)
--   disputed  → delivered   the seller delivered again
--
-- confirmed is final. Steps change only while the deal is funded or in
-- handover and its handover is not complete. The participants' functions
-- are security definer, act as auth.uid() and check the caller's side of
-- the deal; clients have no other write access. Every change is broadcast
-- to both participants' private topics user:<id>.
--
-- The job apa-auto-handover moves a funded deal to in_handover once its
-- agreement (deal_documents kind apa) exists, confirms lapsed inspections,
-- and when every step is confirmed stamps the deal ready for payout
-- (deals.handover_completed_at and handover_completion) and tells admins.
-- release-deal-payout pays out a deal in handover only once that stamp is
-- set (force: true skips the wait).
-- =============================================================================

-- -----------------------------------------------------------------------------
-- deals: the handover's completion
-- -----------------------------------------------------------------------------
alter table public.deals add column if not exists handover_completed_at timestamptz;
alter table public.deals add column if not exists handover_completion text;
comment on column public.deals.handover_completed_at is
  'When every handover step was confirmed: the deal is ready for payout (apa-auto-handover)';
comment on column public.deals.handover_completion is
  'How the handover completed: buyer_confirmed (the buyer confirmed every step) or inspection_lapsed (some steps were confirmed because the inspection window lapsed)';

alter table public.deals drop constraint if exists deals_handover_completion_known;
alter table public.deals add constraint deals_handover_completion_known check (
  handover_completion in ('buyer_confirmed', 'inspection_lapsed')
  and handover_completed_at is not null
  or handover_completion is null and handover_completed_at is null
);
comment on constraint deals_handover_completion_known on public.deals is
  'A completed handover says how it completed; an open one says nothing';

-- -----------------------------------------------------------------------------
-- deal_handover_steps
-- -----------------------------------------------------------------------------
create table if not exists public.deal_handover_steps (
  id uuid primary key default gen_random_uuid(),
  deal_id uuid not null references public.deals (id) on delete cascade,
  position integer not null,
  kind text not null,
  title text not null,
  details text,
  status text not null default 'pending',
  created_by uuid references auth.users (id) on delete set null,
  delivered_at timestamptz,
  delivered_by uuid references auth.users (id) on delete set null,
  delivery_note text,
  disputed_at timestamptz,
  dispute_reason text,
  confirmed_at timestamptz,
  confirmed_by uuid references auth.users (id) on delete set null,
  confirmation text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint deal_handover_steps_position_key unique (deal_id, position),
  constraint deal_handover_steps_kind_known check (
    kind in ('domain_transfer', 'code_repository', 'hosting', 'third_party_accounts',
             'data_export', 'credentials', 'custom')
  ),
  constraint deal_handover_steps_status_known check (
    status in ('pending', 'delivered', 'disputed', 'confirmed')
  ),
  constraint deal_handover_steps_title_short check (length(title) between 1 and 200),
  constraint deal_handover_steps_details_short check (length(details) <= 2000),
  constraint deal_handover_steps_note_short check (length(delivery_note) <= 2000),
  constraint deal_handover_steps_reason_short check (length(dispute_reason) between 1 and 2000),
  constraint deal_handover_steps_delivered_stamped check (
    status = 'pending' or delivered_at is not null
  ),
  constraint deal_handover_steps_disputed_stamped check (
    status <> 'disputed' or (disputed_at is not null and dispute_reason is not null)
  ),
  constraint deal_handover_steps_confirmed_stamped check (
    (status = 'confirmed') = (confirmed_at is not null)
    and (status = 'confirmed') = (confirmation is not null)
  ),
  constraint deal_handover_steps_confirmation_known check (
    confirmation in ('buyer', 'inspection_lapsed')
  )
);

comment on table public.deal_handover_steps is
  'The handover checklist of a deal: one row per thing the seller transfers (pending → delivered → confirmed, delivered ⇄ disputed). Changed only through deliver/confirm/dispute/add_handover_step and the job apa-auto-handover';
comment on column public.deal_handover_steps.deal_id is 'The deal';
comment on column public.deal_handover_steps.position is 'Order in the checklist (and in the agreement''s asset list), from 1';
comment on column public.deal_handover_steps.kind is
  'domain_transfer, code_repository, hosting, third_party_accounts, data_export, credentials (the defaults) or custom (added by the seller)';
comment on column public.deal_handover_steps.title is 'What is transferred';
comment on column public.deal_handover_steps.details is 'How, or what exactly';
comment on column public.deal_handover_steps.status is 'pending, delivered, disputed or confirmed';
comment on column public.deal_handover_steps.created_by is 'The seller who added the step; null for the default steps';
comment on column public.deal_handover_steps.delivered_at is 'When the seller last marked it delivered';
comment on column public.deal_handover_steps.delivered_by is 'Who marked it delivered';
comment on column public.deal_handover_steps.delivery_note is 'The seller''s note on the delivery (no secrets: hand credentials over out of band)';
comment on column public.deal_handover_steps.disputed_at is 'When the buyer last disputed it';
comment on column public.deal_handover_steps.dispute_reason is 'Why the buyer disputed it';
comment on column public.deal_handover_steps.confirmed_at is 'When it was confirmed';
comment on column public.deal_handover_steps.confirmed_by is 'The buyer who confirmed it; null when the inspection window lapsed';
comment on column public.deal_handover_steps.confirmation is
  'Why it is confirmed: buyer (the buyer confirmed) or inspection_lapsed (the job confirmed it HANDOVER_INSPECTION_DAYS after the seller delivered everything)';
comment on column public.deal_handover_steps.created_at is 'When the step was added';
comment on column public.deal_handover_steps.updated_at is 'When the step last changed';
comment on constraint deal_handover_steps_position_key on public.deal_handover_steps is 'One step per position of a deal''s checklist';
comment on constraint deal_handover_steps_kind_known on public.deal_handover_steps is 'A step is of a known kind';
comment on constraint deal_handover_steps_status_known on public.deal_handover_steps is 'A step is pending, delivered, disputed or confirmed';
comment on constraint deal_handover_steps_title_short on public.deal_handover_steps is 'Titles are 1 to 200 characters';
comment on constraint deal_handover_steps_details_short on public.deal_handover_steps is 'Details are at most 2000 characters';
comment on constraint deal_handover_steps_note_short on public.deal_handover_steps is 'Delivery notes are at most 2000 characters';
comment on constraint deal_handover_steps_reason_short on public.deal_handover_steps is 'Dispute reasons are 1 to 2000 characters';
comment on constraint deal_handover_steps_delivered_stamped on public.deal_handover_steps is 'A step past pending was delivered';
comment on constraint deal_handover_steps_disputed_stamped on public.deal_handover_steps is 'A disputed step says when and why';
comment on constraint deal_handover_steps_confirmed_stamped on public.deal_handover_steps is 'A confirmed step says when and why, and only a confirmed one';
comment on constraint deal_handover_steps_confirmation_known on public.deal_handover_steps is 'A confirmation is by the buyer or by the lapsed inspection window';

create unique index if not exists deal_handover_steps_default_kind_key
  on public.deal_handover_steps (deal_id, kind) where kind <> 'custom';
comment on index public.deal_handover_steps_default_kind_key is 'Each default step once per deal';
create index if not exists deal_handover_steps_open_idx
  on public.deal_handover_steps (deal_id) where status <> 'confirmed';
comment on index public.deal_handover_steps_open_idx is 'Deals with steps still open (the job''s scans)';
create index if not exists deal_handover_steps_created_by_idx on public.deal_handover_steps (created_by);
comment on index public.deal_handover_steps_created_by_idx is 'Steps by author (user deletion)';
create index if not exists deal_handover_steps_delivered_by_idx on public.deal_handover_steps (delivered_by);
comment on index public.deal_handover_steps_delivered_by_idx is 'Steps by deliverer (user deletion)';
create index if not exists deal_handover_steps_confirmed_by_idx on public.deal_handover_steps (confirmed_by);
comment on index public.deal_handover_steps_confirmed_by_idx is 'Steps by confirmer (user deletion)';

drop trigger if exists deal_handover_steps_set_updated_at on public.deal_handover_steps;
create trigger deal_handover_steps_set_updated_at
  before update on public.deal_handover_steps
  for each row execute function public.set_updated_at();
comment on trigger deal_handover_steps_set_updated_at on public.deal_handover_steps is 'Stamps updated_at';

-- -----------------------------------------------------------------------------
-- The state table and its guard (for every writer, the service's included)
-- -----------------------------------------------------------------------------
create or replace function public.handover_step_transition_allowed(p_from text, p_to text)
returns boolean
language sql
immutable
set search_path = ''
as $$
  select coalesce((p_from, p_to) in (
    ('pending', 'delivered'),
    ('delivered', 'confirmed'),
    ('delivered', 'disputed'),
    ('disputed', 'delivered')
  ), false)
$$;
comment on function public.handover_step_transition_allowed(text, text) is
  'True when the handover step state machine allows p_from → p_to (the state table in the deal_handover migration)';
revoke execute on function public.handover_step_transition_allowed(text, text) from public, anon;
grant execute on function public.handover_step_transition_allowed(text, text) to authenticated, service_role;

create or replace function public.guard_handover_step()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if tg_op = 'INSERT' then
    if new.status <> 'pending' then
      raise exception 'Cannot add a step that is already %', new.status using errcode = 'PT409';
    end if;
    return new;
  end if;
  if new.deal_id is distinct from old.deal_id then
    raise exception 'Cannot move a handover step to another deal' using errcode = 'PT409';
  end if;
  if new.status is distinct from old.status
     and not public.handover_step_transition_allowed(old.status, new.status) then
    raise exception 'Cannot move the step "%" from % to %', old.title, old.status, new.status
      using errcode = 'PT409';
  end if;
  return new;
end
$$;
comment on function public.guard_handover_step() is
  'Trigger on deal_handover_steps: a step starts pending, stays in its deal and changes status only as the state table allows (PT409 otherwise)';
revoke execute on function public.guard_handover_step() from public, anon, authenticated;

drop trigger if exists deal_handover_steps_guard on public.deal_handover_steps;
create trigger deal_handover_steps_guard
  before insert or update on public.deal_handover_steps
  for each row execute function public.guard_handover_step();
comment on trigger deal_handover_steps_guard on public.deal_handover_steps is 'Enforces the step state machine';

-- -----------------------------------------------------------------------------
-- Row level security: participants and admins read; writes through functions
-- -----------------------------------------------------------------------------
alter table public.deal_handover_steps enable row level security;

drop policy if exists "Deal participants can read their deals' handover steps and admins all"
  on public.deal_handover_steps;
create policy "Deal participants can read their deals' handover steps and admins all"
  on public.deal_handover_steps
  for select to authenticated
  using (
    exists (
      select 1 from public.deals d
      where d.id = deal_id
        and (d.buyer_id = (select auth.uid()) or d.seller_id = (select auth.uid()))
    )
    or (select public.is_admin())
  );
comment on policy "Deal participants can read their deals' handover steps and admins all"
  on public.deal_handover_steps is
  'The buyer and the seller see their deal''s checklist; admins see every checklist';

revoke all on table public.deal_handover_steps from anon, authenticated;
grant select on table public.deal_handover_steps to authenticated;
grant all on table public.deal_handover_steps to service_role;

-- -----------------------------------------------------------------------------
-- The default checklist: written with the deal (and for open deals now)
-- -----------------------------------------------------------------------------
create or replace function public.add_default_handover_steps(p_deal uuid)
returns void
language sql
set search_path = ''
as $$
  insert into public.deal_handover_steps (deal_id, position, kind, title, details)
  select p_deal, s.position, s.kind, s.title, s.details
  from (values
    (1, 'domain_transfer', 'Domain name transfer',
     'Unlock the domain, send the authorization (EPP) code and approve the transfer to the buyer''s registrar account.'),
    (2, 'code_repository', 'Source code repository',
     'Transfer the repository, with its full history, to the buyer''s account.'),
    (3, 'hosting', 'Hosting and infrastructure',
     'Move servers, databases and deployments to the buyer''s accounts, or hand the hosting account over.'),
    (4, 'third_party_accounts', 'Third-party accounts',
     'Transfer analytics, payment, e-mail, social media and other service accounts the project uses.'),
    (5, 'data_export', 'Data export',
     'Export the customer, content and business data included in the sale.'),
    (6, 'credentials', 'Credentials',
     'Hand over the remaining passwords, API keys and recovery codes through a secure channel; the buyer rotates them.')
  ) as s (position, kind, title, details)
  on conflict do nothing
$$;
comment on function public.add_default_handover_steps(uuid) is
  'Adds the six default handover steps to deal p_deal (steps it already has are kept)';
revoke execute on function public.add_default_handover_steps(uuid) from public, anon, authenticated;
grant execute on function public.add_default_handover_steps(uuid) to service_role;

create or replace function public.create_deal_handover_steps()
returns trigger
language plpgsql
-- Definer rights: whoever creates the deal (the service connection, or
-- accept_offer for a seller) writes its checklist.
security definer
set search_path = ''
as $$
begin
  perform public.add_default_handover_steps(new.id);
  return null;
end
$$;
comment on function public.create_deal_handover_steps() is
  'Trigger on deals: gives a new deal the default handover checklist';
revoke execute on function public.create_deal_handover_steps() from public, anon, authenticated;

drop trigger if exists deals_create_handover_steps on public.deals;
create trigger deals_create_handover_steps
  after insert on public.deals
  for each row execute function public.create_deal_handover_steps();
comment on trigger deals_create_handover_steps on public.deals is
  'Every deal starts with the default handover checklist';

select public.add_default_handover_steps(d.id)
from public.deals d
where d.status in ('pending_payment', 'funded', 'in_handover', 'disputed');

-- -----------------------------------------------------------------------------
-- Realtime: every step change to both participants
-- -----------------------------------------------------------------------------
create or replace function public.broadcast_handover_step_change()
returns trigger
language plpgsql
-- Definer rights: writers may not insert into realtime.messages themselves.
security definer
set search_path = ''
as $$
declare
  v_deal public.deals;
begin
  select * into v_deal from public.deals where id = new.deal_id;
  perform realtime.broadcast_changes(
    'user:' || v_deal.buyer_id::text, tg_op, tg_op, tg_table_name, tg_table_schema, new, old
  );
  perform realtime.broadcast_changes(
    'user:' || v_deal.seller_id::text, tg_op, tg_op, tg_table_name, tg_table_schema, new, old
  );
  return null;
end
$$;
comment on function public.broadcast_handover_step_change() is
  'Trigger on deal_handover_steps: broadcasts a step the seller added and every change to the buyer''s and the seller''s private topics user:<id>';
revoke execute on function public.broadcast_handover_step_change() from public, anon, authenticated;

drop trigger if exists deal_handover_steps_broadcast_change on public.deal_handover_steps;
create trigger deal_handover_steps_broadcast_change
  after update on public.deal_handover_steps
  for each row execute function public.broadcast_handover_step_change();
comment on trigger deal_handover_steps_broadcast_change on public.deal_handover_steps is
  'Keeps both participants'' checklists live';

-- The default steps arrive with the deal (whose creation is broadcast);
-- a step the seller adds is news.
drop trigger if exists deal_handover_steps_broadcast_added on public.deal_handover_steps;
create trigger deal_handover_steps_broadcast_added
  after insert on public.deal_handover_steps
  for each row
  when (new.kind = 'custom')
  execute function public.broadcast_handover_step_change();
comment on trigger deal_handover_steps_broadcast_added on public.deal_handover_steps is
  'Tells both participants about a step the seller added';

-- -----------------------------------------------------------------------------
-- The participants' side: one checker, four actions
-- -----------------------------------------------------------------------------
create or replace function public.lock_deal_for_handover(p_deal uuid, p_side text, p_action text)
returns public.deals
language plpgsql
-- Invoker rights: reached only from the definer functions below.
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
     and v_deal.status not in ('pending_payment', 'funded', 'in_handover') then
    raise exception 'Cannot %: the deal is %', p_action, replace(v_deal.status, '_', ' ')
      using errcode = 'PT409';
  end if;
  return v_deal;
end
$$;
comment on function public.lock_deal_for_handover(uuid, text, text) is
  'Share-locks deal p_deal for a change of its checklist and checks it: the caller (auth.uid()) is its p_side (seller or buyer; 42501 otherwise, also for unknown deals), the handover is not complete and the deal is funded or in handover (pending payment too for adding steps; PT409 otherwise)';
revoke execute on function public.lock_deal_for_handover(uuid, text, text) from public, anon, authenticated;

create or replace function public.handover_step_for(p_step uuid, p_side text, p_action text)
returns public.deal_handover_steps
language plpgsql
-- Invoker rights: reached only from the definer functions below.
set search_path = ''
as $$
declare
  v_deal uuid;
  v_step public.deal_handover_steps;
begin
  select deal_id into v_deal from public.deal_handover_steps where id = p_step;
  if not found then
    raise exception 'Cannot %: no such handover step', p_action using errcode = '42501';
  end if;
  perform public.lock_deal_for_handover(v_deal, p_side, p_action);
  select * into v_step from public.deal_handover_steps where id = p_step for update;
  return v_step;
end
$$;
comment on function public.handover_step_for(uuid, text, text) is
  'The handover step p_step, row-locked, after lock_deal_for_handover() checked its deal for p_side and p_action (42501 for unknown steps)';
revoke execute on function public.handover_step_for(uuid, text, text) from public, anon, authenticated;

create or replace function public.deliver_handover_step(p_step uuid, p_note text default null)
returns public.deal_handover_steps
language plpgsql
security definer
set search_path = ''
as $$
declare
  v_step public.deal_handover_steps;
  v_note text := nullif(btrim(p_note), '');
begin
  v_step := public.handover_step_for(p_step, 'seller', 'deliver this step');
  if length(v_note) > 2000 then
    raise exception 'Cannot deliver this step: the note is longer than 2000 characters'
      using errcode = '22023';
  end if;
  if v_step.status not in ('pending', 'disputed') then
    raise exception 'Cannot deliver the step "%": it is %', v_step.title, v_step.status
      using errcode = 'PT409';
  end if;
  update public.deal_handover_steps set
    status = 'delivered',
    delivered_at = now(),
    delivered_by = auth.uid(),
    delivery_note = v_note
  where id = p_step
  returning * into v_step;
  return v_step;
end
$$;
comment on function public.deliver_handover_step(uuid, text) is
  'The seller marks handover step p_step delivered (from pending, or again after a dispute), with an optional note of at most 2000 characters; 42501 for anyone but the deal''s seller, PT409 when the step or the deal does not allow it';
revoke execute on function public.deliver_handover_step(uuid, text) from public, anon;
grant execute on function public.deliver_handover_step(uuid, text) to authenticated, service_role;

create or replace function public.confirm_handover_step(p_step uuid)
returns public.deal_handover_steps
language plpgsql
security definer
set search_path = ''
as $$
declare
  v_step public.deal_handover_steps;
begin
  v_step := public.handover_step_for(p_step, 'buyer', 'confirm this step');
  if v_step.status <> 'delivered' then
    raise exception 'Cannot confirm the step "%": it is %', v_step.title, v_step.status
      using errcode = 'PT409';
  end if;
  update public.deal_handover_steps set
    status = 'confirmed',
    confirmed_at = now(),
    confirmed_by = auth.uid(),
    confirmation = 'buyer'
  where id = p_step
  returning * into v_step;
  return v_step;
end
$$;
comment on function public.confirm_handover_step(uuid) is
  'The buyer confirms delivered handover step p_step; 42501 for anyone but the deal''s buyer, PT409 when the step is not delivered or the deal does not allow it';
revoke execute on function public.confirm_handover_step(uuid) from public, anon;
grant execute on function public.confirm_handover_step(uuid) to authenticated, service_role;

create or replace function public.dispute_handover_step(p_step uuid, p_reason text)
returns public.deal_handover_steps
language plpgsql
security definer
set search_path = ''
as $$
declare
  v_step public.deal_handover_steps;
  v_reason text := nullif(btrim(p_reason), '');
begin
  v_step := public.handover_step_for(p_step, 'buyer', 'dispute this step');
  if v_reason is null or length(v_reason) > 2000 then
    raise exception 'Cannot dispute this step: give a reason of 1 to 2000 characters'
      using errcode = '22023';
  end if;
  if v_step.status <> 'delivered' then
    raise exception 'Cannot dispute the step "%": it is %', v_step.title, v_step.status
      using errcode = 'PT409';
  end if;
  update public.deal_handover_steps set
    status = 'disputed',
    disputed_at = now(),
    dispute_reason = v_reason
  where id = p_step
  returning * into v_step;
  return v_step;
end
$$;
comment on function public.dispute_handover_step(uuid, text) is
  'The buyer disputes delivered handover step p_step with a reason (1 to 2000 characters, 22023 otherwise); the seller delivers it again. 42501 for anyone but the deal''s buyer, PT409 when the step is not delivered or the deal does not allow it';
revoke execute on function public.dispute_handover_step(uuid, text) from public, anon;
grant execute on function public.dispute_handover_step(uuid, text) to authenticated, service_role;

create or replace function public.add_handover_step(p_deal uuid, p_title text, p_details text default null)
returns public.deal_handover_steps
language plpgsql
security definer
set search_path = ''
as $$
declare
  v_title text := nullif(btrim(p_title), '');
  v_details text := nullif(btrim(p_details), '');
  v_step public.deal_handover_steps;
  v_count integer;
begin
  perform public.lock_deal_for_handover(p_deal, 'seller', 'add a handover step');
  if v_title is null or length(v_title) > 200 or length(v_details) > 2000 then
    raise exception 'Cannot add the step: a title of 1 to 200 characters and details of at most 2000 are needed'
      using errcode = '22023';
  end if;
  -- The deal's share lock does not serialize two sellers' tabs: the row
  -- locks on the checklist do.
  perform 1 from public.deal_handover_steps where deal_id = p_deal for update;
  select count(*) into v_count from public.deal_handover_steps where deal_id = p_deal;
  if v_count >= 50 then
    raise exception 'Cannot add the step: a checklist has at most 50 steps' using errcode = 'PT409';
  end if;
  insert into public.deal_handover_steps (deal_id, position, kind, title, details, created_by)
  values (
    p_deal,
    (select coalesce(max(position), 0) + 1 from public.deal_handover_steps where deal_id = p_deal),
    'custom', v_title, v_details, auth.uid()
  )
  returning * into v_step;
  return v_step;
end
$$;
comment on function public.add_handover_step(uuid, text, text) is
  'The seller adds a custom step (title 1 to 200 characters, details at most 2000; 22023 otherwise) at the end of deal p_deal''s checklist, at most 50 steps, while the deal is pending payment, funded or in handover; 42501 for anyone but the deal''s seller';
revoke execute on function public.add_handover_step(uuid, text, text) from public, anon;
grant execute on function public.add_handover_step(uuid, text, text) to authenticated, service_role;

-- -----------------------------------------------------------------------------
-- Notices: the handover notification type (shared/notifications.ts)
-- -----------------------------------------------------------------------------
alter table public.notifications
  drop constraint if exists notifications_type_known;
alter table public.notifications
  add constraint notifications_type_known check (
    type in ('account', 'listing_review', 'new_listings', 'payments', 'messages', 'admin_digest',
             'price_alerts', 'sponsored', 'handover')
  );
comment on constraint notifications_type_known on public.notifications is
  'A notification is of a known type (shared/notifications.ts)';

alter table public.notification_preferences
  drop constraint if exists notification_preferences_type_known;
alter table public.notification_preferences
  add constraint notification_preferences_type_known check (
    type in ('account', 'listing_review', 'new_listings', 'payments', 'messages', 'admin_digest',
             'price_alerts', 'sponsored', 'handover')
  );
comment on constraint notification_preferences_type_known on public.notification_preferences is
  'A preference is for a known notification type (shared/notifications.ts)';

-- -----------------------------------------------------------------------------
-- The schedule
-- -----------------------------------------------------------------------------
insert into public.job_schedules (function_name, cron, description) values
  ('apa-auto-handover', '20 * * * *',
   'Hourly at :20: confirm uploads, start handovers, confirm lapsed inspections, mark deals ready for payout, remind late parties')
on conflict (function_name) do nothing;

select public.schedule_jobs();
