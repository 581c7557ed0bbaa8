-- =============================================================================
-- Stray payments are closed only by a real refund
--
-- A payment a deal could not take (deal_stray_payments, see the
-- deal_money_edges migration) used to count as returned as soon as the
-- processor held any refund of it that was not failed or cancelled: a partial
-- refund made in the dashboard, or one still pending, told the buyer the
-- money was back. Now the server decides from every refund of the payment,
-- as the processor has it at that moment (never from a webhook's payload):
--
--   covered  the succeeded refunds add up to the whole payment
--   waiting  the succeeded and the pending (or requires_action) refunds
--            together add up to it, the succeeded alone do not
--   short    less: the rest is refunded — the whole payment with the key
--            stray-refund:<intent>, or what is left after the refunds that
--            are not failed (a partial one from the dashboard) with the key
--            stray-refund-rest:<intent>; from round 2 on both keys end in
--            :<refund_round>, so a refund made again is a new refund
--
-- Failed and cancelled refunds count for nothing. A refund whose failure was
-- recorded (deal event stray_payment_refund_reversed) counts for nothing
-- either, even when an older read still shows it succeeded or pending.
--
--   from            to              when
--   pending         refunded        covered (our refund, or the dashboard's)
--   pending         refund_pending  waiting: the daily run's stray-refunds
--                                   sub-job (and charge.refund.updated)
--                                   looks again until the processor decides
--   pending         failed          the processor refused the refund
--                                   (last_error; the admins refund by hand)
--   failed          refunded        covered by the admins' refund by hand
--   failed          refund_pending  waiting on the admins' refund by hand
--   refund_pending  refunded        covered: the pending refund succeeded
--   refund_pending  pending         a refund it counted on failed or was
--   refunded        pending         cancelled (refund.failed,
--                                   charge.refund.updated, or the daily run
--                                   reading it): reopened, refund_round + 1,
--                                   the daily run refunds it again with the
--                                   new round's key
--
-- A reopening is recorded once per failed refund (the deal event
-- stray_payment_refund_reversed, an event without a state change whose
-- processor object is the refund) and every admin is told once per failed
-- refund (admin_alerts, e-mail admin_payment_return_reversed). Our own refund failing while the row is
-- still pending (the process that made it ended before recording it) is a
-- reversal too: its key is used up, so the round moves on. A refund that a
-- reading shows waiting or missing never moves refunded or refund_pending
-- back: only a failure does, so webhooks delivered late, twice or out of
-- order, and daily runs started twice, change nothing the second time.
--
-- The processor never refunds more than the charge, and every refund the
-- server makes has a key of the round it was decided in: however many
-- callers race (the webhook, the daily run, an event replayed), one refund.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- deal_stray_payments: refund_pending, the refunds counted, the round
-- -----------------------------------------------------------------------------
alter table public.deal_stray_payments
  add column if not exists payproc_refund_ids text[] not null default '{}';
alter table public.deal_stray_payments
  add column if not exists refund_round integer not null default 1;

alter table public.deal_stray_payments
  drop constraint if exists deal_stray_payments_status_known;
alter table public.deal_stray_payments
  add constraint deal_stray_payments_status_known
  check (status in ('pending', 'refund_pending', 'refunded', 'failed'));

alter table public.deal_stray_payments
  drop constraint if exists deal_stray_payments_refund_pending_has_id;
alter table public.deal_stray_payments
  add constraint deal_stray_payments_refund_pending_has_id
  check (status <> 'refund_pending' or payproc_refund_id is not null);

alter table public.deal_stray_payments
  drop constraint if exists deal_stray_payments_refund_round_range;
alter table public.deal_stray_payments
  add constraint deal_stray_payments_refund_round_range check (refund_round >= 1);

alter table public.deal_stray_payments
  drop constraint if exists deal_stray_payments_refund_ids_bounded;
alter table public.deal_stray_payments
  add constraint deal_stray_payments_refund_ids_bounded
  check (cardinality(payproc_refund_ids) <= 100);

comment on table public.deal_stray_payments is
  'Payments that succeeded for a deal that could not take them (cancelled, already paid, not its payment), one row per payment intent, refunded automatically and closed only once succeeded refunds cover the whole payment (state machines in the deal_money_edges and stray_refunds migrations)';
comment on column public.deal_stray_payments.status is
  'pending (to refund) | refund_pending (refunds cover it but some are still pending at the processor: looked at again daily) | refunded (succeeded refunds cover the whole payment) | failed (the processor refused: refund by hand)';
comment on column public.deal_stray_payments.payproc_refund_id is
  'refunded: the newest succeeded refund that closed it; refund_pending: the newest pending refund it waits for; null otherwise';
comment on column public.deal_stray_payments.payproc_refund_ids is
  'The refunds (succeeded, or pending while refund_pending) the row counted as returning the payment at its last reading; one of them failing or being cancelled reopens it';
comment on column public.deal_stray_payments.refund_round is
  '1, plus one each time a refund failed after it was made (the row reopened): the refunds of round n > 1 have the idempotency keys stray-refund:<intent>:<n> and stray-refund-rest:<intent>:<n>, and the buyer''s and admins'' notices of the round their own keys';
comment on column public.deal_stray_payments.refunded_at is
  'When succeeded refunds came to cover the payment (null again when reopened)';
comment on constraint deal_stray_payments_status_known on public.deal_stray_payments is
  'pending, refund_pending, refunded or failed';
comment on constraint deal_stray_payments_refund_pending_has_id on public.deal_stray_payments is
  'A payment waiting on a pending refund names it';
comment on constraint deal_stray_payments_refund_round_range on public.deal_stray_payments is
  'Rounds are counted from one';
comment on constraint deal_stray_payments_refund_ids_bounded on public.deal_stray_payments is
  'A payment counts at most 100 refunds (the processor lists 100 at a time)';

-- The daily run reads what is still open: to refund, or waiting on a refund.
drop index if exists public.deal_stray_payments_pending_idx;
create index if not exists deal_stray_payments_open_idx
  on public.deal_stray_payments (created_at) where status in ('pending', 'refund_pending');
comment on index public.deal_stray_payments_open_idx is
  'The stray-refunds sub-job: what is left to refund, and what waits on a pending refund';

revoke all on table public.deal_stray_payments from anon, authenticated;
grant select on table public.deal_stray_payments to authenticated;
grant all on table public.deal_stray_payments to service_role;
