/**
 * The blur policy as the frontend sees it: every listing field, the column
 * of `listing_view_secure` that holds it, which fields can be hidden, and
 * how the UI shows a hidden field. Mirrors `public.listing_fields`
 * (field_key, column_name, visibility) and `public.blurred_fields`
 * (field_key, column_name, when_hidden); `tests/shared/blur.test.ts` and
 * `tests/db/blur_policy.test.ts` keep them equal.
 *
 * Which fields are hidden for which plan is data (the per-plan flags of
 * `blurred_fields`); every row of `listing_view_secure` names the fields
 * hidden from the caller in its `blurred_fields` column, and their columns
 * are NULL: the true value never reaches the browser. `can_view_field`
 * answers for every key of {@linkcode LISTING_FIELDS} and refuses any other
 * key (SQLSTATE 22023, HTTP 400).
 *
 * A confidential listing (`access_mode = 'nda'`) adds a second layer: its
 * confidential fields are hidden from every viewer without approved access
 * (an NDA-gated request), whatever their plan. One rule decides every
 * hidden value ({@linkcode isFieldHidden}): hidden when the plan hides it
 * OR it is confidential and the viewer has no approved access; the seller
 * and admins see everything; access lifts the confidentiality layer, not
 * the plan's. Each row names the two layers apart: `blurred_fields` (the
 * plan) and `confidential_fields_hidden` (no access).
 *
 * @module
 */

/** Keys of every listing field (`listing_fields.field_key`): one per column of the view. */
export const LISTING_FIELDS = [
  "id",
  "seller",
  "title",
  "description",
  "url",
  "category",
  "asking_price",
  "currency",
  "monthly_revenue",
  "monthly_profit",
  "monthly_traffic",
  "review_status",
  "rejection_reason",
  "views_count",
  "submitted_at",
  "reviewed_at",
  "created_at",
  "updated_at",
  "is_owner",
  "blurred_fields",
  "is_sponsored",
  "sponsored_until",
  "access_mode",
  "confidential_fields_hidden",
] as const;
/** A listing field, as `can_view_field` takes it. */
export type ListingField = (typeof LISTING_FIELDS)[number];

/**
 * Who sees a field of a listing they can see (`listing_fields.visibility`):
 * everyone (`listing`), per plan by the flags of `blurred_fields`
 * (`blur_policy`; the seller and admins always), or its seller and admins
 * only (`seller_and_admins`).
 */
export type FieldVisibility = "listing" | "blur_policy" | "seller_and_admins";

/** Keys of the blur-able listing fields (`blurred_fields.field_key`). */
export const BLUR_FIELDS = [
  "asking_price",
  "description",
  "monthly_revenue",
  "monthly_profit",
  "monthly_traffic",
  "url",
  "seller",
] as const satisfies readonly ListingField[];
/** A blur-able listing field. */
export type BlurField = (typeof BLUR_FIELDS)[number];

/**
 * Field key → the column of `listing_view_secure` that holds it, for every
 * field (the column of a hidden field is NULL).
 */
export const FIELD_TO_COLUMN_MAP = {
  id: "id",
  seller: "seller_id",
  title: "title",
  description: "description",
  url: "url",
  category: "category",
  asking_price: "asking_price",
  currency: "currency",
  monthly_revenue: "monthly_revenue",
  monthly_profit: "monthly_profit",
  monthly_traffic: "monthly_traffic",
  review_status: "review_status",
  rejection_reason: "rejection_reason",
  views_count: "views_count",
  submitted_at: "submitted_at",
  reviewed_at: "reviewed_at",
  created_at: "created_at",
  updated_at: "updated_at",
  is_owner: "is_owner",
  blurred_fields: "blurred_fields",
  is_sponsored: "is_sponsored",
  sponsored_until: "sponsored_until",
  access_mode: "access_mode",
  confidential_fields_hidden: "confidential_fields_hidden",
} as const satisfies Record<ListingField, keyof ListingViewRow>;

/** Who sees each field (`listing_fields.visibility`). */
export const FIELD_VISIBILITY = {
  id: "listing",
  seller: "blur_policy",
  title: "listing",
  description: "blur_policy",
  url: "blur_policy",
  category: "listing",
  asking_price: "blur_policy",
  currency: "listing",
  monthly_revenue: "blur_policy",
  monthly_profit: "blur_policy",
  monthly_traffic: "blur_policy",
  review_status: "listing",
  rejection_reason: "seller_and_admins",
  views_count: "listing",
  submitted_at: "listing",
  reviewed_at: "listing",
  created_at: "listing",
  updated_at: "listing",
  is_owner: "listing",
  blurred_fields: "listing",
  is_sponsored: "listing",
  sponsored_until: "listing",
  access_mode: "listing",
  confidential_fields_hidden: "listing",
} as const satisfies Record<ListingField, FieldVisibility>;

/**
 * Hidden fields the UI still requests and shows as a blurred placeholder
 * (`when_hidden = 'blur'`). It receives NULL for them, never the value.
 */
