// Server-rendered HTML with one rule: every interpolated value is escaped unless it is already Html
// (built by this tag). Names, SKUs and errors come from the service and may contain markup.
export class Html {
  readonly value: string;
  constructor(value: string) {
    this.value = value;
  }
  toString(): string {
    return this.value;
  }
}

const entities: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' };

export function escapeHtml(value: unknown): string {
  return String(value ?? '').replace(/[&<>"'`]/g, (c) => entities[c]!);
}

function render(value: unknown): string {
  if (value instanceof Html) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Date) return escapeHtml(value.toISOString());
  return escapeHtml(value);
}

/** Tagged template: `html\`<td>${name}</td>\`` escapes name; nested html values and arrays of them pass through. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1]!;
  return new Html(out);
}

/** Markup we produced ourselves (e.g. an SVG built from numbers). Never pass data from outside through this. */
export const trusted = (markup: string) => new Html(markup);

/** JSON for a <script> block: `<`, `>`, `&` and line separators escaped so data cannot close the tag. */
export function scriptJson(value: unknown): Html {
  return new Html(JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`));
}
