/**
 * The groups functions belong to, as the interface groups them.
 *
 * @module
 */

/** A function's group. */
export type FunctionGroup =
  | "billing"
  | "checkout"
  | "deals"
  | "notifications"
  | "schedulers"
  | "connect"
  | "documents"
  | "analysis"
  | "utilities";

/** The groups, in the interface's order. */
export const FUNCTION_GROUPS: readonly FunctionGroup[] = [
  "billing",
  "checkout",
  "deals",
  "notifications",
  "schedulers",
  "connect",
  "documents",
  "analysis",
  "utilities",
];
