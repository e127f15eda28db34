/**
 * Messages a clerk understands: where (line, column letter, the header as
 * written), what is wrong in words rather than patterns, and what to do.
 */
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import type { BatchFormatOptionsInput } from '../../src/ingest/csv/index.js';
import { errorPlace } from '../../src/ingest/rules/index.js';
import { formatInWords } from '../../src/ingest/rules/format-words.js';
import { FRIENDLY_ALIASES, HEADER, HEADER_FIELDS, codes, parseCollect, row, tempCsv } from './helpers.js';

/**
 * The codes of the file errors of `path` read on a thread whose heap holds at most `heapMb` MB, or the thread's error
 * (ERR_WORKER_OUT_OF_MEMORY). A thread runs JavaScript only: it reads with the build's copy (npm test builds first), as the reading thread does.
 */
async function fileErrorsWithinHeap(path: string, format: BatchFormatOptionsInput, heapMb: number): Promise<string[] | string> {
  const code = `
    const { workerData, parentPort } = require('node:worker_threads');
    (async () => {
      const { parseBatchFile, batchFormatSchema } = await import(new URL('ingest/csv/index.js', workerData.dist).href);
      const { validationRulesSchema } = await import(new URL('ingest/rules/index.js', workerData.dist).href);
      const options = { format: batchFormatSchema.parse(workerData.format), rules: validationRulesSchema.parse({}), onRows: async () => {} };
      const result = await parseBatchFile(workerData.path, 'batch.csv', options);
      parentPort.postMessage(result.fileErrors.map((e) => e.code));
    })();`;
  const dist = new URL('../../dist/', import.meta.url).href;
  const reader = new Worker(code, { eval: true, workerData: { dist, path, format }, resourceLimits: { maxOldGenerationSizeMb: heapMb } });
  try {
    return await new Promise<string[] | string>((resolve) => {
      reader.once('message', (codes: string[]) => resolve(codes));
      reader.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    });
  } finally {
    await reader.terminate();
  }
}

