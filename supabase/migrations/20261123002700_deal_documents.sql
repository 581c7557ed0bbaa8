-- =============================================================================
-- Deal documents: the private bucket `deal-documents` and its register
--
-- Every file of a deal lives in the Storage bucket `deal-documents` under
-- `<dealId>/…`: what its participants upload through signed upload URLs
-- (deal-create-upload-url) and the asset purchase agreements the server
-- generates (generate-apa-pdf). The bucket is private; storage.objects RLS
-- lets the deal's buyer and seller and admins read a deal's files, and no
-- client may write there directly (uploads go through signed URLs, which
-- carry the server's checks).
--
-- public.deal_documents registers each file (written by the service
-- connection only). An upload's row is written when its signed URL is
-- issued and moves, by confirm_deal_documents() once the object exists:
--
--   pending ──► uploaded     the object exists: real size and type recorded
--      │
--      └─────► expired      the signed URL lapsed without an upload
--                            (expire_deal_uploads(), run by apa-auto-handover)
--
-- uploaded and expired are final. Generated agreements (kind apa) are
-- written uploaded, content-addressed (`<dealId>/apa/<sha256>.pdf`) and
-- versioned per deal: a regeneration with changed content is a new version,
-- the same content is the same row.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- The bucket (a private bucket with the size limit and allowed types)
-- -----------------------------------------------------------------------------
insert into storage.buckets (id, name, public, file_size_limit, allowed_mime_types)
values (
  'deal-documents', 'deal-documents', false, 26214400,
  array['application/pdf', 'image/png', 'image/jpeg', 'application/zip',
        'application/x-zip-compressed', 'text/plain']
)
on conflict (id) do update set
  public = false,
  file_size_limit = excluded.file_size_limit,
  allowed_mime_types = excluded.allowed_mime_types;

-- -----------------------------------------------------------------------------
-- deal_documents: the register
-- -----------------------------------------------------------------------------
create table if not exists public.deal_documents (
  id uuid primary key default gen_random_uuid(),
  deal_id uuid not null references public.deals (id) on delete cascade,
  uploaded_by uuid references auth.users (id) on delete set null,
  kind text not null,
  path text not null,
  file_name text not null,
  content_type text not null,
  size_bytes bigint not null,
  status text not null default 'pending',
  sha256 text,
  version integer,
  upload_expires_at timestamptz,
  uploaded_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint deal_documents_path_key unique (path),
  constraint deal_documents_kind_known check (
    kind in ('apa', 'signed_apa', 'transfer_proof', 'financials', 'credentials', 'other')
  ),
  constraint deal_documents_status_known check (status in ('pending', 'uploaded', 'expired')),
  constraint deal_documents_path_in_deal check (
    starts_with(path, deal_id::text || '/') and length(path) <= 1024
  ),
  constraint deal_documents_file_name_short check (length(file_name) between 1 and 200),
  constraint deal_documents_size_in_limit check (size_bytes between 0 and 26214400),
  constraint deal_documents_apa_versioned check ((kind = 'apa') = (version is not null)),
  constraint deal_documents_apa_hashed check (kind <> 'apa' or sha256 is not null),
  constraint deal_documents_sha256_hex check (sha256 is null or sha256 ~ '^[0-9a-f]{64}$'),
  constraint deal_documents_uploaded_stamped check ((status = 'uploaded') = (uploaded_at is not null))
);

comment on table public.deal_documents is
  'Files of a deal in the private bucket deal-documents: participants'' uploads (pending → uploaded | expired) and generated asset purchase agreements (kind apa, versioned). Written by the service connection; read by the deal''s participants and admins';
comment on column public.deal_documents.deal_id is 'The deal';
comment on column public.deal_documents.uploaded_by is 'The participant who asked for the upload URL, or for the generated agreement';
comment on column public.deal_documents.kind is
  'apa (generated agreement), signed_apa, transfer_proof, financials, credentials, other';
comment on column public.deal_documents.path is 'Object name in the bucket deal-documents: <dealId>/<kind>/<random>-<file name>, or <dealId>/apa/<sha256>.pdf';
comment on column public.deal_documents.file_name is 'The sanitized file name shown to the participants';
comment on column public.deal_documents.content_type is 'MIME type: declared when pending, as stored once uploaded';
comment on column public.deal_documents.size_bytes is 'Size in bytes: declared when pending, as stored once uploaded';
comment on column public.deal_documents.status is 'pending (upload URL issued), uploaded (the object exists), expired (the URL lapsed unused)';
comment on column public.deal_documents.sha256 is 'Hex SHA-256 of the content (generated agreements)';
comment on column public.deal_documents.version is 'The agreement''s version within its deal (1, 2, ...); null for uploads';
comment on column public.deal_documents.upload_expires_at is 'When the signed upload URL lapses';
comment on column public.deal_documents.uploaded_at is 'When the object was stored';
comment on column public.deal_documents.created_at is 'When the row was written';
comment on column public.deal_documents.updated_at is 'When the row last changed';
comment on constraint deal_documents_path_key on public.deal_documents is 'One row per object';
comment on constraint deal_documents_kind_known on public.deal_documents is 'A document is of a known kind';
comment on constraint deal_documents_status_known on public.deal_documents is 'A document is pending, uploaded or expired';
comment on constraint deal_documents_path_in_deal on public.deal_documents is
  'A document''s object lies under its deal''s folder';
comment on constraint deal_documents_file_name_short on public.deal_documents is 'File names are 1 to 200 characters';
comment on constraint deal_documents_size_in_limit on public.deal_documents is 'At most 25 MiB, the bucket''s limit';
comment on constraint deal_documents_apa_versioned on public.deal_documents is
  'Generated agreements, and only they, carry a version';
comment on constraint deal_documents_apa_hashed on public.deal_documents is 'Generated agreements carry their hash';
comment on constraint deal_documents_sha256_hex on public.deal_documents is 'A hash is 64 lower-case hex digits';
comment on constraint deal_documents_uploaded_stamped on public.deal_documents is
  'An uploaded document has its upload time, and only an uploaded one';

create unique index if not exists deal_documents_apa_version_key
  on public.deal_documents (deal_id, version) where kind = 'apa';
comment on index public.deal_documents_apa_version_key is 'One agreement per version of a deal';
create unique index if not exists deal_documents_apa_sha256_key
  on public.deal_documents (deal_id, sha256) where kind = 'apa';
comment on index public.deal_documents_apa_sha256_key is
  'The same agreement content is one version (regenerating unchanged content adds nothing)';
create index if not exists deal_documents_deal_id_idx on public.deal_documents (deal_id, created_at);
comment on index public.deal_documents_deal_id_idx is 'A deal''s documents, oldest first';
create index if not exists deal_documents_pending_idx
  on public.deal_documents (upload_expires_at) where status = 'pending';
comment on index public.deal_documents_pending_idx is 'Uploads still to confirm or expire';
create index if not exists deal_documents_uploaded_by_idx on public.deal_documents (uploaded_by);
comment on index public.deal_documents_uploaded_by_idx is 'Documents by uploader (user deletion)';

drop trigger if exists deal_documents_set_updated_at on public.deal_documents;
create trigger deal_documents_set_updated_at
  before update on public.deal_documents
  for each row execute function public.set_updated_at();
comment on trigger deal_documents_set_updated_at on public.deal_documents is 'Stamps updated_at';

-- -----------------------------------------------------------------------------
-- Guard: the status moves only pending → uploaded | expired
-- -----------------------------------------------------------------------------
create or replace function public.guard_deal_document_status()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if tg_op = 'INSERT' then
    if new.status = 'expired' then
      raise exception 'Cannot register a document as expired' using errcode = 'PT409';
    end if;
    return new;
  end if;
  if new.status is distinct from old.status and old.status <> 'pending' then
    raise exception 'Cannot change a document that is % to %', old.status, new.status
      using errcode = 'PT409';
  end if;
  if (new.deal_id, new.path, new.kind) is distinct from (old.deal_id, old.path, old.kind) then
    raise exception 'Cannot move a document to another deal, path or kind' using errcode = 'PT409';
  end if;
  return new;
end
$$;
comment on function public.guard_deal_document_status() is
  'Trigger on deal_documents: a document starts pending or uploaded, its status moves only pending → uploaded | expired, and its deal, path and kind never change (PT409 otherwise)';
revoke execute on function public.guard_deal_document_status() from public, anon, authenticated;

drop trigger if exists deal_documents_guard_status on public.deal_documents;
create trigger deal_documents_guard_status
  before insert or update on public.deal_documents
  for each row execute function public.guard_deal_document_status();
comment on trigger deal_documents_guard_status on public.deal_documents is
  'Enforces the document state machine';

-- -----------------------------------------------------------------------------
-- Row level security: participants and admins read; nobody writes as a client
-- -----------------------------------------------------------------------------
alter table public.deal_documents enable row level security;

drop policy if exists "Deal participants can read their deals' documents and admins all"
  on public.deal_documents;
create policy "Deal participants can read their deals' documents and admins all"
  on public.deal_documents
  for select to authenticated
  using (
    exists (
      select 1 from public.deals d
      where d.id = deal_id
        and (d.buyer_id = (select auth.uid()) or d.seller_id = (select auth.uid()))
    )
    or (select public.is_admin())
  );
comment on policy "Deal participants can read their deals' documents and admins all"
  on public.deal_documents is
  'The buyer and the seller see their deal''s documents; admins see every deal''s';

revoke all on table public.deal_documents from anon, authenticated;
grant select on table public.deal_documents to authenticated;
grant all on table public.deal_documents to service_role;

-- -----------------------------------------------------------------------------
-- storage.objects: who may read a deal's files
-- -----------------------------------------------------------------------------
create or replace function public.can_read_deal_object(p_name text)
returns boolean
language plpgsql
stable
-- Definer rights: the policy asks about a deal the caller may not be able to read.
security definer
set search_path = ''
as $$
declare
  v_user uuid := auth.uid();
  v_folder text := split_part(p_name, '/', 1);
begin
  if v_user is null
     or v_folder !~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then
    return false;
  end if;
  return exists (
    select 1 from public.deals d
    where d.id = v_folder::uuid and (d.buyer_id = v_user or d.seller_id = v_user)
  ) or public.is_admin();
end
$$;
comment on function public.can_read_deal_object(text) is
  'True when the signed-in caller is the buyer or the seller of the deal whose id is the first folder of object name p_name, or an admin; false for anyone else and for names outside a deal folder';
revoke execute on function public.can_read_deal_object(text) from public, anon;
grant execute on function public.can_read_deal_object(text) to authenticated, service_role;

-- Objects of the bucket deal-documents are readable by the deal's buyer and
-- seller (the first folder is the deal id) and by admins. No policy lets a
-- client write there: uploads use signed URLs. (A SQL comment, not COMMENT ON
-- POLICY: on hosted Supabase `postgres` does not own storage.objects, and
-- supautils before 3.3.0 refuses COMMENT ON POLICY there.)
drop policy if exists "Deal participants and admins can read deal documents" on storage.objects;
create policy "Deal participants and admins can read deal documents" on storage.objects
  for select to authenticated
  using (bucket_id = 'deal-documents' and public.can_read_deal_object(name));

-- -----------------------------------------------------------------------------
-- confirm_deal_documents(): pending uploads whose object exists
-- -----------------------------------------------------------------------------
create or replace function public.confirm_deal_documents(p_deal uuid default null)
returns setof public.deal_documents
language plpgsql
-- Definer rights: reads storage.objects and writes the register, which
-- clients cannot; checks that a client is a participant (or admin) first.
security definer
set search_path = ''
as $$
begin
  if public.is_client_request() then
    if p_deal is null then
      raise exception 'Cannot confirm uploads: name the deal' using errcode = '22023';
    end if;
    if not (public.is_deal_participant(p_deal, auth.uid()) or public.is_admin()) then
      raise exception 'Cannot confirm the uploads of deal "%": only its buyer, its seller and admins may', p_deal
        using errcode = '42501';
    end if;
  end if;
  return query
    update public.deal_documents dd set
      status = 'uploaded',
      size_bytes = coalesce((o.metadata ->> 'size')::bigint, dd.size_bytes),
      content_type = coalesce(nullif(o.metadata ->> 'mimetype', ''), dd.content_type),
      uploaded_at = coalesce(o.created_at, now())
    from storage.objects o
    where o.bucket_id = 'deal-documents'
      and o.name = dd.path
      and dd.status = 'pending'
      and (p_deal is null or dd.deal_id = p_deal)
    returning dd.*;
end
$$;
comment on function public.confirm_deal_documents(uuid) is
  'Marks the pending uploads of deal p_deal (every deal when null, service connection only) whose object exists in deal-documents as uploaded, with the stored size and type; returns the rows it confirmed. For the deal''s participants, admins and the service connection (42501 for others)';
revoke execute on function public.confirm_deal_documents(uuid) from public, anon;
grant execute on function public.confirm_deal_documents(uuid) to authenticated, service_role;

-- -----------------------------------------------------------------------------
-- expire_deal_uploads(): signed URLs that lapsed unused
-- -----------------------------------------------------------------------------
create or replace function public.expire_deal_uploads(p_now timestamptz)
returns setof public.deal_documents
language sql
-- Invoker rights: the service connection's job (apa-auto-handover).
set search_path = ''
as $$
  update public.deal_documents dd set status = 'expired'
  where dd.status = 'pending'
    and dd.upload_expires_at < p_now
    and not exists (
      select 1 from storage.objects o where o.bucket_id = 'deal-documents' and o.name = dd.path
    )
  returning dd.*
$$;
comment on function public.expire_deal_uploads(timestamptz) is
  'Marks pending uploads whose signed URL lapsed before p_now without an object as expired; returns them. Run after confirm_deal_documents() by apa-auto-handover';
revoke execute on function public.expire_deal_uploads(timestamptz) from public, anon, authenticated;
grant execute on function public.expire_deal_uploads(timestamptz) to service_role;
