-- =============================================================================
-- E-mail types are labels
--
-- send-email's emailType is a label the caller chooses (the interface: "string,
-- label"), so camelCase, capitals and spaces are as valid as the snake_case
-- names the server's own templates use. email_logs.email_type took only
-- lower-case letters, digits and _ . : -, which refused such labels. It now
-- takes any printable text of 1 to 100 characters without surrounding spaces
-- (send-email trims): no control characters (C0, DEL, C1) and no line or
-- paragraph separators, which would break log lines and the mail viewer.
-- shared/notification_schemas.ts (EmailTypeLabel) is the same rule in zod.
-- =============================================================================

alter table public.email_logs
  drop constraint if exists email_logs_email_type_format;
alter table public.email_logs
  add constraint email_logs_email_type_format check (
    char_length(email_type) between 1 and 100
    and email_type = btrim(email_type)
    and email_type !~ '[\x01-\x1f\x7f-\x9f\u2028\u2029]'
  );
comment on constraint email_logs_email_type_format on public.email_logs is
  'An e-mail type is a label: 1 to 100 printable characters, no surrounding spaces, no control characters or line separators (shared/notification_schemas.ts EmailTypeLabel)';
