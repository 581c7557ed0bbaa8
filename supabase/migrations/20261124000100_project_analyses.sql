-- =============================================================================
-- Project analyses: the AI analysis ledger and its 24-hour cache
--
-- analyze-project reads a public web page, asks the AI model for a
-- structured analysis and answers it. Two tables back it, both written only
-- by the service connection:
--
--   * public.project_analyses, the ledger: one row per analysis that reached
--     the model (who asked, which normalized URL, which model answered, the
--     tokens all attempts used, how long it took, and how it ended). It is
--     what model costs are counted from. Rows are final once written:
--
--       succeeded        the model's answer passed the schema (cached)
--       invalid_answer   two answers failed the schema (502 to the caller)
--       unavailable      primary and fallback were busy or unreachable (503)
--       rejected         the provider refused the request (502; our bug or
--                        our configuration, e.g. a retired model id)
--
--   * public.project_analysis_cache: the latest successful analysis of a
--     normalized URL, valid until expires_at (24 hours after the page was
--     read). A request for a cached URL costs no fetch, no model call and no
--     rate-limit hit. A newer analysis of the same URL replaces the entry;
--     prune_project_analysis_cache() deletes lapsed ones (daily housekeeping).
-- =============================================================================

-- -----------------------------------------------------------------------------
-- project_analyses: the ledger
-- -----------------------------------------------------------------------------
create table if not exists public.project_analyses (
  id uuid primary key default gen_random_uuid(),
  user_id uuid references auth.users (id) on delete set null,
  url text not null,
  final_url text,
  outcome text not null,
  model text,
  attempts smallint not null,
  input_tokens integer not null default 0,
  output_tokens integer not null default 0,
  duration_ms integer not null,
  created_at timestamptz not null default now(),
  constraint project_analyses_outcome_known check (
    outcome in ('succeeded', 'invalid_answer', 'unavailable', 'rejected')
  ),
  constraint project_analyses_url_length check (char_length(url) between 1 and 4096),
  constraint project_analyses_final_url_length check (
    final_url is null or char_length(final_url) between 1 and 4096
  ),
  constraint project_analyses_model_named check (outcome <> 'succeeded' or model is not null),
  constraint project_analyses_attempts_range check (attempts between 0 and 10),
  constraint project_analyses_tokens_nonnegative check (input_tokens >= 0 and output_tokens >= 0),
  constraint project_analyses_duration_nonnegative check (duration_ms >= 0)
);

comment on table public.project_analyses is
  'Every AI project analysis that reached the model (analyze-project): who asked, the URL, the model, tokens and duration, and the outcome (succeeded, invalid_answer, unavailable, rejected); the ledger model costs are counted from. Written by the service connection; a user reads their own rows, admins all';
comment on column public.project_analyses.user_id is
  'The signed-in user who asked (null once that user is deleted; the cost stays counted)';
comment on column public.project_analyses.url is 'The normalized URL that was asked for (the cache key)';
comment on column public.project_analyses.final_url is
  'The URL the page was read from after redirects';
comment on column public.project_analyses.outcome is
  'succeeded, invalid_answer (two answers failed the schema), unavailable (both models busy or unreachable) or rejected (the provider refused the request)';
comment on column public.project_analyses.model is
  'The model whose answer was used or, for a failure, the last model asked; null when none answered';
comment on column public.project_analyses.attempts is
  'Model answers asked for: 1, or 2 when the first was invalid (a fallback call within an attempt is not counted separately)';
comment on column public.project_analyses.input_tokens is 'Input tokens of every model answer, summed';
comment on column public.project_analyses.output_tokens is 'Output tokens of every model answer, summed';
comment on column public.project_analyses.duration_ms is
  'Milliseconds from the start of the page fetch to the end of the last model call';
comment on column public.project_analyses.created_at is 'When the analysis ended';
comment on constraint project_analyses_outcome_known on public.project_analyses is
  'The outcomes of the ledger''s header';
comment on constraint project_analyses_url_length on public.project_analyses is
  'A URL is 1 to 4096 characters';
comment on constraint project_analyses_final_url_length on public.project_analyses is
  'A final URL is 1 to 4096 characters';
comment on constraint project_analyses_model_named on public.project_analyses is
  'A successful analysis names the model that made it';
comment on constraint project_analyses_attempts_range on public.project_analyses is
  'Attempts are counted, never negative';
comment on constraint project_analyses_tokens_nonnegative on public.project_analyses is
  'Token counts are never negative';