export const VISUALLY_BLURRED_FIELDS_TO_FETCH = [
  "asking_price",
  "description",
  "monthly_revenue",
  "monthly_profit",
  "monthly_traffic",
] as const satisfies readonly BlurField[];

/** Hidden fields the UI leaves out entirely (`when_hidden = 'omit'`). */
export const COMPLETELY_BLOCKED_FIELDS_IF_BLURRED = [
  "url",
  "seller",
] as const satisfies readonly BlurField[];

/** `listings.access_mode`: `open` (every viewer sees what their plan shows) or `nda`. */
export const ACCESS_MODES = ["open", "nda"] as const;
/** A listing's access mode. */
export type AccessMode = (typeof ACCESS_MODES)[number];

/**
 * The default `listings.confidential_fields`: what identifies the business.
 * A seller may choose any of {@linkcode BLUR_FIELDS}; another key is refused
 * with SQLSTATE 22023 (HTTP 400).
 */
export const DEFAULT_CONFIDENTIAL_FIELDS = [
  "seller",
  "url",
] as const satisfies readonly BlurField[];

/** What the rule needs to know about one viewer of one listing. */
export interface BlurRuleInput {
  /** The fields the viewer's plan hides (`blurred_fields` flags; none for the seller and admins). */
  planHidden: readonly string[];
  /** The listing's access mode. */
  accessMode: AccessMode;
  /** The listing's confidential fields (`listings.confidential_fields`). */
  confidentialFields: readonly string[];
  /** The viewer is the listing's seller or an admin. */
  seesEverything: boolean;
  /** The viewer has approved access (an approved `listing_access_requests` row). */
  hasAccess: boolean;
}

/**
 * The confidentiality layer (`public.confidential_fields_hidden()`): the
 * confidential fields of an nda listing, for a viewer who is neither its
 * seller nor an admin and has no approved access; else none.
 */
export function confidentialFieldsHidden(input: Omit<BlurRuleInput, "planHidden">): string[] {
  return input.accessMode === "nda" && !input.seesEverything && !input.hasAccess
    ? [...input.confidentialFields]
    : [];
}

/**
 * The one rule: `field` is hidden when the viewer's plan hides it or the
 * confidentiality layer does. The seller and admins see everything.
 */
export function isFieldHidden(field: string, input: BlurRuleInput): boolean {
  if (input.seesEverything) return false;
  return input.planHidden.includes(field) || confidentialFieldsHidden(input).includes(field);
}

/** The hiding columns of a row of `listing_view_secure`. */
export type HidingColumns = Pick<ListingViewRow, "blurred_fields" | "confidential_fields_hidden">;

/** Every field hidden on `row`, by either layer, sorted and once each. */
export function hiddenFieldsOf(row: HidingColumns): BlurField[] {
  return [...new Set([...row.blurred_fields, ...row.confidential_fields_hidden])].sort();
}

/**
 * Why `field` is hidden on `row`: its plan (`plan`: upgrading shows it),
 * the listing's confidentiality (`confidential`: approved access shows it),
 * both, or null when it is shown.
 */
export function hiddenBecause(
  field: ListingField,
  row: HidingColumns,
): "plan" | "confidential" | "plan_and_confidential" | null {
  const byPlan = (row.blurred_fields as readonly string[]).includes(field);
  const byConfidentiality = (row.confidential_fields_hidden as readonly string[]).includes(field);
  if (byPlan && byConfidentiality) return "plan_and_confidential";
  if (byPlan) return "plan";
  if (byConfidentiality) return "confidential";
  return null;
}

/** How the UI shows a field of one listing row. */
export type FieldPresentation = "value" | "placeholder" | "omit";

/**
 * How to show `field` of a row whose hidden fields are `hiddenFields`
 * (`hiddenFieldsOf(row)`; the `blurred_fields` column alone leaves out the
 * confidential ones): its value, a blurred placeholder, or nothing at all.
 */
export function fieldPresentation(
  field: ListingField,
  hiddenFields: readonly string[],
): FieldPresentation {
  if (!hiddenFields.includes(field)) return "value";
  return (COMPLETELY_BLOCKED_FIELDS_IF_BLURRED as readonly string[]).includes(field)
    ? "omit"
    : "placeholder";
}

/** A row of `listing_view_secure` as PostgREST returns it (hidden columns are null). */
export interface ListingViewRow {
  id: string;
  seller_id: string | null;
  title: string;
  description: string | null;
  url: string | null;
  category: string;
  asking_price: number | null;
  currency: string;
  monthly_revenue: number | null;
  monthly_profit: number | null;
  monthly_traffic: number | null;
  review_status: "draft" | "pending_review" | "approved" | "rejected" | "archived";
  rejection_reason: string | null;
  views_count: number;
  submitted_at: string | null;
  reviewed_at: string | null;
  created_at: string;
  updated_at: string;
  is_owner: boolean;
  /** The fields the viewer's plan hides on this row (their columns are null). */
  blurred_fields: BlurField[];
  is_sponsored: boolean;
  sponsored_until: string | null;
  access_mode: AccessMode;
  /** The confidential fields hidden on this row for want of approved access (columns null). */
  confidential_fields_hidden: BlurField[];
}
