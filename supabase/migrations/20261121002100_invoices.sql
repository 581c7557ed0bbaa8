-- =============================================================================
-- Invoices: the payment processor's invoices of our customers
--
-- Mirrored by payproc-webhook (invoice.* events, re-read from the processor)
-- and by sync-invoices (pages through the processor's invoices from a stored
-- cursor). Amounts are in major units of currency (converted once at the
-- processor boundary). Users read their own invoices; only the service
-- connection writes.
--
-- status follows the processor; it drives the transitions, we record them:
--
--   draft ──► open ──► paid
--     │         ├────► void
--     │         └────► uncollectible ──► paid | void
--     └──► (deleted at the processor: never mirrored once gone)
--
-- invoice.payment_failed leaves an invoice open and raises attempt_count;
-- next_payment_attempt says when the processor retries.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- Table
-- -----------------------------------------------------------------------------
create table if not exists public.invoices (
  id uuid primary key default gen_random_uuid(),
  payproc_invoice_id text not null unique,
  user_id uuid references auth.users (id) on delete set null,
  payproc_customer_id text not null,
  payproc_subscription_id text,
  status text not null,
  number text,
  billing_reason text,
  currency text not null,
  amount_due numeric(12, 2) not null default 0,
  amount_paid numeric(12, 2) not null default 0,
  amount_remaining numeric(12, 2) not null default 0,
  attempt_count integer not null default 0,
  next_payment_attempt timestamptz,
  hosted_invoice_url text,
  invoice_pdf text,
  period_start timestamptz,
  period_end timestamptz,
  paid_at timestamptz,
  payproc_created timestamptz not null,
  payproc_event_created timestamptz,
  payproc_synced_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint invoices_status_known check (
    status in ('draft', 'open', 'paid', 'uncollectible', 'void')
  ),
  constraint invoices_currency_iso_4217 check (currency ~ '^[A-Z]{3}$')
);

comment on table public.invoices is
  'The payment processor''s invoices of our customers, mirrored by payproc-webhook and sync-invoices. Users read their own; written only by the service connection';
comment on column public.invoices.id is 'Our id of the invoice row';
comment on column public.invoices.number is 'The invoice number customers see (null while draft)';
comment on column public.invoices.hosted_invoice_url is 'The processor-hosted page of the invoice';
comment on column public.invoices.invoice_pdf is 'The invoice as PDF at the processor';
comment on column public.invoices.period_start is 'Start of the period the invoice bills';
comment on column public.invoices.period_end is 'End of the period the invoice bills';
comment on column public.invoices.created_at is 'When the row was first written';
comment on column public.invoices.updated_at is 'Moves on every change (trigger)';
comment on column public.invoices.payproc_invoice_id is 'The processor''s invoice id (in_...)';
comment on column public.invoices.user_id is
  'The user whose processor customer the invoice belongs to (through subscriptions.payproc_customer_id); null while unknown';
comment on column public.invoices.payproc_customer_id is 'The processor''s customer id';
comment on column public.invoices.payproc_subscription_id is 'The subscription the invoice bills, if any';
comment on column public.invoices.status is 'draft | open | paid | uncollectible | void (the processor''s)';
comment on column public.invoices.billing_reason is 'Why the processor created it, e.g. subscription_create, subscription_cycle';
comment on column public.invoices.currency is 'ISO 4217 code, upper case';
comment on column public.invoices.amount_due is 'Amount due, in major units of currency';
comment on column public.invoices.amount_paid is 'Amount paid, in major units of currency';
comment on column public.invoices.amount_remaining is 'Amount still to pay, in major units of currency';
comment on column public.invoices.attempt_count is 'Payment attempts so far (raised by failed payments)';
comment on column public.invoices.next_payment_attempt is 'When the processor retries the payment, if it will';
comment on column public.invoices.paid_at is 'When the invoice was paid';
comment on column public.invoices.payproc_created is 'When the processor created the invoice; sync-invoices'' cursor moves on it';
comment on column public.invoices.payproc_event_created is
  'created of the newest webhook event applied; an event whose invoice cannot be re-read is applied only if not older';
comment on column public.invoices.payproc_synced_at is
  'When the mirrored state was read from the processor; a write carrying an older read is refused';

create index if not exists invoices_user_id_idx on public.invoices (user_id, payproc_created desc);
create index if not exists invoices_customer_idx on public.invoices (payproc_customer_id);
create index if not exists invoices_subscription_idx on public.invoices (payproc_subscription_id);

drop trigger if exists invoices_set_updated_at on public.invoices;
create trigger invoices_set_updated_at
  before update on public.invoices
  for each row execute function public.set_updated_at();

-- -----------------------------------------------------------------------------
-- Row level security: users read their own invoices, admins all
-- -----------------------------------------------------------------------------
alter table public.invoices enable row level security;

drop policy if exists "Users can read their own invoices and admins all" on public.invoices;
create policy "Users can read their own invoices and admins all" on public.invoices
  for select to authenticated
  using (user_id = (select auth.uid()) or (select public.is_admin()));

revoke all on table public.invoices from anon, authenticated;
grant select on table public.invoices to authenticated;
grant all on table public.invoices to service_role;
