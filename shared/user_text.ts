/**
 * Free text a user writes — a message, a note to a seller, a reason — as the
 * database takes it (`public.clean_user_text()`): line breaks made `\n`,
 * trimmed of surrounding spaces, tabs and line breaks, no control character
 * but tab and line feed, and a length limit counted in characters after
 * cleaning. The database refuses what breaks a rule with SQLSTATE 22023
 * (HTTP 400); validating with {@linkcode userTextProblem} (or the zod
 * `UserText` of `schemas.ts`) first gives the same verdict in the form
 * (`tests/db/user_text.test.ts` holds the two equal).
 *
 * @module
 */

/** Control characters the database refuses: C0 but tab and line feed, DEL, C1. */
// deno-lint-ignore no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

/** `text` as the database stores it: CRLF and CR made LF, then trimmed of spaces, tabs and LFs. */
export function cleanUserText(text: string): string {
  return text.replace(/\r\n?/g, "\n").replace(/^[ \t\n]+|[ \t\n]+$/g, "");
}

/** Why the database would refuse `text` (after cleaning), or null when it takes it. */
export function userTextProblem(
  text: string,
  rule: { max: number; required: boolean },
): "empty" | "control_character" | "too_long" | null {
  const cleaned = cleanUserText(text);
  if (cleaned === "") return rule.required ? "empty" : null;
  if (CONTROL.test(cleaned)) return "control_character";
  // Characters, as char_length() counts them: code points, not UTF-16 units.
  if ([...cleaned].length > rule.max) return "too_long";
  return null;
}

/** What each problem of {@linkcode userTextProblem} says to the user. */
export const USER_TEXT_PROBLEMS = {
  empty: "It is empty",
  control_character: "It contains a control character (only tabs and line breaks are allowed)",
  too_long: "It is too long",
} as const;
