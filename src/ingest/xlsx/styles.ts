/**
 * The number format each cell is shown with, read from the workbook's own XML: exceljs gives a cell no format at
 * all for a built-in format it has no code for (the currency and accounting formats 5-8 and 41-44 that openpyxl
 * and pandas write by id alone, the East-Asian dates 27-36 and 50-58), so a cell shown as `$ 1,501` would reach
 * the checks as a General 1500.5. Here a cell's style (`s`) is followed to its format id (styles.xml's cellXfs),
 * and the id to the workbook's own code or Excel's built-in one; an id known to neither is said to be unknown,
 * and a cell that matters is then refused, not read as General.
 */

/** A cell's number format: its code (null: General), or not known (the id, null when the style itself is missing). */
export type CellFormat = { known: true; code: string | null } | { known: false; id: number | null };

const GENERAL: CellFormat = { known: true, code: null };

// Excel's built-in formats as an en-US Excel shows them (ECMA-376 Part 1, 18.8.30, and Excel's own currency and
// accounting codes for 5-8 and 41-44, which the standard leaves to the locale).
const BUILT_IN = new Map<number, string>([
  [1, '0'],
  [2, '0.00'],
  [3, '#,##0'],
  [4, '#,##0.00'],
  [5, '"$"#,##0_);\\("$"#,##0\\)'],
  [6, '"$"#,##0_);[Red]\\("$"#,##0\\)'],
  [7, '"$"#,##0.00_);\\("$"#,##0.00\\)'],
  [8, '"$"#,##0.00_);[Red]\\("$"#,##0.00\\)'],
  [9, '0%'],
  [10, '0.00%'],
  [11, '0.00E+00'],
  [12, '# ?/?'],
  [13, '# ??/??'],
  [14, 'm/d/yyyy'],
  [15, 'd-mmm-yy'],
  [16, 'd-mmm'],
  [17, 'mmm-yy'],
  [18, 'h:mm AM/PM'],
  [19, 'h:mm:ss AM/PM'],
  [20, 'h:mm'],
  [21, 'h:mm:ss'],
  [22, 'm/d/yyyy h:mm'],
  [37, '#,##0 ;(#,##0)'],
  [38, '#,##0 ;[Red](#,##0)'],
  [39, '#,##0.00;(#,##0.00)'],
  [40, '#,##0.00;[Red](#,##0.00)'],
  [41, '_(* #,##0_);_(* \\(#,##0\\);_(* "-"_);_(@_)'],
  [42, '_("$"* #,##0_);_("$"* \\(#,##0\\);_("$"* "-"_);_(@_)'],
  [43, '_(* #,##0.00_);_(* \\(#,##0.00\\);_(* "-"??_);_(@_)'],
  [44, '_("$"* #,##0.00_);_("$"* \\(#,##0.00\\);_("$"* "-"??_);_(@_)'],
  [45, 'mm:ss'],
  [46, '[h]:mm:ss'],
  [47, 'mmss.0'],
  [48, '##0.0E+0'],
  [49, '@'],
]);
// The East-Asian built-ins are dates (or times) in every locale that has them; which calendar and order each
// shows differs by locale, and does not matter here: a date cell is refused whatever it shows.
for (const id of [27, 28, 29, 30, 31, 34, 35, 36, 50, 51, 52, 53, 54, 55, 56, 57, 58]) BUILT_IN.set(id, 'yyyy"年"m"月"d"日"');
for (const id of [32, 33]) BUILT_IN.set(id, 'h"時"mm"分"ss"秒"');

/** The first format id a workbook may define for itself (below it, ids are built in). */
const FIRST_CUSTOM = 164;

/** The cell formats of xl/styles.xml: its own codes by id, and the format id of each cell style (`s`) in order. */
export class StylesScan {
  private readonly codes = new Map<number, string>();
  private readonly xfs: number[] = [];
  private inNumFmts = false;
  private inCellXfs = false;
  /** The distinct formats, and each one's index (a key that stays the same for styles sharing a format). */
  private readonly distinct: CellFormat[] = [];
  private readonly keys = new Map<string, number>();
  private readonly keyOfXf: number[] = [];

  open(name: string, a: Record<string, string>): void {
    switch (name) {
      case 'numFmts':
        this.inNumFmts = true;
        break;
      case 'cellXfs':
        this.inCellXfs = true;
        break;
      case 'numFmt': {
        // Only the workbook's list: a conditional format's (under dxfs) is no cell's own.
        const id = formatId(a['numFmtId']);
        if (this.inNumFmts && id !== null && a['formatCode'] !== undefined) this.codes.set(id, a['formatCode']);
        break;
      }
      case 'xf':
        // No id is General (the attribute's default is 0); one that is no number is known to nobody.
        if (this.inCellXfs) this.xfs.push(a['numFmtId'] === undefined ? 0 : (formatId(a['numFmtId']) ?? -1));
        break;
    }
  }

  close(name: string): void {
    if (name === 'numFmts') this.inNumFmts = false;
    else if (name === 'cellXfs') this.inCellXfs = false;
  }

  /** The format of the cell style `xf` (a cell's `s`); style 0 when the workbook lists none is General. */
  format(xf: number): CellFormat {
    if (this.xfs.length === 0 && xf === 0) return GENERAL;
    const id = this.xfs[xf];
    if (id === undefined) return { known: false, id: null };
    if (id === 0) return GENERAL;
    // The workbook's own code first: it may give a built-in id another code, as LibreOffice and Excel read it.
    const code = this.codes.get(id) ?? (id < FIRST_CUSTOM ? BUILT_IN.get(id) : undefined);
    if (code === undefined) return { known: false, id: id < 0 ? null : id };
    return /^general$/i.test(code) ? GENERAL : { known: true, code };
  }

