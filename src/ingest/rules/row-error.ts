/** The one shape every ingest problem is reported in, and its stable codes. Messages are safe to log (accounts masked). */

/** Problems that reject the whole file. */
export const FILE_ERROR_CODES = [
  'FILE_EMPTY',
  'HEADER_DUPLICATE',
  'HEADER_UNKNOWN',
  'HEADER_MISSING',
  'INVALID_UTF8',
  'UNBALANCED_QUOTES',
  'MALFORMED_QUOTES',
  'RECORD_TOO_LARGE',
  'TOO_MANY_ROWS',
  'CSV_SYNTAX',
  'CONTROL_INVALID',
  'CONTROL_MISSING',
  'CONTROL_NOT_AT_END',
  'CONTROL_ROWS_MISMATCH',
  'CONTROL_TOTAL_MISMATCH',
  'FILE_INCOMPLETE',
  'FILE_UNTERMINATED',
  'INVALID_ENCODING',
  'GZIP_INVALID',
  'XLSX_UNREADABLE',
  'XLSX_SHEETS',
  'XLSX_FORMULA',
  'NUL_CHARACTER',
  'XLSX_HIDDEN',
] as const;

/** Problems that reject one row. */
export const ROW_ERROR_CODES = [
  'COLUMN_COUNT_MISMATCH',
  'REQUIRED',
  'CONTROL_CHARACTER',
  'INVISIBLE_CHARACTER',
  'TEXT_DAMAGED',
  'FORMULA_LIKE_TEXT',
  'TOO_LONG',
  'REFERENCE_INVALID',
  'DEDUCTION_CURRENCY_UNSUPPORTED',
  'CURRENCY_UNKNOWN',
  'CURRENCY_UNSUPPORTED',
  'AMOUNT_LOCALE_FORMAT',
  'AMOUNT_EXPONENT',
  'AMOUNT_NEGATIVE',
  'AMOUNT_ZERO',
  'AMOUNT_INVALID',
  'AMOUNT_TOO_MANY_DECIMALS',
  'AMOUNT_BELOW_MIN',
  'AMOUNT_ABOVE_MAX',
  'COUNTRY_INVALID',
  'ID_TYPE_UNSUPPORTED',
  'ACCOUNT_NUMBER_INVALID',
  'IBAN_INVALID',
  'IBAN_CHECKSUM',
  'BANK_CODE_INVALID',
  'BIC_INVALID',
  'ABA_INVALID',
  'ABA_CHECKSUM',
  'SCIENTIFIC_NOTATION',
  'NUMBER_ROUNDED',
  'DATE_CONVERTED',
  'AMOUNT_NOT_EXACT',
  'LEADING_ZEROS_LOST',
  'LEADING_ZEROS_UNCHECKED',
  'SPREADSHEET_ERROR_VALUE',
  'IDENTIFIER_NUMBER_FORMAT',
  'AMOUNT_FORMAT_HIDES',
  'CELL_FORMAT_HIDES',
  'PHONETIC_GUIDE',
] as const;

export type FileErrorCode = (typeof FILE_ERROR_CODES)[number];
export type RowErrorCode = (typeof ROW_ERROR_CODES)[number];

export interface RowError {
  /** The batch file's display name (or `<name>.ctl` for a sidecar problem). */
  file: string;
  /** Physical 1-based line where the record starts; null when no line applies. */
  line: number | null;
  /** Header name as written in the file (trimmed); null for file-level errors. */
  column: string | null;
  /** The column's position in the file (0 = column A), when known: messages name its letter. */
  columnIndex?: number | null;
  /** Canonical field path; null when the error is not about one field. */
  field: string | null;
  code: FileErrorCode | RowErrorCode;
  message: string;
}

/** An error about the file as a whole, or about a line of it that is not a data row: no column, no field. */
export function fileErrorOf(file: string, line: number | null, code: RowError['code'], message: string): RowError {
  return { file, line, column: null, field: null, code, message };
}

/** A value quoted for a message, cut short so one silly cell cannot flood a log. */
export function quoteValue(value: string, max = 40): string {
  if (value.length <= max) return JSON.stringify(value);
  // Cut by code points so a surrogate pair is never split.
  const cut = [...value];
  return JSON.stringify(cut.length > max ? `${cut.slice(0, max).join('')}…` : value);
}

