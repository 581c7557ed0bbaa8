/**
 * The blur policy as the frontend sees it: which listing fields can be
 * hidden, which column of `listing_view_secure` each one is, and how the UI
 * shows a hidden field. Mirrors `public.blurred_fields` (field_key,
 * column_name, when_hidden); `tests/shared/blur.test.ts` keeps them equal.
 *
 * Which fields are hidden for which plan is data (the per-plan flags of
 * `blurred_fields`); every row of `listing_view_secure` names the fields
 * hidden from the caller in its `blurred_fields` column, and their columns
 * are NULL: the true value never reaches the browser.
 *
 * @module
 */

/** Keys of the blur-able listing fields (`blurred_fields.field_key`). */
export const BLUR_FIELDS = [
  "asking_price",
  "description",
  "monthly_revenue",
  "monthly_profit",
  "monthly_traffic",
  "url",
  "seller",
] as const;
/** A blur-able listing field. */
export type BlurField = (typeof BLUR_FIELDS)[number];

/** Field key → the column of `listing_view_secure` that is NULL when the field is hidden. */
export const FIELD_TO_COLUMN_MAP = {
  asking_price: "asking_price",
  description: "description",
  monthly_revenue: "monthly_revenue",
  monthly_profit: "monthly_profit",
  monthly_traffic: "monthly_traffic",
  url: "url",
  seller: "seller_id",
} as const satisfies Record<BlurField, string>;

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

/** How the UI shows a field of one listing row. */
export type FieldPresentation = "value" | "placeholder" | "omit";

/**
 * How to show `field` of a row whose `blurred_fields` column is
 * `blurredFields`: its value, a blurred placeholder, or nothing at all.
 */
export function fieldPresentation(
  field: BlurField,
  blurredFields: readonly string[],
): FieldPresentation {
  if (!blurredFields.includes(field)) return "value";
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
  blurred_fields: BlurField[];
}
