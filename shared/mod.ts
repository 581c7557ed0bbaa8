/**
 * The contract between the frontend and the server: function names and who
 * may call each, request and response schemas, plans, the blur field maps
 * and rule, the listing access, conversation and letter-of-intent RPCs'
 * arguments, rows and error codes, and a typed `invoke`.
 *
 * @module
 */
export * from "./access.ts";
export * from "./analysis_schemas.ts";
export * from "./billing_schemas.ts";
export * from "./blur.ts";
export * from "./conversation_schemas.ts";
export * from "./conversations.ts";
export * from "./currencies.ts";
export * from "./deal_schemas.ts";
export * from "./document_schemas.ts";
export * from "./explore.ts";
export * from "./functions.ts";
export * from "./invoke.ts";
export * from "./job_schemas.ts";
export * from "./listing_access.ts";
export * from "./listing_access_schemas.ts";
export * from "./notice_kinds.ts";
export * from "./notification_schemas.ts";
export * from "./notifications.ts";
export * from "./offer_terms.ts";
export * from "./offer_terms_schemas.ts";
export * from "./plans.ts";
export * from "./rpc_errors.ts";
export * from "./scheduled_schemas.ts";
export * from "./schemas.ts";
export * from "./user_text.ts";