  /** One key for every style shown with the same format. */
  keyOf(xf: number): number {
    let key = this.keyOfXf[xf];
    if (key === undefined) {
      const format = this.format(xf);
      const text = format.known ? `k${format.code ?? ''}` : `u${format.id ?? ''}`;
      key = this.keys.get(text);
      if (key === undefined) {
        key = this.distinct.push(format) - 1;
        this.keys.set(text, key);
      }
      this.keyOfXf[xf] = key;
    }
    return key;
  }

  /** The format of a key from keyOf. */
  formatOfKey(key: number): CellFormat {
    return this.distinct[key] ?? { known: false, id: null };
  }

  /** The format of the cell at that row and column (1 = A) of a sheet whose styles are `cells`. */
  formatAt(cells: CellStyles, row: number, col: number): CellFormat {
    const key = cells.keyAt(row, col);
    // A cell not kept is a General one the reader cannot place elsewhere (CellStyles.add).
    if (key === null) return GENERAL;
    return cells.byFormat === null ? this.format(key) : this.formatOfKey(key);
  }
}

function formatId(value: string | undefined): number | null {
  return value !== undefined && /^\s*\d{1,9}\s*$/.test(value) ? Number(value) : null;
}

/**
 * Why a sheet's cells cannot be matched to their formats: a cell stored without its place, or a row stored
 * before one above it (`ref`, `line`: the first), too many runs of differently formatted cells (`columns`, 1 = A:
 * where), or two lists of formats, or the sheet twice, in the workbook.
 */
export type StylesTrouble =
  { kind: 'unplaced' | 'order'; ref: string; line: number } | { kind: 'runs'; columns: number[] } | { kind: 'formatsTwice' | 'sheetTwice' };

/**
 * The style of each cell of a sheet, as runs of rows per column: cells formatted alike one above the other (a
 * column of amounts) take one run, so a large sheet is not kept cell by cell. Keyed by format when the
 * workbook's formats are read before the sheet, else by style (`s`), resolved once they are.
 */
export class CellStyles {
  /**
   * Runs kept in all; past these the sheet's cells are not known one by one. A run is three small numbers: a
   * sheet of many rows whose formats alternate in a few columns stays well within the reader's memory.
   */
  static readonly MAX_RUNS = 2_000_000;
  /**
   * Per column (1 = A): runs as `from, to, key` triplets, rows ascending, in the first `n` places of `at` (32-bit:
   * rows and style numbers fit, and a large sheet's runs take a quarter of what plain numbers would).
   */
  private readonly columns = new Map<number, { at: Int32Array; n: number }>();
  private runs = 0;
  /** Why not every cell's style is known by its place (null: each is). */
  trouble: StylesTrouble | null = null;
  /** Some cell's style was kept by style, not by format: more runs than by format. */
  overflowed = false;

  /**
   * `byFormat`: the key of a style once formats are known, null while they are not (the key is then the style);
   * `maxRuns`: the runs kept in all.
   */
  constructor(
    readonly byFormat: ((xf: number) => number) | null,
    private readonly maxRuns: number = CellStyles.MAX_RUNS,
  ) {}

  /** Not every cell's style is known by its place. */
  get whole(): boolean {
    return this.trouble !== null;
  }

  /** `placed`: the cell's row and column are written in the sheet, as the reader numbers them; `ref`: its place. */
  add(row: number, col: number, xf: number, placed: boolean, ref = ''): void {
    if (this.trouble !== null) return;
    if (!placed) {
      // A cell the reader may place elsewhere: only General cells are no trouble there.
      if (xf !== 0) this.trouble = { kind: 'unplaced', ref, line: row };
      return;
    }
    const key = this.byFormat === null ? xf : this.byFormat(xf);
    let runs = this.columns.get(col);
    if (runs === undefined) this.columns.set(col, (runs = { at: new Int32Array(48), n: 0 }));
    const { at, n } = runs;
    if (n > 0 && row <= (at[n - 2] as number)) {
      this.trouble = { kind: 'order', ref, line: row };
      return;
    }
    if (n > 0 && at[n - 1] === key) {
      at[n - 2] = row;
      return;
    }
    if (this.runs >= this.maxRuns) {
      this.overflowed = true;
      this.trouble = { kind: 'runs', columns: this.changingColumns() };
      return;
    }
    this.runs++;
    if (n + 3 > at.length) {
      runs.at = new Int32Array(at.length * 2);
      runs.at.set(at);
    }
    runs.at.set([row, row, key], n);
    runs.n = n + 3;
  }

  /** The columns (1 = A) holding most of the runs, in order: those whose formats keep changing. */
  private changingColumns(): number[] {
    const counts = [...this.columns].map(([col, runs]) => [col, runs.n / 3] as const);
    const most = Math.max(...counts.map(([, n]) => n));
    return (
      counts
        // One run is one format all the way down: no column to change.
        .filter(([, n]) => n * 10 >= most && (n > 1 || most === 1))
        .map(([col]) => col)
        .sort((a, b) => a - b)
    );
  }

  /** The key of the cell at that row and column (1 = A): its style, or its format (see byFormat); null when not kept. */
  keyAt(row: number, col: number): number | null {
    const column = this.columns.get(col);
    if (column === undefined) return null;
    const runs = column.at;
    // The last run starting at or before the row: a cell is always in its column's run.
    let lo = 0;
    let hi = column.n / 3 - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if ((runs[mid * 3] as number) <= row) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found < 0 ? null : (runs[found * 3 + 2] as number);
  }
}