describe('messages', () => {
  it('say a simple pattern in words, and how the value differs', () => {
    expect(formatInWords('\\d{10,16}', '123456789')).toBe('must be 10 to 16 digits; it has 9');
    expect(formatInWords('\\d{8}', '1234-5678')).toBe('must be 8 digits; it has other characters (spaces, dashes or letters?)');
    expect(formatInWords('\\d{3}|\\d{8}', '14')).toBe('must be 3 or 8 digits; it has 2');
    expect(formatInWords('[A-Z0-9]{4,11}', 'BOPI PHMM')).toBe(
      'must be 4 to 11 capital letters and digits; it has other characters (spaces, dashes or letters?)',
    );
    expect(formatInWords('[A-Z]{4}0[A-Z0-9]{6}', 'X')).toBeNull();
  });

  it('name the line, the column letter and the header as written, in a file with aliases', async () => {
    const header = Object.keys(FRIENDLY_ALIASES).join(',');
    const path = await tempCsv(
      `${header}\nINV 7,100.50,PHP,USDT,Maria,Santos,PH,PASSPORT,P1,Juan,123456789,BOPIPHMM\nINV-8,"1.500,50",PHP,USDT,Maria,Santos,PH,PASSPORT,P1,Juan,1.23457E+11,BOPIPHMM\n`,
    );
    const { rows } = await parseCollect(path, {
      format: {
        columnAliases: FRIENDLY_ALIASES,
      },
    });
    const [first, second] = rows;
    expect(first?.errors.map((e) => [errorPlace(e), e.code, e.message])).toEqual([
      [
        'line 2, column A "Reference"',
        'REFERENCE_INVALID',
        'the reference "INV 7" may hold only letters, digits and . _ : -; it has a space: remove or replace them',
      ],
      [
        'line 2, column K "Account"',
        'ACCOUNT_NUMBER_INVALID',
        'a PHP account number must be 10 to 16 digits; it has 9 (*****6789); check it with the beneficiary',
      ],
    ]);
    expect(second?.errors.map((e) => [errorPlace(e), e.code])).toEqual([
      ['line 3, column B "amount"', 'AMOUNT_LOCALE_FORMAT'],
      ['line 3, column K "Account"', 'SCIENTIFIC_NOTATION'],
    ]);
    expect(second?.reason).toContain(
      'SCIENTIFIC_NOTATION [column K "Account"]: the account number "*******E+11" is in scientific notation',
    );
  });

  it('show the invisible characters of a header, and say what a second byte order mark is', async () => {
    // The file's own BOM is read as one; a second is part of the first header, which looked like a known one.
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    const path = await tempCsv(Buffer.concat([bom, bom, Buffer.from(`${HEADER}\n${row('B-1')}\n`)]));
    const { result } = await parseCollect(path);
    expect(result.fileErrors.filter((e) => e.code === 'HEADER_UNKNOWN').map((e) => [errorPlace(e), e.message])).toEqual([
      [
        'line 1, column A "\\uFEFFmerchantReferenceId"',
        '"\\uFEFFmerchantReferenceId" starts with an invisible byte order mark (U+FEFF), a second one after the file\'s own (saved as UTF-8 twice?); save the file again as CSV UTF-8, or delete the invisible character before the first header',
      ],
    ]);

    const spaced = HEADER.replace('sender.lastName', 'sender.lastName\u00a0').replace('sender.idValue', 'sender.id\u200bValue');
    const other = await parseCollect(await tempCsv(`${spaced}\n${row('B-2')}\n`));
    expect(other.result.fileErrors.filter((e) => e.code === 'HEADER_UNKNOWN').map((e) => [errorPlace(e), e.message])).toEqual([
      [
        'line 1, column F "sender.lastName\\u00A0"',
        '"sender.lastName\\u00A0" has an invisible character in it (U+00A0, a no-break space); without it, it is sender.lastName: delete it, or type the header again',
      ],
      [
        'line 1, column I "sender.id\\u200BValue"',
        '"sender.id\\u200BValue" has an invisible character in it (U+200B, a zero-width space); without it, it is sender.idValue: delete it, or type the header again',
      ],
    ]);
  });

  it('show the invisible characters of a cell as those of a header, and where they are', async () => {
    // A cell of a zero-width space looks empty and was taken as a name; one inside an account number went to the bank.
    const text = `${HEADER}\n${row('Z-1', { 'beneficiary.accountName': '\u200b', 'beneficiary.accountNumber': '12345\u200b67890' })}\n`;
    const { rows } = await parseCollect(await tempCsv(text));
    expect(rows[0]?.errors.map((e) => [errorPlace(e), e.code, e.message])).toEqual([
      [
        'line 2, column J "beneficiary.accountName"',
        'REQUIRED',
        'beneficiary.accountName is required but empty (the cell holds only invisible characters: U+200B, a zero-width space)',
      ],
      [
        'line 2, column K "beneficiary.accountNumber"',
        'INVISIBLE_CHARACTER',
        'beneficiary.accountNumber "*******7890" has an invisible character in it (U+200B, a zero-width space) at position 6, which would be sent as part of it: delete it, or type the value again',
      ],
    ]);
  });

  it('show a no-break or odd space in a refused account number, and where it is, the number masked as before', async () => {
    // "12 34" with a no-break space read as a plain gap: finance could not see why it was refused.
    const accounts = ['12\u00a034', '1234\u00a0567890\u2002'];
    const text = `${HEADER}\n${accounts.map((a, i) => row(`NB-${i}`, { 'beneficiary.accountNumber': a })).join('\n')}\n`;
    const { rows } = await parseCollect(await tempCsv(text));
    expect(rows.map((r) => r.errors.map((e) => [errorPlace(e), e.code, e.message]))).toEqual([
      [
        [
          'line 2, column K "beneficiary.accountNumber"',
          'ACCOUNT_NUMBER_INVALID',
          'a PHP account number must be 10 to 16 digits; it has other characters (spaces, dashes or letters?) ("*2\\u00A034", an invisible character in it (U+00A0, a no-break space) at position 3); check it with the beneficiary',
        ],
      ],
      [
        [
          'line 3, column K "beneficiary.accountNumber"',
          'ACCOUNT_NUMBER_INVALID',
          // The first is under the mask: where it is tells no digit.
          'a PHP account number must be 10 to 16 digits; it has other characters (spaces, dashes or letters?) ("********890\\u2002", invisible characters in it (U+00A0, a no-break space; U+2002), the first at position 5); check it with the beneficiary',
        ],
      ],
    ]);
  });

  it('show a no-break or odd space in every refused identifier that its message quotes, and where it is', async () => {
    // "DE89 3704…" or "0210 00021" with a no-break space read as plain gaps: finance could not see why they were refused.
    const nb = '\u00a0';
    const cases: { cells: Record<string, string>; column: string; code: string; message: string }[] = [
      {
        cells: {
          payoutCurrency: 'EUR',
          'beneficiary.accountNumber': `DE89${nb}3704 0044 0532 0130 00`,
          'beneficiary.bankCode': 'COBADEFFXXX',
        },
        column: 'K "beneficiary.accountNumber"',
        code: 'IBAN_INVALID',
        // Masked as before (the IBAN compacted); the space is under the mask, where it is tells no digit.
        message:
          'beneficiary.accountNumber "********3000", an invisible character in it (U+00A0, a no-break space) at position 5, is not an IBAN (2 letters, 2 check digits, then letters and digits)',
      },
      {
        cells: { payoutCurrency: 'EUR', 'beneficiary.accountNumber': 'DE89370400440532013000', 'beneficiary.bankCode': 'COBA\u2002DEFF' },
        column: 'L "beneficiary.bankCode"',
        code: 'BIC_INVALID',
        message:
          'beneficiary.bankCode "COBA\\u2002DEFF", an invisible character in it (U+2002) at position 5, is not a BIC (8 or 11 characters: bank, country, location, branch)',
      },
      {
        cells: { payoutCurrency: 'USD', 'beneficiary.accountNumber': '123456789', 'beneficiary.bankCode': `0210${nb}00021` },
        column: 'L "beneficiary.bankCode"',
        code: 'ABA_INVALID',
        message:
          'beneficiary.bankCode "0210\\u00A000021", an invisible character in it (U+00A0, a no-break space) at position 5, is not an ABA routing number (9 digits)',
      },
      {
        cells: { payoutCurrency: 'GBP', 'beneficiary.accountNumber': '12345678', 'beneficiary.bankCode': `20${nb}00${nb}00` },
        column: 'L "beneficiary.bankCode"',
        code: 'BANK_CODE_INVALID',
        message:
          'a GBP bank code must be 6 digits; it has other characters (spaces, dashes or letters?) ("20\\u00A000\\u00A000", invisible characters in it (U+00A0, a no-break space), the first at position 3)',
      },
      {
        cells: { payoutCurrency: 'INR', 'beneficiary.accountNumber': '123456789012', 'beneficiary.bankCode': `HDFC${nb}0001234` },
        column: 'L "beneficiary.bankCode"',
        code: 'BANK_CODE_INVALID',
        message:
          'the bank code "HDFC\\u00A00001234", an invisible character in it (U+00A0, a no-break space) at position 5, does not have the format of a INR bank code (accountRules: [A-Z]{4}0[A-Z0-9]{6})',
      },
      {
        cells: { merchantReferenceId: `INV${nb}7` },
        column: 'A "merchantReferenceId"',
        code: 'REFERENCE_INVALID',
        message:
          'the reference "INV\\u00A07", an invisible character in it (U+00A0, a no-break space) at position 4, may hold only letters, digits and . _ : -; it has "\\u00A0": remove or replace them',
      },
      {
        cells: { 'sender.country': 'PH\u3000' },
        column: 'G "sender.country"',
        code: 'COUNTRY_INVALID',
        message:
          'sender.country "PH\\u3000", an invisible character in it (U+3000) at position 3, is not an ISO 3166-1 alpha-2 country code',
      },
    ];
    const text = `${HEADER}\n${cases.map((c, i) => row(`NB-${i}`, c.cells)).join('\n')}\n`;
    const { rows } = await parseCollect(await tempCsv(text));
    expect(rows.map((r) => r.errors.map((e) => [errorPlace(e), e.code, e.message]))).toEqual(
      cases.map((c, i) => [[`line ${i + 2}, column ${c.column}`, c.code, c.message]]),
    );
  });

  it('refuse a cell holding the replacement character, as a file damaged upstream writes it, naming the cell', async () => {
    // "Peña" exported once in the wrong encoding: its ñ is the bytes EF BF BD, valid UTF-8 for "�".
    const header = Object.keys(FRIENDLY_ALIASES).join(',');
    const text = `${header}\nINV-9,100.50,PHP,USDT,Maria,Pe\ufffda,PH,PASSPORT,P1,Juan,1234567890,BOPIPHMM\n`;
    const { rows } = await parseCollect(await tempCsv(Buffer.from(text, 'utf8')), { format: { columnAliases: FRIENDLY_ALIASES } });
    expect(rows.map((r) => [r.state, r.request])).toEqual([['INVALID', null]]);
    expect(rows[0]?.errors.map((e) => [errorPlace(e), e.code, e.message])).toEqual([
      [
        'line 2, column F "Last Name"',
        'TEXT_DAMAGED',
        'the sender\'s last name shows the replacement character "\ufffd" at position 3, which stands for characters that could not be read: the text is damaged, so the row is not paid; correct the text and send the row again (from a workbook: save the sheet as CSV UTF-8 and send that, or save the workbook again and send it)',
      ],
    ]);
    expect(rows[0]?.reason).toContain('TEXT_DAMAGED [column F "Last Name"]: the sender\'s last name shows');
  });

  it('say a header holding the replacement character is damaged, and that a missing column may be it', async () => {
    // No field fits "Benefici�": the missing column is said to be possibly this one, not only missing.
    const header = HEADER.replace('beneficiary.accountName', 'Benefici\ufffd');
    const { result } = await parseCollect(await tempCsv(`${header}\n${row('D-1')}\n`));
    expect(result.fileErrors.map((e) => [errorPlace(e), e.code, e.message])).toEqual([
      [
        'line 1, column J "Benefici\ufffd"',
        'HEADER_UNKNOWN',
        'the header "Benefici\ufffd" shows the replacement character "\ufffd" at position 9, which stands for characters that could not be read: the header is damaged, not misspelt; correct the header and send the file again (from a workbook: save the sheet as CSV UTF-8 and send that, or save the workbook again and send it)',
      ],
      [
        'line 1',
        'HEADER_MISSING',
        'the required column beneficiary.accountName is missing from the header row; it may be column J, whose header "Benefici\ufffd" is damaged (see its error for what to do); else add it, or map your header for it in batch.format.columnAliases',
      ],
    ]);
  });

  it('say a long header of many "\ufffd" is damaged, guessing no field for it, and still guess one for a short one', async () => {
    // The guess once ran a pattern built from the header, one term per run of "\ufffd": this one overflowed it.
    const long = 'a\ufffd'.repeat(40_000);
    const header = HEADER.replace('payoutAmount', long).replace('payoutCurrency', 'payout\ufffd\ufffdrrency');
    const { result } = await parseCollect(await tempCsv(`${header}\n${row('D-2')}\n`), { format: { maxRecordBytes: 1024 * 1024 } });
    const at = (field: string): number => HEADER_FIELDS.indexOf(field);
    expect(result.fileErrors.map((e) => [e.code, e.columnIndex, e.field])).toEqual([
      ['HEADER_UNKNOWN', at('payoutCurrency'), null],
      ['HEADER_UNKNOWN', at('payoutAmount'), null],
      ['HEADER_MISSING', null, 'payoutCurrency'],
      ['HEADER_MISSING', null, 'payoutAmount'],
    ]);
    const [short, longError, currency, amount] = result.fileErrors.map((e) => e.message);
    expect(short).toContain('the header is damaged, not misspelt; it is probably the header of payoutCurrency; correct the header');
    expect(longError).toContain('40000 times, the first at position 2, which stands for characters that could not be read');
    expect(longError).toContain('the header is damaged, not misspelt; correct the header and send the file again');
    expect(currency).toMatch(/^the required column payoutCurrency is missing from the header row: it is probably column [A-Z]+, /);
    expect(amount).toMatch(/^the required column payoutAmount is missing from the header row; it may be column [A-Z]+, /);
  });

  it('say a header cell of millions of "\ufffd" runs is damaged, without taking it apart for the guess', async () => {
    const long = 'a\ufffd'.repeat(4_000_000);
    const path = await tempCsv(`${HEADER.replace('payoutAmount', long)}\n${row('D-3')}\n`);
    const format = { maxRecordBytes: 16 * 1024 * 1024 };
    const { result } = await parseCollect(path, { format });
    expect(result.fileErrors.map((e) => [e.code, e.columnIndex, e.field])).toEqual([
      ['HEADER_UNKNOWN', HEADER_FIELDS.indexOf('payoutAmount'), null],
      ['HEADER_MISSING', null, 'payoutAmount'],
    ]);
    const [damaged, missing] = result.fileErrors.map((e) => e.message);
    expect(damaged).toContain('4000000 times, the first at position 2, which stands for characters that could not be read');
    expect(damaged).toContain('the header is damaged, not misspelt; correct the header and send the file again');
    expect(missing).toMatch(/^the required column payoutAmount is missing from the header row; it may be column [A-Z]+, /);
    // The guess split the header into its runs before finding it longer than any known header, holding many times
    // the cell in memory: a heap the read fits in with room to spare, and that split does not.
    expect(await fileErrorsWithinHeap(path, format, 320)).toEqual(['HEADER_UNKNOWN', 'HEADER_MISSING']);
  }, 120_000);

  it('say a long unknown header is not a column payoutd knows, without comparing it letter by letter', async () => {
    // The hint compares an unknown header with every known one: for a header this long, only its length need be.
    // A header row of one long cell: no field is present, so it is compared with every known header.
    const path = await tempCsv(`${'amount'.repeat(2_700_000)}\n${row('D-3')}\n`);
    const started = Date.now();
    const { result } = await parseCollect(path, { format: { maxRecordBytes: 16 * 1024 * 1024 } });
    // A guard against a read held for the better part of a minute, not a speed figure: a test's timeout does not
    // stop a read that never yields, so the bound is asserted, many times what the read takes on a loaded machine.
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(result.fileErrors.map((e) => [e.code, e.columnIndex])[0]).toEqual(['HEADER_UNKNOWN', 0]);
    expect(new Set(result.fileErrors.slice(1).map((e) => e.code))).toEqual(new Set(['HEADER_MISSING']));
    expect(result.fileErrors.map((e) => e.field)).toContain('payoutAmount');
    expect(result.fileErrors[0]?.message).toMatch(/is not a column payoutd knows: rename the header/);
  });

  it('refuse long references a spreadsheet rounded to 15 significant digits, not account or id numbers', async () => {
    const header =
      'merchantReferenceId,deductionCurrency,payoutCurrency,payoutAmount,sender.firstName,sender.lastName,sender.country,sender.idType,sender.idValue,beneficiary.accountName,beneficiary.accountNumber,beneficiary.bankCode';
    const line = (ref: string, id = 'P1', account = '1234567890'): string =>
      `${ref},USDT,PHP,100.50,Maria,Santos,PH,PASSPORT,${id},Juan,${account},BOPIPHMM`;
    // `0012345678901234567` saved from a Number column is `12345678901234600`; the unrounded one passes.
    const lines = [
      line('12345678901234600'),
      line('0012345678901234567'),
      line('1000000000000000000'),
      line('123456789012345'),
      line('000000123456789012345'),
      // An account or id number may really end so, and cannot be changed as a reference can.
      line('R-1', '98765432101234500000'),
      line('R-2', 'P2', '1234567890123450'),
    ];
    const path = await tempCsv(`${header}\n${lines.join('\n')}\n`);
    const { rows } = await parseCollect(path);
    expect(rows.map((r) => codes(r.errors))).toEqual([['NUMBER_ROUNDED'], [], ['NUMBER_ROUNDED'], [], [], [], []]);
    expect(rows[0]?.errors[0]?.message).toBe(
      'the reference "12345678901234600" has more than 15 digits, all 0 after the 15th: a spreadsheet keeps 15 digits of a number and rounds the rest to 0, so it is probably a longer reference rounded; format the column as Text (or use the .xlsx file) and type the reference again; if the reference really is that, it cannot be told from a rounded one: give the row a reference that is not such a number',
    );
  });

  it('refuse references a spreadsheet turned into dates', async () => {
    const header =
      'merchantReferenceId,deductionCurrency,payoutCurrency,payoutAmount,sender.firstName,sender.lastName,sender.country,sender.idType,sender.idValue,beneficiary.accountName,beneficiary.accountNumber,beneficiary.bankCode';
    const rest = 'USDT,PHP,100.50,Maria,Santos,PH,PASSPORT,P1,Juan,1234567890,BOPIPHMM';
    const refs = ['7-Jan', 'Jan-26', '01/07/2026', '2026-01-07 00:00:00', 'JAN-7-2026', 'INV-2026-01-07'];
    const path = await tempCsv(`${header}\n${refs.map((r) => `${r},${rest}`).join('\n')}\n`);
    const { rows } = await parseCollect(path);
    expect(rows.map((r) => codes(r.errors))).toEqual([
      ['DATE_CONVERTED'],
      ['DATE_CONVERTED'],
      ['DATE_CONVERTED'],
      ['DATE_CONVERTED'],
      [],
      [],
    ]);
    expect(rows[0]?.errors[0]?.message).toBe(
      'the reference "7-Jan" looks like a date: a spreadsheet probably turned it into one; format the column as Text and type the reference again',
    );
  });
});
