/**
 * The header row: which column holds which field, matched trimmed and case-insensitively against the aliases,
 * then the field paths. Unknown, duplicate and missing columns are all reported at once, as file errors.
 */
import { maskAccountNumber } from '../../domain/payout.js';
import { ISO_4217_MINOR_UNITS } from '../../domain/iso4217.js';
import { FIELD_PATHS, isFieldPath, type FieldPath } from '../rules/fields.js';
import {
  columnLetter,
  columnPlace,
  describeInvisible,
  invisibleCharacters,
  quoteVisibly,
  withoutInvisible,
  type RowError,
} from '../rules/row-error.js';
import { RESEND_DAMAGED_WORKBOOK, damagedTextWords, trimSpaces } from '../rules/text.js';

export interface ResolvedHeader {
  /** Number of columns in the header. */
  width: number;
  /** Field of each column, by column index. */
  fields: FieldPath[];
  /** Column index of each field present. */
  indexOf: Partial<Record<FieldPath, number>>;
  /** Header name as written (trimmed) of each field present. */
  columns: Partial<Record<FieldPath, string>>;
}

export interface HeaderContext {
  file: string;
  line: number;
  /** alias as written -> field path (already validated as field paths). */
  aliases: Record<string, string>;
  required: ReadonlySet<FieldPath>;
}

function key(name: string): string {
  return trimSpaces(name).toLowerCase();
}

/** Headers finance sheets commonly use, for the hint of an unknown one (letters and digits only, lower case). */
const USUAL_NAMES: Record<string, FieldPath> = {
  reference: 'merchantReferenceId',
  ref: 'merchantReferenceId',
  referenceid: 'merchantReferenceId',
  invoice: 'merchantReferenceId',
  id: 'merchantReferenceId',
  amount: 'payoutAmount',
  sum: 'payoutAmount',
  currency: 'payoutCurrency',
  funding: 'deductionCurrency',
  stablecoin: 'deductionCurrency',
  firstname: 'sender.firstName',
  givenname: 'sender.firstName',
  lastname: 'sender.lastName',
  surname: 'sender.lastName',
  familyname: 'sender.lastName',
  country: 'sender.country',
  idtype: 'sender.idType',
  documenttype: 'sender.idType',
  idnumber: 'sender.idValue',
  documentnumber: 'sender.idValue',
  beneficiary: 'beneficiary.accountName',
  name: 'beneficiary.accountName',
  payee: 'beneficiary.accountName',
  accountname: 'beneficiary.accountName',
  account: 'beneficiary.accountNumber',
  accountnumber: 'beneficiary.accountNumber',
  accountno: 'beneficiary.accountNumber',
  iban: 'beneficiary.accountNumber',
  bank: 'beneficiary.bankCode',
  bankcode: 'beneficiary.bankCode',
  bic: 'beneficiary.bankCode',
  swift: 'beneficiary.bankCode',
  routing: 'beneficiary.bankCode',
};

const squash = (name: string): string => name.toLowerCase().replace(/[^a-z0-9]/g, '');

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        (previous[j] as number) + 1,
        (current[j - 1] as number) + 1,
        (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    previous = current;
  }
  return previous[b.length] as number;
}

/** The field an unknown header most likely means (its usual names, its path, the last part of its path), or null. */
export function nearestField(name: string, exclude: ReadonlySet<FieldPath> = new Set()): FieldPath | null {
  const wanted = squash(name);
  if (wanted === '') return null;
  const candidates: [string, FieldPath][] = [
    ...Object.entries(USUAL_NAMES),
    ...FIELD_PATHS.flatMap((f): [string, FieldPath][] => [
      [squash(f), f],
      [squash(f.split('.').pop() as string), f],
    ]),
  ];
  const limit = Math.max(1, Math.floor(wanted.length / 3));
  let best: { field: FieldPath; distance: number } | null = null;
  for (const [candidate, field] of candidates) {
    // The distance is at least the difference in length; a header cell can be long, and this spares computing it.
    if (exclude.has(field) || Math.abs(wanted.length - candidate.length) > limit) continue;
    const distance = editDistance(wanted, candidate);
    if (best === null || distance < best.distance) best = { field, distance };
  }
  return best !== null && best.distance <= limit ? best.field : null;
}

/** The fewest digits of a header cell read as a number of a payee's (an account or ID number) rather than a header. */
const NUMBER_LIKE_DIGITS = 6;

/**
 * An unknown header as messages show it, and so the log line, webhook and mail of the refusal: a cell that is
 * mostly a number (at least 6 digits, and digits two thirds or more of its letters and digits: an account, IBAN
 * or ID number) is more likely a cell of data than a misspelt header, so it is masked as account numbers are;
 * finance's own header text with a year or a month in it ("Invoice 2026-11") is shown as written, whole.
 */
export function shownHeader(name: string): string {
  return looksLikeNumber(name) ? maskAccountNumber(name) : name;
}

