/**
 * HTML that is safe by construction: the `html` tagged template escapes
 * every interpolated value unless it is already {@linkcode SafeHtml} (the
 * result of another `html` template). Templates build e-mails only with it,
 * so a listing title such as `<script>` arrives as text.
 *
 * @module
 */

/** A piece of HTML built by {@linkcode html}: interpolating it does not escape it again. */
export class SafeHtml {
  /** Wraps markup that is already safe; only {@linkcode html} and {@linkcode join} create these. */
  private constructor(readonly value: string) {}

  /** @internal The one way in. */
  static of(value: string): SafeHtml {
    return new SafeHtml(value);
  }

  /** The markup. */
  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
  "`": "&#96;",
};

/** Escapes text for use in HTML content and quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (c) => ESCAPES[c]!);
}

function piece(value: unknown): string {
  if (value === null || value === undefined || value === false) return "";
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(piece).join("");
  return escapeHtml(String(value));
}

/**
 * Tagged template: `` html`<p>${title}</p>` `` escapes `title`. Arrays are
 * joined, `SafeHtml` is kept as it is, and null, undefined and false vanish.
 */
export function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0] ?? "";
  values.forEach((value, i) => {
    out += piece(value) + (strings[i + 1] ?? "");
  });
  return SafeHtml.of(out);
}

/** Joins pieces (each escaped unless already safe) with `separator`. */
export function join(pieces: readonly unknown[], separator: SafeHtml = SafeHtml.of("")): SafeHtml {
  return SafeHtml.of(pieces.map(piece).join(separator.value));
}

/** An href for a link: http(s) and mailto only; anything else becomes "#". */
export function safeHref(url: string): string {
  return /^(https?:|mailto:)/i.test(url.trim()) ? url.trim() : "#";
}

/**
 * A plain-text rendering of an HTML body, for the text part of e-mails sent
 * with HTML only (send-email without `text`): tags dropped, block ends as
 * line breaks, links as `label (url)`, entities decoded.
 */
export function htmlToText(markup: string): string {
  return markup
    .replace(/<(script|style|head)[\s\S]*?<\/\1>/gi, "")
    .replace(/<a\s[^>]*href\s*=\s*["']([^"']+)["'][^>]*>([\s\S]*?)<\/a>/gi, (_, href, label) => {
      const text = String(label).replace(/<[^>]+>/g, "").trim();
      return text && text !== href ? `${text} (${href})` : href;
    })
    .replace(/<br\s*\/?>/gi, "\n")
    .replace(/<\/(p|div|h[1-6]|li|tr|table|blockquote)>/gi, "\n")
    .replace(/<li[^>]*>/gi, "- ")
    .replace(/<[^>]+>/g, "")
    .replace(/&nbsp;/g, " ")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&#96;/g, "`")
    .replace(/&amp;/g, "&")
    .replace(/[ \t]+\n/g, "\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}
