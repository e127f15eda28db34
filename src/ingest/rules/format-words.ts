/** A configured pattern said in words for finance (`\d{10,16}`: "10 to 16 digits"), where it has a simple shape. */

interface Shape {
  /** What each character is: 'digits', 'letters and digits', ... */
  kind: string;
  test: RegExp;
  min: number;
  max: number;
}

const CLASSES: Record<string, { kind: string; test: RegExp }> = {
  '\\d': { kind: 'digits', test: /^\d*$/ },
  '[0-9]': { kind: 'digits', test: /^\d*$/ },
  '[A-Z]': { kind: 'capital letters', test: /^[A-Z]*$/ },
  '[A-Z0-9]': { kind: 'capital letters and digits', test: /^[A-Z0-9]*$/ },
  '[0-9A-Z]': { kind: 'capital letters and digits', test: /^[A-Z0-9]*$/ },
};

/** One alternative of the simple shape `<class>{n}` or `<class>{n,m}`, else null. */
function shapeOf(alternative: string): Shape | null {
  const m = /^(\\d|\[0-9\]|\[A-Z\]|\[A-Z0-9\]|\[0-9A-Z\])\{(\d+)(?:,(\d+))?\}$/.exec(alternative);
  if (!m) return null;
  const cls = CLASSES[m[1] as string];
  if (!cls) return null;
  const min = Number.parseInt(m[2] as string, 10);
  return { ...cls, min, max: m[3] === undefined ? min : Number.parseInt(m[3], 10) };
}

function lengths(shapes: Shape[]): string {
  const parts = shapes.map((s) => (s.min === s.max ? `${s.min}` : `${s.min} to ${s.max}`));
  return parts.length === 1 ? (parts[0] as string) : `${parts.slice(0, -1).join(', ')} or ${parts[parts.length - 1] as string}`;
}

/**
 * What is wrong with `value` against `pattern` in words (`must be 10 to 16 digits; it has 9`), or null when the
 * pattern has no simple shape to say.
 */
export function formatInWords(pattern: string, value: string): string | null {
  const shapes = pattern.split('|').map(shapeOf);
  if (shapes.some((s) => s === null)) return null;
  const all = shapes as Shape[];
  const kinds = [...new Set(all.map((s) => s.kind))];
  if (kinds.length !== 1) return null;
  const kind = kinds[0] as string;
  const rule = `must be ${lengths(all)} ${kind}`;
  const length = [...value].length;
  if (!all.some((s) => s.test.test(value))) return `${rule}; it has other characters (spaces, dashes or letters?)`;
  return `${rule}; it has ${length}`;
}