/** Whether a header cell is mostly a number: enough digits, and digits two thirds or more of its letters and digits. */
function looksLikeNumber(name: string): boolean {
  let digits = 0;
  let letters = 0;
  // The first characters judge it: a cell can be as long as a record may be.
  for (const c of name.slice(0, 160)) {
    if (c >= '0' && c <= '9') digits++;
    else if (/\p{L}/u.test(c)) letters++;
  }
  return digits >= NUMBER_LIKE_DIGITS && digits * 3 >= (digits + letters) * 2;
}

/** A cell written as a value is: holding a digit (an amount, account, ID or reference), or a currency code. */
function looksLikeValue(cell: string): boolean {
  return /[0-9]/.test(cell) || ISO_4217_MINOR_UNITS.has(cell);
}

/**
 * Whether a first line that is not a header is a row of data (a file saved without its header row): most of its
 * cells unknown as headers, and some written as values are. Its cells are then not quoted: they are a payee's.
 */
function looksLikeData(names: readonly string[], known: number): boolean {
  const written = names.filter((n) => n !== '');
  return written.length >= 2 && known * 2 < written.length && written.filter(looksLikeValue).length >= 2;
}

/** Lookup table: normalized name -> field. Aliases win over canonical names. */
export function headerLookup(aliases: Record<string, string>): Map<string, FieldPath> {
  const lookup = new Map<string, FieldPath>();
  for (const field of FIELD_PATHS) lookup.set(key(field), field);
  for (const [alias, field] of Object.entries(aliases)) {
    if (isFieldPath(field)) lookup.set(key(alias), field);
  }
  return lookup;
}

/**
 * An unknown header holding characters no one sees: which they are, and the known header it is without them. A
 * byte order mark before the first header is a second one (the file's own is read as one): saved twice as UTF-8.
 */
function invisibleHeaderMessage(name: string, index: number, invisible: string[], lookup: ReadonlyMap<string, FieldPath>): string {
  const shown = shownHeader(name);
  if (index === 0 && name.startsWith('\ufeff') && invisible.length === 1) {
    return `${quoteVisibly(shown)} starts with an invisible byte order mark (U+FEFF), a second one after the file's own (saved as UTF-8 twice?); save the file again as CSV UTF-8, or delete the invisible character before the first header`;
  }
  const which = describeInvisible(invisible);
  const known = lookup.get(key(withoutInvisible(name)));
  return `${quoteVisibly(shown)} has ${invisible.length === 1 ? 'an invisible character' : 'invisible characters'} in it (${which})${known ? `; without ${invisible.length === 1 ? 'it' : 'them'}, it is ${known}` : ''}: delete ${invisible.length === 1 ? 'it' : 'them'}, or type the header again`;
}

/**
 * Whether `known` (a lookup key) can be the damaged header `pieces` (its text between runs of "\ufffd", and each run's
 * length): the text matches in order, each run standing for 1 to as many characters as it has. Compared by code
 * points, never by a pattern built from the header, whose size the file decides; the positions kept are at most
 * those of `known`, so the cost is bounded by the known headers, however long the damaged one.
 */
function fitsDamaged(pieces: readonly (readonly string[] | number)[], known: string): boolean {
  const chars = Array.from(known);
  let at = new Set([0]);
  for (const piece of pieces) {
    const next = new Set<number>();
    for (const p of at) {
      if (typeof piece === 'number') {
        for (let n = 1; n <= piece && p + n <= chars.length; n++) next.add(p + n);
      } else if (piece.every((c, i) => chars[p + i] === c)) {
        next.add(p + piece.length);
      }
    }
    if (next.size === 0) return false;
    at = next;
  }
  return at.has(chars.length);
}

/**
 * The fewest characters a damaged header can stand for: one per code point outside the runs of "\ufffd", and one per
 * run; counted in one pass that stops once past `limit`, as a header that long fits no known one.
 */
function shortestDamaged(text: string, limit: number): number {
  let n = 0;
  let inRun = false;
  // By code point, as the pieces are (Array.from).
  for (const c of text) {
    const run = c === '\ufffd';
    if (!run || !inRun) n++;
    inRun = run;
    if (n > limit) break;
  }
  return n;
}

/**
 * The one field not yet in the header that a header holding replacement characters can be, each run of them read as
 * up to as many characters as it has (a character cut in two reads as two); null when none or several.
 */
function damagedHeaderField(name: string, lookup: ReadonlyMap<string, FieldPath>, present: ReadonlySet<FieldPath>): FieldPath | null {
  const text = key(name);
  const longest = Math.max(...[...lookup.keys()].map((k) => Array.from(k).length));
  // Decided before the header is split: the pieces of a header as long as a cell may be take many times its memory.
  if (shortestDamaged(text, longest) > longest) return null;
  const pieces = text.split(/(\ufffd+)/).map((part, i) => (i % 2 === 1 ? part.length : Array.from(part)));
  const fields = new Set([...lookup].filter(([k, field]) => !present.has(field) && fitsDamaged(pieces, k)).map(([, field]) => field));
  return fields.size === 1 ? ([...fields][0] as FieldPath) : null;
}

