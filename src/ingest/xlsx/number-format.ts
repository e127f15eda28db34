/**
 * Whether a number cell's format can show something else than the value it holds (`#,##0` shows 1500.5 as
 * 1,501): a number is paid as held, so a cell whose format hides part of it is refused, not read. This reads
 * the format only as far as that needs; it renders nothing.
 */

/** One `;` section of a format: its codes outside quotes, escapes and brackets, and what else it holds. */
interface Section {
  /** The characters that are format codes (placeholders, separators, date letters, unquoted punctuation). */
  code: string;
  /** Text shown as written: quoted, `\`-escaped, `*` fill characters, and `[$€-407]` currency symbols. */
  literals: string[];
  /** A literal point or comma right beside a digit placeholder (`0"."00`): it reads as part of the number. */
  pointBesideDigits: boolean;
  /** `[>100]`: the section applies by a condition, not by the sign of the value. */
  conditional: boolean;
  /** `[h]`, `[mm]`, `[ss]`: elapsed time. */
  elapsed: boolean;
}

const PLACEHOLDER = /[0#?]/;

function sections(numFmt: string): Section[] {
  const out: Section[] = [];
  const blank = (): Section => ({ code: '', literals: [], pointBesideDigits: false, conditional: false, elapsed: false });
  let s = blank();
  /** A literal shown as written; `next` is the format's character right after it. */
  const literal = (text: string, next: string | undefined): void => {
    s.literals.push(text);
    // `р.` after the digits or `Fr. ` before them is a currency's abbreviation; `.` touching a digit is not.
    const after = /^[.,]/.test(text) && PLACEHOLDER.test(s.code.slice(-1));
    const before = /[.,]$/.test(text) && next !== undefined && PLACEHOLDER.test(next);
    if (after || before) s.pointBesideDigits = true;
  };
  for (let i = 0; i < numFmt.length; i++) {
    const c = numFmt[i] as string;
    if (c === '"') {
      const end = numFmt.indexOf('"', i + 1);
      literal(numFmt.slice(i + 1, end < 0 ? numFmt.length : end), end < 0 ? undefined : numFmt[end + 1]);
      i = end < 0 ? numFmt.length : end;
    } else if (c === '\\' || c === '*') {
      literal(numFmt[i + 1] ?? '', numFmt[i + 2]);
      i++;
    } else if (c === '_') {
      // Padding the width of the next character: a space, nothing shown.
      i++;
    } else if (c === '[') {
      const end = numFmt.indexOf(']', i + 1);
      const inner = numFmt.slice(i + 1, end < 0 ? numFmt.length : end);
      if (/^[<>=]/.test(inner)) s.conditional = true;
      else if (/^(h+|m+|s+)$/i.test(inner)) s.elapsed = true;
      // `[$€-407]`, `[$€-x-euro2]`: the symbol shown, then after its first `-` a locale tag that is not.
      else if (inner.startsWith('$')) literal(inner.slice(1).split('-')[0] as string, end < 0 ? undefined : numFmt[end + 1]);
      i = end < 0 ? numFmt.length : end;
    } else if (c === ';') {
      out.push(s);
      s = blank();
    } else {
      s.code += c;
    }
  }
  out.push(s);
  return out;
}

/** The sections a number may be shown with: by its sign, or all of them when conditions choose. */
function sectionsFor(all: Section[], value: number): Section[] {
  // A section with `@` is for text; alone, `@` shows a number as General does.
  const numeric = all.filter((s) => !s.code.includes('@'));
  if (numeric.length === 0) return [];
  if (numeric.some((s) => s.conditional)) return numeric;
  const bySign = value < 0 ? numeric[1] : value === 0 ? numeric[2] : undefined;
  return [bySign ?? (numeric[0] as Section)];
}

/** What `section` does to a number with `decimals` decimals so that another value shows; null: it shows it whole. */
function sectionHides(section: Section, decimals: number): string | null {
  if (section.literals.some((t) => /\d/.test(t)) || /[1-9]/.test(section.code)) return 'shows digits the cell does not hold';
  if (section.pointBesideDigits) return 'shows a point or comma the cell does not hold';
  const code = section.code.replace(/general/gi, '\u0000');
  const general = code.includes('\u0000');
  if (/[eE][+-]/.test(code)) return 'shows it in scientific notation';
  if (section.elapsed || /[a-zA-Z]/.test(code)) return 'shows it as a date or time';
  if (code.includes('%')) return 'shows it as a percentage (a hundred times the value)';
  if (code.includes('/')) return 'shows it as a fraction';
  if (general) return null;
  if (!PLACEHOLDER.test(code)) return 'shows no number at all';
  // A comma after the last digit placeholder before the end or the decimal point divides by a thousand.
  if (/[0#?],+(?![0#?])/.test(code)) return 'shows it divided by a thousand';
  const point = code.indexOf('.');
  const shown = point < 0 ? 0 : (code.slice(point + 1).match(/[0#?]/g) ?? []).length;
  if (shown < decimals) return shown === 0 ? 'shows no decimals, so it is rounded' : `shows only ${shown} decimal(s), so it is rounded`;
  return null;
}

/**
 * How the number format `numFmt` (null: none, shown as General) would show the amount `exact` (its exact decimal
 * text, `value` as held) as another amount, in words; null when the cell shows the value it holds.
 */
export function amountFormatHides(numFmt: string | null, exact: string, value: number): string | null {
  if (numFmt === null || numFmt === '') return null;
  const point = exact.indexOf('.');
  const decimals = point < 0 ? 0 : exact.length - point - 1;
  const chosen = sectionsFor(sections(numFmt), value);
  for (const section of chosen) {
    const hides = sectionHides(section, decimals);
    if (hides !== null) return hides;
  }
  return null;
}

/**
 * Whether an identifier held as a number shows as its digits: General, `0`, Text (`@`), or zero-padding
 * (`000000000000`, whose padding is read as shown). Any other format may show characters the cell does not hold.
 */
export function identifierFormatShowsDigits(numFmt: string | null): boolean {
  return numFmt === null || /^(general|@|0+)$/i.test(numFmt);
}

/**
 * How the number format `numFmt` (null: General) would show a text cell as other text, in words; null when it
 * shows the text as it is. A format's fourth section is for text (`0.00;-0.00;0;@`), else a section holding `@`;
 * with neither, text is shown as typed. That section shows the text when it is `@` alone (or General): empty
 * (`;;;`) it shows nothing, and literals (`;;;"100.00"`, `"ACC "@`) show characters the cell does not hold.
 */
export function textFormatHides(numFmt: string | null): string | null {
  if (numFmt === null || numFmt === '') return null;
  const all = sections(numFmt);
  const section = all.length >= 4 ? all[3] : all.find((s) => s.code.includes('@'));
  if (section === undefined) return null;
  const code = section.code.trim();
  // Padding (`_(`) and a fill of spaces (`* `) show no character.
  const shown = section.literals.filter((t) => t.trim() !== '');
  if (/^(@|general)$/i.test(code) && shown.length === 0) return null;
  if (code.includes('@') || /general/i.test(code)) return 'shows other characters beside it';
  return shown.length === 0 ? 'shows none of it' : 'shows other text instead of it';
}

/** Whether a number shown with `numFmt` shows as a date or time (its first section does). */
export function formatShowsDate(numFmt: string | null): boolean {
  if (numFmt === null) return false;
  const first = sections(numFmt)[0] as Section;
  const code = first.code.replace(/general/gi, '').replace(/[eE][+-]/g, '');
  return first.elapsed || /[ymdhs]/i.test(code);
}

/**
 * Whether a number shown with `numFmt` shows a time only, no date (`mm:ss`, `[h]:mm:ss`): no year, day or month
 * name, and an hour or second beside any `m`, which is then minutes.
 */
export function formatShowsTimeOnly(numFmt: string | null): boolean {
  if (!formatShowsDate(numFmt)) return false;
  const code = (sections(numFmt as string)[0] as Section).code.replace(/general/gi, '').replace(/[eE][+-]/g, '');
  return !/[yd]|m{3,}/i.test(code) && /[hs]/i.test(code);
}
