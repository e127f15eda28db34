/**
 * Hostile and broken batch files, generated (the large ones could not sit
 * in the repository, and generating the small ones keeps each case's
 * defect next to its name). Every file uses references of its own, so no
 * file can be refused as a duplicate of another.
 */
import { CSV_HEADER, makeRows, toCsv, type BatchRow } from '../e2e/batch-files.js';

export interface HostileFile {
  name: string;
  content: Buffer;
  /** Batch state it must end in. */
  state: 'REJECTED' | 'COMPLETE';
  /** rejectCode of the batch (REJECTED only). */
  code?: string;
  /** What the reason (status and ack) must say. */
  reason?: RegExp;
  /** Per reference, what its ack row must say (row-level errors). */
  rowReasons?: Record<string, RegExp>;
  /** References paid when the file completes. */
  paid: string[];
}

const header = CSV_HEADER.join(',');
const csv = (rows: BatchRow[]): Buffer => Buffer.from(toCsv(rows), 'utf8');
const refs = (rows: BatchRow[]): string[] => rows.map((r) => r.merchantReferenceId);
const lines = (...parts: string[]): Buffer => Buffer.from(`${parts.join('\n')}\n`, 'utf8');

/** The CSV line of one row, as toCsv writes it. */
function rowLine(row: BatchRow): string {
  return toCsv([row]).split('\n')[1] as string;
}

function valid(name: string, prefix: string, n = 3): HostileFile {
  const rows = makeRows(prefix, n);
  return { name, content: csv(rows), state: 'COMPLETE', paid: refs(rows) };
}

