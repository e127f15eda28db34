/**
 * Control totals: the number of data rows and the amount total per payout currency, declared in trailer
 * records or a sidecar `<file>.ctl` (`#CONTROL,rows,1200` / `#CONTROL,total,PHP,150000.50`; `;` works too).
 * Declared and found values are compared with Decimal; any difference is a file error naming both.
 */
import { readFile, stat } from 'node:fs/promises';
import { Decimal, decimalText, isPlainDecimal, normalizeAmount } from '../../domain/money.js';
import { amountFormatProblem, dotThousandsProblem } from '../rules/amount.js';
import type { CompiledRules } from '../rules/compiled.js';
import { fileErrorOf, quoteValue, type RowError } from '../rules/row-error.js';
import { trimSpaces } from '../rules/text.js';

export const CONTROL_MARKER = '#CONTROL';
/** Sidecar files larger than this are refused: a control file is a few lines. */
export const MAX_SIDECAR_BYTES = 1024 * 1024;
const MAX_CONTROL_LINES = 10_000;

export interface ControlTotals {
  source: 'trailer' | 'sidecar';
  /** File the block was read from (the batch's display name, or `<name>.ctl`). */
  file: string;
  /** Declared number of data rows. */
  rows: number | null;
  /** Declared total per payout currency, normal-form decimal text. */
  totals: Record<string, string>;
  /** The line of the row count and of each currency's total, for messages (absent in blocks made by hand). */
  lines?: { rows: number | null; totals: Record<string, number> };
}

/** What the data rows add up to. */
export interface FoundTotals {
  rows: number;
  totals: ReadonlyMap<string, Decimal>;
  /** Data rows whose currency or amount could not be read, so are not in `totals`. */
  unsummedRows: number;
}

/**
 * A control line written whole in its first field: a sidecar's line, or a trailer written with the other
 * separator than its file's (`#CONTROL;rows;1` in a comma file), which the file's separator leaves in one piece.
 */
const WHOLE_CONTROL_LINE = /^#CONTROL *[,;]/i;

export function isControlRecord(fields: readonly string[]): boolean {
  const first = fields[0];
  if (first === undefined) return false;
  // Cheap test first (called for every row): the marker starts with '#' after any leading spaces.
  let i = 0;
  while (i < first.length && first.charCodeAt(i) === 0x20) i++;
  if (first.charCodeAt(i) !== 0x23) return false;
  const marker = trimSpaces(first);
  return marker.toUpperCase() === CONTROL_MARKER || WHOLE_CONTROL_LINE.test(marker);
}

/** The fields of a control record: one written whole in its first field is split at each ',' and ';'. */
function controlFields(raw: readonly string[]): { fields: string[]; split: boolean } {
  const split = WHOLE_CONTROL_LINE.test(trimSpaces(raw[0] ?? ''));
  const fields = (split ? raw.flatMap((f) => f.split(/[,;]/)) : raw).map(trimSpaces);
  // Padding a spreadsheet adds after the line's own fields.
  while (fields.length > 0 && fields[fields.length - 1] === '') fields.pop();
  return { fields, split };
}

/** A control block as messages name it: `control trailer`, or `control file payouts.csv.ctl`. */
function blockName(source: ControlTotals['source'], file: string): string {
  return source === 'sidecar' ? `control file ${file}` : 'control trailer';
}

/**
 * Why a declared total is not an amount as a row may write it (`1.500` PHP, `1.234.567`, `1.500,50`), by the
 * rows' own rule: read as written, `1.500` would be compared as 1.5 and refused as a mismatch, or match 1.5.
 */
function totalProblem(amount: string, currency: string, units: number | undefined, subject: string): string | null {
  // A zero total is no mistake to refuse here: it is compared with the rows like any other.
  if (!isPlainDecimal(amount)) return amountFormatProblem(amount, subject)?.message ?? null;
  return units === undefined ? null : (dotThousandsProblem(amount, currency, units, subject)?.message ?? null);
}

/** Collects control lines into one block, reporting malformed ones. */
export class ControlBlock {
  private rows: number | null = null;
  private rowsLine: number | null = null;
  private readonly totals = new Map<string, string>();
  private readonly totalLines: Record<string, number> = {};
  private lines = 0;

  constructor(
    private readonly source: ControlTotals['source'],
    private readonly file: string,
    /** The currencies' minor units, to read a total's dot as the rows' amounts are read. */
    private readonly rules: Pick<CompiledRules, 'minorUnits'>,
  ) {}

  get seen(): boolean {
    return this.lines > 0;
  }

  /** Adds one control record (marker included); returns the error for a malformed one. */
  add(rawFields: readonly string[], line: number): RowError | null {
    this.lines++;
    const { fields, split } = controlFields(rawFields);
    const invalid = (message: string): RowError => fileErrorOf(this.file, line, 'CONTROL_INVALID', message);
    if (this.lines > MAX_CONTROL_LINES)
      return this.lines === MAX_CONTROL_LINES + 1 ? invalid(`more than ${MAX_CONTROL_LINES} control lines`) : null;
    const kind = (fields[1] ?? '').toLowerCase();
    if (kind === 'rows' && fields.length === 3) {
      const count = fields[2] ?? '';
      if (!/^\d{1,15}$/.test(count)) return invalid(`control row count ${quoteValue(count)} is not a whole number`);
      if (this.rows !== null) return invalid('control row count given twice');
      this.rows = Number.parseInt(count, 10);
      this.rowsLine = line;
      return null;
    }
    if (kind === 'total' && fields.length === 4) {
      const currency = (fields[2] ?? '').toUpperCase();
      const amount = fields[3] ?? '';
      if (!/^[A-Z]{3}$/.test(currency)) return invalid(`control total currency ${quoteValue(currency)} is not a 3-letter code`);
      const problem = totalProblem(
        amount,
        currency,
        this.rules.minorUnits(currency),
        `${blockName(this.source, this.file)} total for ${currency}`,
      );
      if (problem !== null) return invalid(problem);
      if (this.totals.has(currency)) return invalid(`control total for ${currency} given twice`);
      this.totals.set(currency, normalizeAmount(amount));
      this.totalLines[currency] = line;
      return null;
    }
    const form = `control line must be ${CONTROL_MARKER},rows,<count> or ${CONTROL_MARKER},total,<currency>,<amount>`;
    // More fields than its kind has, once split at both separators: a decimal or thousands comma split the number.
    const tooMany = split && ((kind === 'rows' && fields.length > 3) || (kind === 'total' && fields.length > 4));
    return invalid(
      tooMany
        ? `${form}; its fields are read at each "," and ";", so a number in it must have no comma: write it plain, e.g. 1500.50`
        : form,
    );
  }

