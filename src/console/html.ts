/**
 * HTML made safe by construction: `html` escapes every value put into a
 * template unless it is already Html (another template). Plus the small
 * formats the pages share.
 */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] as string);
}

function part(value: unknown): string {
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(part).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value as string | number));
}

export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0] as string;
  for (let i = 0; i < values.length; i++) out += part(values[i]) + (strings[i + 1] as string);
  return new Html(out);
}

/** A time as UTC text, to the second. */
export function utc(ms: number | null): string {
  return ms === null ? '' : `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}