/** A required column not found, and the damaged header it probably is, or may be (damaged headers that fit no field). */
function missingMessage(field: FieldPath, damaged: readonly { index: number; name: string; field: FieldPath | null }[]): string {
  const missing = `the required column ${field} is missing from the header row`;
  const probable = damaged.find((d) => d.field === field);
  const damagedColumn = (d: { index: number; name: string }): string =>
    `column ${columnLetter(d.index)}, whose header ${quoteVisibly(d.name)} is damaged (see its error for what to do)`;
  if (probable !== undefined) return `${missing}: it is probably ${damagedColumn(probable)}`;
  const possible = damaged.find((d) => d.field === null);
  const add = 'add it, or map your header for it in batch.format.columnAliases';
  return possible === undefined ? `${missing}; ${add}` : `${missing}; it may be ${damagedColumn(possible)}; else ${add}`;
}

/**
 * A header holding "�": characters lost in reading (a character a workbook reader cut in two) or before, not a
 * typo, which a clerk would hunt for in vain; the field it probably is, when only one fits.
 */
function damagedHeaderMessage(name: string, words: string, field: FieldPath | null): string {
  return `the header ${quoteVisibly(name)} ${words}: the header is damaged, not misspelt${field ? `; it is probably the header of ${field}` : ''}; correct the header and send the file again (from a workbook: ${RESEND_DAMAGED_WORKBOOK})`;
}

export function resolveHeader(cells: readonly string[], ctx: HeaderContext): { header: ResolvedHeader } | { errors: RowError[] } {
  const lookup = headerLookup(ctx.aliases);
  const errors: RowError[] = [];
  const fields: FieldPath[] = [];
  const indexOf: Partial<Record<FieldPath, number>> = {};
  const columns: Partial<Record<FieldPath, string>> = {};
  const fileError = (at: number | null, column: string | null, field: string | null, code: RowError['code'], message: string): void => {
    errors.push({ file: ctx.file, line: ctx.line, column, columnIndex: at, field, code, message });
  };
  const unknown: { index: number; name: string }[] = [];
  cells.forEach((cell, index) => {
    const name = trimSpaces(cell);
    const field = lookup.get(name.toLowerCase());
    if (field === undefined) {
      unknown.push({ index, name });
      return;
    }
    const first = indexOf[field];
    if (first !== undefined) {
      fileError(
        index,
        name,
        field,
        'HEADER_DUPLICATE',
        `this header is ${field} again, already the header of ${columnPlace({ column: columns[field] ?? '', columnIndex: first })}; keep one of the two columns`,
      );
      return;
    }
    fields[index] = field;
    indexOf[field] = index;
    columns[field] = name;
  });
  if (looksLikeData(cells.map(trimSpaces), Object.keys(indexOf).length)) {
    fileError(
      null,
      null,
      null,
      'HEADER_MISSING',
      `line ${ctx.line} looks like data: the file has no header row; the first line must be the header: ${FIELD_PATHS.join(', ')}`,
    );
    return { errors };
  }
  // Blank columns after the last header (a sheet's padding) are no columns: only trailing empty headers are let go.
  const last = cells.length - 1 - [...cells].reverse().findIndex((c) => trimSpaces(c) !== '');
  const present = new Set(Object.keys(indexOf) as FieldPath[]);
  const damagedHeaders: { index: number; name: string; field: FieldPath | null }[] = [];
  for (const { index, name: written } of unknown) {
    const name = shownHeader(written);
    if (name === '') {
      fileError(
        index,
        name,
        null,
        'HEADER_UNKNOWN',
        index > last
          ? 'this column has no header but follows the last one; delete the empty columns after the last header'
          : 'this column has no header (merged header cells?); name every column, unmerging merged cells',
      );
      continue;
    }
    // Judged by the header as written; only what a message shows of it is `name`.
    const damaged = damagedTextWords(written);
    if (damaged !== null) {
      const field = damagedHeaderField(written, lookup, present);
      damagedHeaders.push({ index, name, field });
      fileError(index, name, null, 'HEADER_UNKNOWN', damagedHeaderMessage(name, damaged, field));
      continue;
    }
    const invisible = invisibleCharacters(written);
    if (invisible.length > 0) {
      fileError(index, name, null, 'HEADER_UNKNOWN', invisibleHeaderMessage(written, index, invisible, lookup));
      continue;
    }
    const near = nearestField(written, present);
    fileError(
      index,
      name,
      null,
      'HEADER_UNKNOWN',
      `${quoteVisibly(name)} is not a column payoutd knows${near ? `; did you mean ${near}? R` : ': r'}ename the header, or map it to a field in batch.format.columnAliases (docs/csv-format.md, "Column aliases")`,
    );
  }
  for (const field of FIELD_PATHS) {
    if (indexOf[field] === undefined && ctx.required.has(field)) {
      fileError(null, null, field, 'HEADER_MISSING', missingMessage(field, damagedHeaders));
    }
  }
  return errors.length > 0 ? { errors } : { header: { width: cells.length, fields, indexOf, columns } };
}
