/** Text hygiene for cell values: trimming, control characters, formula-like text, lengths as people count them. */
import { FORMULA_ESCAPE, formulaTrigger } from '../../domain/formula-text.js';
import { withoutInvisible } from './row-error.js';

/** Removes leading and trailing ASCII spaces only; tabs, CR and LF stay for the control-character rule to see. */
export function trimSpaces(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && value.charCodeAt(start) === 0x20) start++;
  while (end > start && value.charCodeAt(end - 1) === 0x20) end--;
  return value.slice(start, end);
}

/**
 * Whether a value of no control characters holds only whitespace as String.prototype.trim knows it (no-break,
 * em, ideographic spaces, BOM), blank to the payout API, which trims so before it requires a value, or characters
 * no one sees (zero-width spaces, word joiners): the API takes a name of those as given, though nothing is written.
 */
export function isBlank(value: string): boolean {
  // Printable ASCII first is the usual value, and never blank: one character code decides.
  const first = value.charCodeAt(0);
  return (first < 0x21 || first > 0x7e) && withoutInvisible(value).trim() === '';
}

/**
 * Characters of no width, unseen even between letters: soft hyphens, zero-width spaces and joiners, direction marks,
 * embeddings and isolates, word joiners, invisible operators, BOMs. A no-break or narrow space is a gap one sees.
 */
const ZERO_WIDTH = /[\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g;

/** The zero-width characters in `value`: where the first is, and each one found, in order; null when there is none. */
export function zeroWidthIn(value: string): { first: number; found: string[] } | null {
  // Most cells are ASCII, where there is none: a scan of codes is cheaper than a search.
  let i = 0;
  while (i < value.length && value.charCodeAt(i) < 0xad) i++;
  if (i === value.length) return null;
  const matches = [...value.matchAll(ZERO_WIDTH)];
  const first = matches[0];
  return first ? { first: first.index, found: matches.map((m) => m[0]) } : null;
}

/** The value upper-cased as toUpperCase does it; the value itself when that changes nothing (cheaper than the call). */
export function upperCased(value: string): string {
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    // ASCII apart from a-z is its own upper case; anything else is left to the full mapping.
    if ((code >= 0x61 && code <= 0x7a) || code > 0x7f) return value.toUpperCase();
  }
  return value;
}

/** C0 controls, DEL and C1 controls. */
function isControl(code: number): boolean {
  return code <= 0x1f || (code >= 0x7f && code <= 0x9f);
}

const CONTROL_NAMES: Record<number, string> = { 0x00: 'NUL', 0x09: 'tab', 0x0a: 'line feed', 0x0d: 'carriage return', 0x7f: 'DEL' };

/** The first control character: its 1-based position in code points and a printable description. */
export function firstControlCharacter(value: string): { position: number; description: string } | null {
  // Controls are all in the BMP and never surrogates, so a UTF-16 scan finds them.
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (isControl(code)) {
      const hex = `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
      const name = CONTROL_NAMES[code];
      return { position: positionOf(value, i), description: name ? `${hex} ${name}` : hex };
    }
  }
  return null;
}

/** What makes a value formula-like: its leading trigger, or `'` and a trigger (escaped as the outbox writes it); else null. */
export function formulaLikeLead(value: string): string | null {
  const trigger = formulaTrigger(value);
  if (trigger !== null) return trigger;
  if (!value.startsWith(FORMULA_ESCAPE)) return null;
  const escaped = formulaTrigger(value.slice(FORMULA_ESCAPE.length));
  return escaped === null ? null : FORMULA_ESCAPE + escaped;
}

/** The 1-based position, as a clerk counts characters (in code points), of the character at UTF-16 `index`. */
export function positionOf(value: string, index: number): number {
  return codePointLength(value.slice(0, index)) + 1;
}

/**
 * The replacement character, what a decoder writes for bytes it could not read as text: a cell holding it lost
 * characters before payoutd read it (a file saved in one encoding and read in another, or a character cut in two).
 */
export const REPLACEMENT_CHARACTER = '\ufffd';

/** The index of the first replacement character in `value` and how many it holds; null when none. */
export function replacementCharacters(value: string): { at: number; count: number } | null {
  const at = value.indexOf(REPLACEMENT_CHARACTER);
  if (at < 0) return null;
  let count = 1;
  for (let i = value.indexOf(REPLACEMENT_CHARACTER, at + 1); i >= 0; i = value.indexOf(REPLACEMENT_CHARACTER, i + 1)) count++;
  return { at, count };
}

/**
 * The replacement characters of `value` as every message about damaged text words them (`shows the replacement
 * character "�" at position 3, which stands for characters that could not be read`); null when it has none.
 */
export function damagedTextWords(value: string): string | null {
  const found = replacementCharacters(value);
  if (found === null) return null;
  const position = positionOf(value, found.at);
  const where = found.count === 1 ? `at position ${position}` : `${found.count} times, the first at position ${position}`;
  return `shows the replacement character "${REPLACEMENT_CHARACTER}" ${where}, which stands for characters that could not be read`;
}

/** What to do with text a workbook reader damaged: a CSV is read whole, and a workbook saved again mostly breaks elsewhere. */
export const RESEND_DAMAGED_WORKBOOK = 'save the sheet as CSV UTF-8 and send that, or save the workbook again and send it';

/** Length in code points, so an emoji or an accented letter counts once. */
export function codePointLength(value: string): number {
  let n = 0;
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    // A high surrogate followed by a low one is one code point.
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < value.length) {
      const next = value.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}