/** Characters a clerk cannot see, or cannot tell from a space: no-break and odd-width spaces, zero-width ones, BOMs, direction marks. */
const INVISIBLE = /[\u00a0\u00ad\u180e\u2000-\u200f\u2028-\u202f\u205f-\u2064\u2066-\u206f\u3000\ufeff]/g;

/** The invisible characters in `text`, each once, in the order found. */
export function invisibleCharacters(text: string): string[] {
  return [...new Set(text.match(INVISIBLE) ?? [])];
}

/** The invisible characters of `text`: the UTF-16 index of the first, and each one met, in order; null when there is none. */
export function invisibleIn(text: string): { first: number; found: string[] } | null {
  const found = text.match(INVISIBLE);
  return found ? { first: text.search(INVISIBLE), found } : null;
}

/** `text` without its invisible characters. */
export function withoutInvisible(text: string): string {
  return text.replace(INVISIBLE, '');
}

/** A character's code point as Unicode names it: U+FEFF. */
export function codePoint(c: string): string {
  return `U+${(c.codePointAt(0) as number).toString(16).toUpperCase().padStart(4, '0')}`;
}

/** What the usual invisible characters are, for a clerk who cannot see them. */
const INVISIBLE_NAMES: Record<string, string> = {
  '\u00a0': 'a no-break space',
  '\u200b': 'a zero-width space',
  '\u200c': 'a zero-width non-joiner',
  '\u200d': 'a zero-width joiner',
  '\u200e': 'a left-to-right mark',
  '\u200f': 'a right-to-left mark',
  '\u2060': 'a word joiner',
  '\ufeff': 'a byte order mark',
};

/** Invisible characters as a message names them: `U+200B, a zero-width space; U+2061`. */
export function describeInvisible(chars: readonly string[]): string {
  return chars.map((c) => `${codePoint(c)}${INVISIBLE_NAMES[c] ? `, ${INVISIBLE_NAMES[c]}` : ''}`).join('; ');
}

/**
 * A header or value quoted for a message, its invisible characters written out (`"\uFEFFReference"`): quoted as
 * they are, a header that differs from a known one only by them reads as that one, and a value as one without them.
 */
export function quoteVisibly(text: string, max = 40): string {
  return quoteValue(text, max).replace(INVISIBLE, (c) => `\\u${codePoint(c).slice(2)}`);
}

/** Column letters as a spreadsheet shows them: 0 -> A, 25 -> Z, 26 -> AA. */
export function columnLetter(index: number): string {
  let n = index + 1;
  let out = '';
  while (n > 0) {
    const r = (n - 1) % 26;
    out = String.fromCharCode(65 + r) + out;
    n = Math.floor((n - 1) / 26);
  }
  return out;
}

/** The column of an error as a clerk finds it: `column K "Account number"` (its header as written), or null. */
export function columnPlace(e: Pick<RowError, 'column' | 'columnIndex'>): string | null {
  const letter = e.columnIndex === null || e.columnIndex === undefined ? null : columnLetter(e.columnIndex);
  if (letter !== null) return e.column ? `column ${letter} ${quoteVisibly(e.column, Infinity)}` : `column ${letter}`;
  return e.column ? quoteVisibly(e.column, Infinity) : null;
}

/** Where an error is: `line 16, column K "Account number"`, `line 16`, or null for the file as a whole. */
export function errorPlace(e: Pick<RowError, 'line' | 'column' | 'columnIndex'>): string | null {
  const column = columnPlace(e);
  const line = e.line === null ? null : `line ${e.line}`;
  return line && column ? `${line}, ${column}` : (line ?? column);
}

/**
 * Where a problem of a batch is: `line 1, column H`, led by the file it is in when that is not the batch's own
 * (`payouts.csv.ctl, line 2`): a clerk told only "line 2" opens the batch file. Null: the batch file as a whole.
 */
export function filePlace(
  e: Pick<RowError, 'line' | 'column' | 'columnIndex'> & { file?: string | null },
  batchFile: string,
): string | null {
  const place = errorPlace(e);
  if (!e.file || e.file === batchFile) return place;
  return place === null ? e.file : `${e.file}, ${place}`;
}
