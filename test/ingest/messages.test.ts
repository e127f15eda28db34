/**
 * Messages a clerk understands: where (line, column letter, the header as
 * written), what is wrong in words rather than patterns, and what to do.
 */
import { describe, expect, it } from 'vitest';
import { errorPlace } from '../../src/ingest/rules/index.js';
import { formatInWords } from '../../src/ingest/rules/format-words.js';
import { FRIENDLY_ALIASES, codes, parseCollect, tempCsv } from './helpers.js';

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