/** Files refused as a whole, or with row errors, each for one specific reason; plus valid files with awkward but legal form. */
export function hostileFiles(): HostileFile[] {
  const files: HostileFile[] = [];

  files.push({ name: 'h-empty.csv', content: Buffer.alloc(0), state: 'REJECTED', code: 'EMPTY', reason: /the file is empty/, paid: [] });
  files.push({
    name: 'h-header-only.csv',
    content: lines(header),
    state: 'REJECTED',
    code: 'NO_ROWS',
    reason: /header but no payout rows/,
    paid: [],
  });

  const noHeader = makeRows('H-NOHDR', 2);
  files.push({
    name: 'h-no-header.csv',
    content: lines(...noHeader.map(rowLine)),
    state: 'REJECTED',
    code: 'INVALID_FILE',
    // Said without quoting the first line: it is a payee's data.
    reason: /^HEADER_MISSING \[line 1\]: line 1 looks like data: the file has no header row/,
    paid: [],
  });

  const unknown = makeRows('H-UNKNOWN', 2);
  files.push({
    name: 'h-unknown-column.csv',
    content: lines(`${header},favouriteColour`, ...unknown.map((r) => `${rowLine(r)},blue`)),
    state: 'REJECTED',
    code: 'INVALID_FILE',
    reason: /favouriteColour/,
    paid: [],
  });

  const missing = makeRows('H-MISSING', 2);
  files.push({
    name: 'h-missing-column.csv',
    content: lines(CSV_HEADER.slice(0, -1).join(','), ...missing.map((r) => rowLine(r).split(',').slice(0, -1).join(','))),
    state: 'REJECTED',
    code: 'INVALID_FILE',
    reason: /beneficiary\.bankCode/,
    paid: [],
  });

  // Legal forms: tabs between the fields (Excel's "Text (Tab delimited)"), the delimiter found on the header line...
  const tabbed = makeRows('H-TAB', 2).map((r) => ({ ...r, accountName: r.accountName.replace(',', '') }));
  files.push({
    name: 'h-tab-delimited.csv',
    content: lines(CSV_HEADER.join('\t'), ...tabbed.map((r) => rowLine(r).replaceAll('"', '').split(',').join('\t'))),
    state: 'COMPLETE',
    paid: refs(tabbed),
  });

  // ...and BOM + CRLF are paid like any other file.
  const bomRows = makeRows('H-BOMCRLF', 3);
  files.push({
    name: 'h-bom-crlf.csv',
    content: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(toCsv(bomRows).replaceAll('\n', '\r\n'), 'utf8')]),
    state: 'COMPLETE',
    paid: refs(bomRows),
  });

  // A line break inside a quoted name is valid CSV but not a valid beneficiary name: the row is refused, and so the file.
  const nl = makeRows('H-QNL', 3);
  const nlBad = nl.map((r, i) => (i === 1 ? { ...r, accountName: 'Juan\nDela Cruz' } : r));
  files.push({
    name: 'h-quoted-newline.csv',
    content: csv(nlBad),
    state: 'REJECTED',
    code: 'INVALID_ROWS',
    reason: /1 invalid row/,
    rowReasons: { 'H-QNL-0002': /CONTROL_CHARACTER/ },
    paid: [],
  });

  const quotes = makeRows('H-QUOTE', 3);
  files.push({
    name: 'h-unbalanced-quotes.csv',
    content: lines(
      header,
      rowLine(quotes[0] as BatchRow),
      rowLine(quotes[1] as BatchRow).replace('Budi Santoso', '"Budi Santoso'),
      rowLine(quotes[2] as BatchRow),
    ),
    state: 'REJECTED',
    code: 'INVALID_FILE',
    reason: /quote that is never closed/,
    paid: [],
  });

  const utf = makeRows('H-UTF8', 2);
  files.push({
    name: 'h-invalid-utf8.csv',
    content: Buffer.concat([
      Buffer.from(`${header}\n${rowLine(utf[0] as BatchRow)}\n`, 'utf8'),
      Buffer.from(rowLine(utf[1] as BatchRow).replace('Budi Santoso', 'Budi S'), 'utf8'),
      Buffer.from([0xc3, 0x28, 0x0a]),
    ]),
    state: 'REJECTED',
    code: 'INVALID_FILE',
    reason: /UTF-8/,
    paid: [],
  });

  const huge = makeRows('H-HUGE', 1)[0] as BatchRow;
  files.push({
    name: 'h-10mb-field.csv',
    content: Buffer.from(`${header}\n${rowLine({ ...huge, accountName: 'A'.repeat(10 * 1024 * 1024) })}\n`, 'utf8'),
    state: 'REJECTED',
    code: 'INVALID_FILE',
    reason: /larger than the maximum record size/,
    paid: [],
  });

  const counts = makeRows('H-COUNT', 3);
  files.push({
    name: 'h-field-count.csv',
    content: lines(
      header,
      `${rowLine(counts[0] as BatchRow)},extra`,
      // A short row before the last is a row error; a short last row would be a cut upload (the file refused whole).
      rowLine(counts[1] as BatchRow)
        .split(',')
        .slice(0, -1)
        .join(','),
      rowLine(counts[2] as BatchRow),
    ),
    state: 'REJECTED',
    code: 'INVALID_ROWS',
    reason: /2 invalid row/,
    rowReasons: { 'H-COUNT-0001': /13 fields but the header has 12/, 'H-COUNT-0002': /11 fields but the header has 12/ },
    paid: [],
  });

  // Amounts, one defect per row (row 1 is a valid PHP row for contrast).
  const amounts = makeRows('H-AMOUNT', 6).map((r) => ({
    ...r,
    payoutCurrency: 'PHP',
    country: 'PH',
    bankCode: 'BOPIPHMM',
    accountNumber: '1234567890',
  }));
  const bad = ['"1500,50"', '1e3', '-5', '0', '1500.125'];
  files.push({
    name: 'h-amounts.csv',
    content: lines(
      header,
      ...amounts.map((r, i) =>
        i === 0 ? rowLine(r) : rowLine({ ...r, payoutAmount: '__AMT__' }).replace('__AMT__', bad[i - 1] as string),
      ),
    ),
    state: 'REJECTED',
    code: 'INVALID_ROWS',
    reason: /5 invalid row/,
    rowReasons: {
      'H-AMOUNT-0002': /AMOUNT_LOCALE_FORMAT/,
      'H-AMOUNT-0003': /AMOUNT_EXPONENT/,
      'H-AMOUNT-0004': /AMOUNT_NEGATIVE/,
      'H-AMOUNT-0005': /AMOUNT_ZERO/,
      'H-AMOUNT-0006': /AMOUNT_TOO_MANY_DECIMALS/,
    },
    paid: [],
  });

  const junk = Buffer.alloc(4096);
  for (let i = 0; i < junk.length; i++) junk[i] = (i * 197 + 89) % 256;
  files.push({ name: 'h-binary-junk.csv', content: junk, state: 'REJECTED', code: 'NOT_CSV', reason: /binary data/, paid: [] });

  // Awkward names, legal content: paid, and their outbox files stay inside the outbox.
  files.push(valid('h pay run 1.csv', 'H-SPACES'));
  files.push(valid('h-paiement-été-ü-日本.csv', 'H-UNICODE'));
  files.push(valid('--h-leading-dashes.csv', 'H-DASHES'));
  files.push(valid('h..%2F..%2Fetc%2Fpasswd.csv', 'H-DOTS-URL'));
  files.push(valid('h-..\\..\\windows.csv', 'H-DOTS-BACKSLASH'));
  files.push(valid('..h-leading-two-dots.csv', 'H-TWO-DOTS'));
  files.push(valid('h-line\nbreak\u0007bell.csv', 'H-CONTROL'));
  return files;
}