  /** The block, or null when no control line was seen; a block without a row count is an error. */
  finish(endLine: number | null): { controls: ControlTotals | null; error: RowError | null } {
    if (!this.seen) return { controls: null, error: null };
    const controls: ControlTotals = {
      source: this.source,
      file: this.file,
      rows: this.rows,
      totals: Object.fromEntries(this.totals),
      lines: { rows: this.rowsLine, totals: { ...this.totalLines } },
    };
    const error: RowError | null =
      this.rows === null
        ? fileErrorOf(this.file, endLine, 'CONTROL_INVALID', `control totals have no ${CONTROL_MARKER},rows,<count> line`)
        : null;
    return { controls, error };
  }
}

/** Parses the text of a sidecar file. Blank lines are ignored; every other line must be a control line. */
export function parseSidecarText(
  text: string,
  file: string,
  rules: Pick<CompiledRules, 'minorUnits'>,
): { controls: ControlTotals | null; errors: RowError[] } {
  const block = new ControlBlock('sidecar', file, rules);
  const errors: RowError[] = [];
  const lines = text.replace(/^\ufeff/, '').split(/\r\n|\n|\r/);
  lines.forEach((raw, index) => {
    if (trimSpaces(raw) === '') return;
    const line = index + 1;
    if (!isControlRecord([raw])) {
      errors.push(fileErrorOf(file, line, 'CONTROL_INVALID', `line does not start with ${CONTROL_MARKER}`));
      return;
    }
    const error = block.add([raw], line);
    if (error) errors.push(error);
  });
  const { controls, error } = block.finish(null);
  if (error) errors.push(error);
  if (!block.seen) {
    errors.push(fileErrorOf(file, null, 'CONTROL_INVALID', 'control file holds no control lines'));
  }
  return { controls, errors };
}

/** Reads `<path>` as a sidecar if it exists; absent -> null. */
export async function readSidecar(
  path: string,
  file: string,
  rules: Pick<CompiledRules, 'minorUnits'>,
): Promise<{ controls: ControlTotals | null; errors: RowError[] } | null> {
  let size: number;
  try {
    size = (await stat(path)).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  if (size > MAX_SIDECAR_BYTES) {
    return {
      controls: null,
      errors: [fileErrorOf(file, null, 'CONTROL_INVALID', `control file is ${size} bytes; at most ${MAX_SIDECAR_BYTES}`)],
    };
  }
  const bytes = await readFile(path);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    // A control file is ASCII in practice; anything else is not ours to guess.
    return {
      controls: null,
      errors: [fileErrorOf(file, null, 'CONTROL_INVALID', 'control file is not valid UTF-8')],
    };
  }
  return parseSidecarText(text, file, rules);
}

/** Compares a declared block with what the data rows hold. */
export function compareControls(controls: ControlTotals, found: FoundTotals): RowError[] {
  const errors: RowError[] = [];
  const where = blockName(controls.source, controls.file);
  const at = (line: number | null | undefined): string => (line === null || line === undefined ? '' : ` (line ${line})`);
  const mismatch = (code: 'CONTROL_ROWS_MISMATCH' | 'CONTROL_TOTAL_MISMATCH', line: number | null, message: string): void => {
    errors.push(fileErrorOf(controls.file, line, code, message));
  };
  const rowsLine = controls.lines?.rows ?? null;
  if (controls.rows !== null && controls.rows !== found.rows) {
    mismatch(
      'CONTROL_ROWS_MISMATCH',
      rowsLine,
      `${where}${at(rowsLine)} expects ${controls.rows} data rows, found ${found.rows}; correct the count, or check that no row is missing`,
    );
  }
  const declared = Object.keys(controls.totals);
  if (declared.length === 0) return errors;
  const currencies = [...new Set([...declared, ...found.totals.keys()])].sort();
  const unsummed =
    found.unsummedRows > 0
      ? ` (${found.unsummedRows} row${found.unsummedRows === 1 ? '' : 's'} with an unreadable currency or amount not counted)`
      : '';
  for (const currency of currencies) {
    const expected = controls.totals[currency];
    const actual = found.totals.get(currency) ?? new Decimal(0);
    const line = controls.lines?.totals[currency] ?? null;
    if (expected === undefined) {
      mismatch(
        'CONTROL_TOTAL_MISMATCH',
        rowsLine,
        `${where} has no total for ${currency}, found ${decimalText(actual)} ${currency}${unsummed}; add a line ${CONTROL_MARKER},total,${currency},<amount>`,
      );
    } else if (!actual.equals(expected)) {
      mismatch(
        'CONTROL_TOTAL_MISMATCH',
        line,
        `${where}${at(line)} expects ${currency} total ${expected}, found ${decimalText(actual)}${unsummed}; correct the total, or check the amounts`,
      );
    }
  }
  return errors;
}