comment on constraint project_analyses_duration_nonnegative on public.project_analyses is
  'A duration is never negative';

create index if not exists project_analyses_user_created_idx
  on public.project_analyses (user_id, created_at desc);
comment on index public.project_analyses_user_created_idx is
  'A user''s analyses, newest first (RLS reads, per-user cost reports)';
create index if not exists project_analyses_created_idx
  on public.project_analyses (created_at);
comment on index public.project_analyses_created_idx is
  'Analyses by time, for cost reports over a period';

alter table public.project_analyses enable row level security;

drop policy if exists "Users can read their own project analyses and admins all"
  on public.project_analyses;
create policy "Users can read their own project analyses and admins all"
  on public.project_analyses
  for select to authenticated
  using (user_id = (select auth.uid()) or (select public.is_admin()));
comment on policy "Users can read their own project analyses and admins all"
  on public.project_analyses is
  'A user sees the analyses they asked for; admins see every analysis (costs)';

revoke all on table public.project_analyses from public, anon, authenticated;
grant select on table public.project_analyses to authenticated;
grant all on table public.project_analyses to service_role;

-- -----------------------------------------------------------------------------
-- project_analysis_cache: the latest successful analysis of a URL
-- -----------------------------------------------------------------------------
create table if not exists public.project_analysis_cache (
  url text primary key,
  analysis jsonb not null,
  model text not null,
  analysis_id uuid references public.project_analyses (id) on delete set null,
  fetched_at timestamptz not null,
  expires_at timestamptz not null,
  constraint project_analysis_cache_url_length check (char_length(url) between 1 and 4096),
  constraint project_analysis_cache_analysis_object check (jsonb_typeof(analysis) = 'object'),
  constraint project_analysis_cache_expires_after_fetch check (expires_at > fetched_at)
);

comment on table public.project_analysis_cache is
  'The latest successful AI analysis of each normalized URL, served instead of a new analysis until expires_at (24 hours after the page was read). Service connection only';
comment on column public.project_analysis_cache.url is 'The normalized URL (the cache key)';
comment on column public.project_analysis_cache.analysis is
  'The analysis fields as the model answered them (summary … confidence), validated before they were stored and again when read';
comment on column public.project_analysis_cache.model is 'The model that made the analysis';
comment on column public.project_analysis_cache.analysis_id is
  'The ledger row of the analysis (null if that row was removed)';
comment on column public.project_analysis_cache.fetched_at is 'When the page was read';
comment on column public.project_analysis_cache.expires_at is
  'Until when the entry is served; later requests analyze the page again';
comment on constraint project_analysis_cache_url_length on public.project_analysis_cache is
  'A URL is 1 to 4096 characters';
comment on constraint project_analysis_cache_analysis_object on public.project_analysis_cache is
  'The analysis is a JSON object';
comment on constraint project_analysis_cache_expires_after_fetch on public.project_analysis_cache is
  'An entry expires after the page was read';

create index if not exists project_analysis_cache_expires_idx
  on public.project_analysis_cache (expires_at);
comment on index public.project_analysis_cache_expires_idx is
  'Lapsed entries, for prune_project_analysis_cache()';

-- No client access: RLS on without policies, and no grants to clients.
alter table public.project_analysis_cache enable row level security;
revoke all on table public.project_analysis_cache from public, anon, authenticated;
grant all on table public.project_analysis_cache to service_role;

-- -----------------------------------------------------------------------------
-- prune_project_analysis_cache(): forget lapsed entries
-- -----------------------------------------------------------------------------
create or replace function public.prune_project_analysis_cache(p_now timestamptz default now())
returns integer
language plpgsql
volatile
-- Invoker rights: only service_role and the owner may call it.
set search_path = ''
as $$
declare
  v_deleted integer;
begin
  if p_now is null then
    raise exception 'Cannot prune the analysis cache: the time is null' using errcode = '22023';
  end if;
  delete from public.project_analysis_cache c where c.expires_at <= p_now;
  get diagnostics v_deleted = row_count;
  return v_deleted;
end
$$;
comment on function public.prune_project_analysis_cache(timestamptz) is
  'Deletes the project_analysis_cache entries that lapsed at p_now (default now()) and returns how many; 22023 for a null time';
revoke execute on function public.prune_project_analysis_cache(timestamptz)
  from public, anon, authenticated;
grant execute on function public.prune_project_analysis_cache(timestamptz) to service_role;
