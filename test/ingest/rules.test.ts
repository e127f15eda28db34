import { describe, expect, it } from 'vitest';
import {
  DEFAULT_VALIDATION_RULES,
  FIELD_PATHS,
  ISO_3166_ALPHA2,
  ISO_4217_MINOR_UNITS,
  abaProblem,
  amountFormatProblem,
  bicProblem,
  compileRules,
  ibanProblem,
  compactIban,
  validateRow,
  validationRulesSchema,
  type CompiledRules,
  type FieldPath,
  type RowError,
  type RowValidation,
  type ValidationRulesInput,
  upperCased,
} from '../../src/ingest/rules/index.js';
import { requestOfValues } from '../../src/domain/request-values.js';
import { VALID_ROW } from '../support/rows.js';

const VALID: Record<FieldPath, string> = { ...VALID_ROW };

const DEFAULT = compileRules(DEFAULT_VALIDATION_RULES);

function rules(input: ValidationRulesInput): CompiledRules {
  return compileRules(validationRulesSchema.parse(input));
}

function validate(overrides: Partial<Record<FieldPath, string>>, compiled: CompiledRules = DEFAULT): RowValidation {
  const columns = Object.fromEntries(FIELD_PATHS.map((f) => [f, `col:${f}`]));
  return validateRow({ file: 'f.csv', line: 7, values: { ...VALID, ...overrides }, columns }, compiled);
}

function errorsOf(result: RowValidation): RowError[] {
  return 'errors' in result ? result.errors : [];
}

/** [code, field] of each error. */
function problems(overrides: Partial<Record<FieldPath, string>>, compiled?: CompiledRules): [string, string | null][] {
  return errorsOf(validate(overrides, compiled)).map((e) => [e.code, e.field]);
}

function firstMessage(overrides: Partial<Record<FieldPath, string>>, compiled?: CompiledRules): string {
  return errorsOf(validate(overrides, compiled))[0]?.message ?? '';
}

describe('a valid row', () => {
  it('validates into a normalized request', () => {
    const result = validate({
      deductionCurrency: ' usdc ',
      payoutCurrency: 'eur',
      payoutAmount: ' 0100.50 ',
      'sender.firstName': '  Ana  Maria ',
      'sender.country': 'de',
      'sender.idType': 'national_id',
      'beneficiary.accountNumber': 'de89 3704 0044 0532 0130 00',
      'beneficiary.bankCode': 'cobadeffxxx',
    });
    expect('values' in result && requestOfValues(result.values)).toEqual({
      merchantReferenceId: 'REF-1',
      deductionCurrency: 'USDC',
      payoutCurrency: 'EUR',
      payoutAmount: '100.5',
      sender: { firstName: 'Ana  Maria', lastName: 'Santos', country: 'DE', idType: 'NATIONAL_ID', idValue: 'P1234567A' },
      beneficiary: { accountName: 'Juan Dela Cruz', accountNumber: 'DE89370400440532013000', bankCode: 'COBADEFFXXX' },
    });
    expect(result).toEqual({
      // The values in FIELD_PATHS order: what the store keeps.
      values: [
        'REF-1',
        'USDC',
        'EUR',
        '100.5',
        'Ana  Maria',
        'Santos',
        'DE',
        'NATIONAL_ID',
        'P1234567A',
        'Juan Dela Cruz',
        'DE89370400440532013000',
        'COBADEFFXXX',
      ],
    });
  });

  it('reports errors with file, line, header column and field', () => {
    expect(errorsOf(validate({ 'sender.country': 'XX' }))).toEqual([
      {
        file: 'f.csv',
        line: 7,
        column: 'col:sender.country',
        field: 'sender.country',
        code: 'COUNTRY_INVALID',
        message: 'sender.country "XX" is not an ISO 3166-1 alpha-2 country code',
      },
    ]);
  });

  it('reports every bad field of a row, one error each', () => {
    expect(problems({ deductionCurrency: 'BTC', payoutAmount: '-1', 'sender.idType': 'SSN', 'sender.lastName': '' })).toEqual([
      ['DEDUCTION_CURRENCY_UNSUPPORTED', 'deductionCurrency'],
      ['AMOUNT_NEGATIVE', 'payoutAmount'],
      ['REQUIRED', 'sender.lastName'],
      ['ID_TYPE_UNSUPPORTED', 'sender.idType'],
    ]);
  });
});

describe('required fields and text', () => {
  it('requires every field after trimming spaces', () => {
    expect(problems({ 'sender.firstName': '   ', 'beneficiary.bankCode': '' })).toEqual([
      ['REQUIRED', 'sender.firstName'],
      ['REQUIRED', 'beneficiary.bankCode'],
    ]);
  });

  it('takes a cell of only non-breaking, other Unicode or zero-width spaces for empty, naming them', () => {
    // The payout API trims the spaces, not the zero-width characters: a name of a zero-width space was sent as one.
    const blanks = ['\u00a0', ' \u00a0 \u00a0 ', '\u2003\u3000', '\u202f', '\ufeff', '\u200b', '\u200c\u200d', ' \u2060 ', '\u00a0\u200b'];
    for (const blank of blanks) {
      expect(problems({ 'sender.lastName': blank, 'beneficiary.accountNumber': blank }), JSON.stringify(blank)).toEqual([
        ['REQUIRED', 'sender.lastName'],
        ['REQUIRED', 'beneficiary.accountNumber'],
      ]);
    }
    expect(firstMessage({ 'beneficiary.accountName': '\u00a0\u00a0' })).toBe(
      'beneficiary.accountName is required but empty (the cell holds only invisible characters: U+00A0, a no-break space)',
    );
    expect(firstMessage({ 'sender.firstName': '\u200b\u2060' })).toBe(
      'sender.firstName is required but empty (the cell holds only invisible characters: U+200B, a zero-width space; U+2060, a word joiner)',
    );
    const optional = rules({ requiredFields: FIELD_PATHS.filter((f) => f !== 'sender.idValue') });
    for (const blank of ['\u00a0', '\u200b']) {
      const result = validate({ 'sender.idValue': blank }, optional);
      expect('values' in result && requestOfValues(result.values).sender.idValue).toBe('');
    }
    // A value with letters is sent as written.
    const kept = validate({ 'sender.lastName': '\u00a0Santos' });
    expect('values' in kept && requestOfValues(kept.values).sender.lastName).toBe('\u00a0Santos');
  });

  it('refuses an identifier with an invisible character in it, naming the character and where it is', () => {
    // An account number with a hidden character is refused by the bank, or read as another account.
    expect(firstMessage({ 'beneficiary.accountNumber': '12345\u200b67890' })).toBe(
      'beneficiary.accountNumber "*******7890" has an invisible character in it (U+200B, a zero-width space) at position 6, which would be sent as part of it: delete it, or type the value again',
    );
    // Where no account rule would have refused it, and with the character written out where it is shown.
    const open = rules({ accountRules: { PHP: {} } });
    expect(errorsOf(validate({ 'beneficiary.accountNumber': '1234567890\u2060' }, open)).map((e) => [e.code, e.message])).toEqual([
      [
        'INVISIBLE_CHARACTER',
        'beneficiary.accountNumber "*******890\\u2060" has an invisible character in it (U+2060, a word joiner) at position 11, which would be sent as part of it: delete it, or type the value again',
      ],
    ]);
    expect(firstMessage({ merchantReferenceId: 'INV\u200d-7\u200d' })).toBe(
      'merchantReferenceId "INV\\u200D-7\\u200D" has invisible characters in it (U+200D, a zero-width joiner), the first at position 4, which would be sent as part of it: delete them, or type the value again',
    );
    // The id number is not shown, the place of the character is.
    expect(firstMessage({ 'sender.idValue': 'P123\u00ad4567A' })).toBe(
      'sender.idValue has an invisible character in it (U+00AD) at position 5, which would be sent as part of it: delete it, or type the value again',
    );
    for (const field of ['beneficiary.bankCode', 'payoutCurrency', 'sender.country', 'sender.idType'] as const) {
      expect(problems({ [field]: `\ufeff${VALID[field]}` }), field).toEqual([['INVISIBLE_CHARACTER', field]]);
    }
    // Kept in a name, where a script may need one: a zero-width non-joiner is part of Persian spelling.
    const kept = validate({ 'beneficiary.accountName': 'Ali Reza\u200cpour' });
    expect('values' in kept && requestOfValues(kept.values).beneficiary.accountName).toBe('Ali Reza\u200cpour');
  });

  it('refuses text holding the replacement character "�" in any field sent, never showing a name or id number', () => {
    // "Peña" read with its ñ cut in two, or saved in another encoding: the payout went out to "Pe��a".
    const advice =
      'which stands for characters that could not be read: the text is damaged, so the row is not paid; correct the text and send the row again (from a workbook: save the sheet as CSV UTF-8 and send that, or save the workbook again and send it)';
    expect(firstMessage({ 'beneficiary.accountName': 'Juan Pe\ufffd\ufffda' })).toBe(
      `the account name shows the replacement character "\ufffd" 2 times, the first at position 8, ${advice}`,
    );
    expect(firstMessage({ 'sender.idValue': 'P12\ufffd4567A' })).toBe(
      `the sender's id number shows the replacement character "\ufffd" at position 4, ${advice}`,
    );
    expect(firstMessage({ 'beneficiary.accountNumber': '12345\ufffd67890' })).toBe(
      `the account number "*******7890" shows the replacement character "\ufffd" at position 6, ${advice}`,
    );
    expect(firstMessage({ merchantReferenceId: 'INV-\ufffd7' })).toBe(
      `the reference "INV-\ufffd7" shows the replacement character "\ufffd" at position 5, ${advice}`,
    );
    // Every field sent but the amount, whose own rules refuse it; where no account rule would have.
    const open = rules({ accountRules: { PHP: {} } });
    for (const field of FIELD_PATHS.filter((f) => f !== 'payoutAmount')) {
      expect(problems({ [field]: `${VALID[field]}\ufffd` }, open), field).toEqual([['TEXT_DAMAGED', field]]);
    }
    expect(problems({ payoutAmount: '1\ufffd00' })).toEqual([['AMOUNT_INVALID', 'payoutAmount']]);
    // The name itself is never in the message.
    expect(firstMessage({ 'sender.lastName': 'Secretname\ufffd' })).not.toContain('Secretname');
  });

  it('leaves a no-break or narrow space in an identifier to its own rules, as written, but not a zero-width one', () => {
    // A no-break space shows as a gap: an id number with one was accepted and sent as written before zero-width
    // characters were refused, and a space of no width must not take it with it.
    for (const idValue of ['P1234567A\u00a0', '\u00a0P1234567A', 'P123\u00a04567A', 'P123\u202f4567A', 'P123\u30004567A']) {
      const result = validate({ 'sender.idValue': idValue });
      expect('values' in result && requestOfValues(result.values).sender.idValue, JSON.stringify(idValue)).toBe(idValue);
    }
    // Where a currency has no account rule, nothing but this refuses a zero-width space inside an account number.
    const open = rules({ accountRules: { PHP: {} } });
    const spaced = validate({ 'beneficiary.accountNumber': '12345\u00a067890\u2002', 'beneficiary.bankCode': 'BOPI\u00a0PHMM' }, open);
    expect('values' in spaced && requestOfValues(spaced.values).beneficiary.accountNumber).toBe('12345\u00a067890\u2002');
    expect(errorsOf(validate({ 'beneficiary.accountNumber': '12345\u00a06789\u200b0' }, open)).map((e) => [e.code, e.message])).toEqual([
      [
        'INVISIBLE_CHARACTER',
        'beneficiary.accountNumber "********89\\u200B0" has an invisible character in it (U+200B, a zero-width space) at position 11, which would be sent as part of it: delete it, or type the value again',
      ],
    ]);
  });

  it('rejects control characters in names, including tab, CR, LF and C1, without echoing the name', () => {
    for (const bad of ['Ana\tMaria', 'Ana\r\nMaria', 'Ana\nMaria', 'Ana\u0085Maria', 'Ana\u0000', 'Ana\u007f']) {
      expect(problems({ 'beneficiary.accountName': bad })).toEqual([['CONTROL_CHARACTER', 'beneficiary.accountName']]);
    }
    const message = firstMessage({ 'sender.firstName': 'Secretname\tX' });
    expect(message).toBe('sender.firstName contains a control character (U+0009 tab) at position 11');
    expect(message).not.toContain('Secretname');
  });

  it('rejects control characters in idValue without echoing it', () => {
    const message = firstMessage({ 'sender.idValue': 'ID-778899\n' });
    expect(message).toContain('U+000A line feed');
    expect(message).not.toContain('778899');
  });

  it('limits name length in characters, configurably', () => {
    expect(problems({ 'sender.lastName': 'é'.repeat(140) })).toEqual([]);
    expect(problems({ 'sender.lastName': 'é'.repeat(141) })).toEqual([['TOO_LONG', 'sender.lastName']]);
    const short = { 'sender.firstName': 'Ana', 'beneficiary.accountName': 'Juan' };
    expect(problems({ ...short, 'sender.lastName': 'Santos' }, rules({ nameMaxLength: 5 }))).toEqual([['TOO_LONG', 'sender.lastName']]);
    // One emoji is one character.
    expect(problems({ ...short, 'sender.lastName': '😀'.repeat(5) }, rules({ nameMaxLength: 5 }))).toEqual([]);
  });

  it('allows an empty value in a field that is not required', () => {
    const compiled = rules({ requiredFields: FIELD_PATHS.filter((f) => f !== 'sender.idValue') });
    const result = validate({ 'sender.idValue': '' }, compiled);
    expect('values' in result && requestOfValues(result.values)).toMatchObject({ merchantReferenceId: 'REF-1', sender: { idValue: '' } });
    expect(result).toMatchObject({ values: expect.arrayContaining(['REF-1', '']) });
  });
});

describe('formula-like text', () => {
  const TEXT_FIELDS = FIELD_PATHS.filter((f) => f !== 'payoutAmount');

  it('refuses every text field that starts with =, +, -, @, tab or CR (after trimming spaces)', () => {
    for (const field of TEXT_FIELDS) {
      for (const lead of ['=', '+', '-', '@', '\t', '\r', ' =']) {
        expect(problems({ [field]: `${lead}${VALID[field]}` }), `${field} ${JSON.stringify(lead)}`).toEqual([['FORMULA_LIKE_TEXT', field]]);
      }
    }
    expect(problems({ 'beneficiary.accountName': '=HYPERLINK("http://e","c")' })).toEqual([
      ['FORMULA_LIKE_TEXT', 'beneficiary.accountName'],
    ]);
  });

  it('says which character and what to do, naming the field but never the value', () => {
    expect(errorsOf(validate({ 'beneficiary.accountName': '=HYPERLINK("http://e","Secretname")' }))).toEqual([
      {
        file: 'f.csv',
        line: 7,
        column: 'col:beneficiary.accountName',
        field: 'beneficiary.accountName',
        code: 'FORMULA_LIKE_TEXT',
        message: 'beneficiary.accountName starts with "=", which a spreadsheet would run as a formula; remove the leading "="',
      },
    ]);
    expect(firstMessage({ 'sender.firstName': '\tSecretname' })).toBe(
      'sender.firstName starts with a tab, which a spreadsheet would run as a formula; remove the leading tab',
    );
    expect(firstMessage({ 'sender.idValue': '\r778899' })).toBe(
      'sender.idValue starts with a carriage return, which a spreadsheet would run as a formula; remove the leading carriage return',
    );
  });

  it("refuses formula-like text escaped with ' (as a retry file writes an older batch's text)", () => {
    for (const escaped of ["'=1+1", "'+Ana", "'-Ana", "'@Ana", "'\tAna"]) {
      expect(problems({ 'sender.lastName': escaped }), JSON.stringify(escaped)).toEqual([['FORMULA_LIKE_TEXT', 'sender.lastName']]);
    }
    expect(firstMessage({ 'beneficiary.accountName': `'=HYPERLINK("http://e","c")` })).toBe(
      `beneficiary.accountName starts with "'" and "=": text a spreadsheet would run as a formula, escaped as a retry file writes it; write the real value, not starting with "="`,
    );
  });

  it('accepts what is text to a spreadsheet: a lone "-" placeholder, triggers inside a value, a leading apostrophe before text', () => {
    for (const name of ['-', 'Jean-Luc', 'Ana = Maria', 'ana@example', "O'Brien", "'Ana", 'Ana-']) {
      expect(problems({ 'sender.lastName': name }), name).toEqual([]);
    }
    expect(problems({ merchantReferenceId: 'INV-7-R1' })).toEqual([]);
  });

  it('leaves the amount to its own checks, and a leading line feed to the control-character rule', () => {
    expect(problems({ payoutAmount: '-5' })).toEqual([['AMOUNT_NEGATIVE', 'payoutAmount']]);
    expect(problems({ payoutAmount: '+5' })).toEqual([['AMOUNT_INVALID', 'payoutAmount']]);
    expect(problems({ payoutAmount: '=5' })).toEqual([['AMOUNT_INVALID', 'payoutAmount']]);
    expect(problems({ 'sender.lastName': '\nSantos' })).toEqual([['CONTROL_CHARACTER', 'sender.lastName']]);
  });
});

describe('spreadsheet error values', () => {
  const ERRORS = ['#N/A', '#REF!', '#VALUE!', '#DIV/0!', '#NAME?', '#NUM!', '#NULL!', '#SPILL!', '#CALC!', '#GETTING_DATA'];

  it('refuses a cell that holds only a spreadsheet error, in any field', () => {
    for (const error of ERRORS) {
      for (const field of ['beneficiary.accountName', 'sender.idValue', 'sender.firstName', 'merchantReferenceId'] as const) {
        expect(problems({ [field]: error }), `${field} ${error}`).toEqual([['SPREADSHEET_ERROR_VALUE', field]]);
      }
    }
    expect(problems({ payoutAmount: '#VALUE!' })).toEqual([['SPREADSHEET_ERROR_VALUE', 'payoutAmount']]);
    expect(problems({ 'beneficiary.bankCode': ' #n/a ' })).toEqual([['SPREADSHEET_ERROR_VALUE', 'beneficiary.bankCode']]);
  });

  it('says what the cell holds and what to do', () => {
    expect(firstMessage({ 'sender.idValue': '#N/A' })).toBe(
      "the sender's id number cell holds #N/A, the error a spreadsheet shows for a formula that failed; type the sender's id number itself",
    );
  });

  it('accepts text that only starts like one', () => {
    for (const name of ['#N/A Santos', 'N/A', '#1 Store']) expect(problems({ 'beneficiary.accountName': name }), name).toEqual([]);
  });
});

describe('merchantReferenceId', () => {
  it('accepts the default charset up to 64 characters', () => {
    expect(problems({ merchantReferenceId: 'a.B_c:9-Z' })).toEqual([]);
    expect(problems({ merchantReferenceId: 'R'.repeat(64) })).toEqual([]);
    expect(problems({ merchantReferenceId: 'R'.repeat(65) })).toEqual([['TOO_LONG', 'merchantReferenceId']]);
  });

  it('rejects characters outside the charset', () => {
    for (const bad of ['REF 1', 'REF#1', 'RÉF', 'REF/1']) {
      expect(problems({ merchantReferenceId: bad })).toEqual([['REFERENCE_INVALID', 'merchantReferenceId']]);
    }
  });

  it('uses a configured pattern and length', () => {
    const compiled = rules({ merchantReferenceId: { pattern: 'INV-\\d{6}', maxLength: 10 } });
    expect(problems({ merchantReferenceId: 'INV-123456' }, compiled)).toEqual([]);
    expect(problems({ merchantReferenceId: 'INV-12345' }, compiled)).toEqual([['REFERENCE_INVALID', 'merchantReferenceId']]);
    expect(firstMessage({ merchantReferenceId: 'X' }, compiled)).toContain('INV-\\d{6}');
  });
});

describe('currencies', () => {
  it('accepts USDT and USDC as deduction currency only', () => {
    expect(problems({ deductionCurrency: 'usdc' })).toEqual([]);
    expect(problems({ deductionCurrency: 'DAI' })).toEqual([['DEDUCTION_CURRENCY_UNSUPPORTED', 'deductionCurrency']]);
  });

  it('tells an unknown code from a known but disabled one', () => {
    expect(problems({ payoutCurrency: 'ABC' })).toEqual([['CURRENCY_UNKNOWN', 'payoutCurrency']]);
    expect(problems({ payoutCurrency: 'JPY', payoutAmount: '100' })).toEqual([['CURRENCY_UNSUPPORTED', 'payoutCurrency']]);
  });

  it('ships ISO 4217 minor units (IDR 2, JPY 0, KWD 3) and ISO 3166 countries', () => {
    expect(ISO_4217_MINOR_UNITS.get('IDR')).toBe(2);
    expect(ISO_4217_MINOR_UNITS.get('JPY')).toBe(0);
    expect(ISO_4217_MINOR_UNITS.get('KWD')).toBe(3);
    expect(ISO_4217_MINOR_UNITS.get('CLF')).toBe(4);
    expect(ISO_4217_MINOR_UNITS.has('XAU')).toBe(false);
    expect(ISO_3166_ALPHA2.size).toBe(249);
    expect(ISO_3166_ALPHA2.has('PH')).toBe(true);
    expect(ISO_3166_ALPHA2.has('UK')).toBe(false);
  });
});

describe('upperCased', () => {
  it('is toUpperCase: the value itself when nothing changes, the full mapping otherwise', () => {
    const same = 'DRIVING_LICENSE-09 .:';
    expect(upperCased(same)).toBe(same);
    for (const text of ['usd', 'Usd', 'mx', 'éur', 'straße', 'ÿ', 'ı', 'ǆ', 'ﬀ', 'A\u0101', '`{', '']) {
      expect(upperCased(text)).toBe(text.toUpperCase());
    }
  });

  it('upper-cases the codes of a row before checking them', () => {
    expect(problems({ payoutCurrency: 'php', deductionCurrency: 'usdt', 'sender.country': 'ph' })).toEqual([]);
    expect(problems({ payoutCurrency: 'ﬀ' })).toEqual([['CURRENCY_UNKNOWN', 'payoutCurrency']]);
  });
});

describe('payoutAmount', () => {
  it.each([
    ['1.234,56', 'AMOUNT_LOCALE_FORMAT', 'decimal comma'],
    ['12,5', 'AMOUNT_LOCALE_FORMAT', 'decimal comma'],
    ['1,234.56', 'AMOUNT_LOCALE_FORMAT', 'thousands separator'],
    ['1 234.56', 'AMOUNT_LOCALE_FORMAT', 'thousands separators'],
    ['1e3', 'AMOUNT_EXPONENT', 'exponent'],
    ['1.5E+2', 'AMOUNT_EXPONENT', 'exponent'],
    ['-5', 'AMOUNT_NEGATIVE', 'negative'],
    ['0', 'AMOUNT_ZERO', 'zero'],
    ['0.00', 'AMOUNT_ZERO', 'zero'],
    ['-0', 'AMOUNT_ZERO', 'zero'],
    ['+5', 'AMOUNT_INVALID', 'plus sign'],
    ['.5', 'AMOUNT_INVALID', 'both sides'],
    ['5.', 'AMOUNT_INVALID', 'both sides'],
    ['$100', 'AMOUNT_INVALID', 'not a plain decimal'],
    ['0x10', 'AMOUNT_INVALID', 'not a plain decimal'],
    ['Infinity', 'AMOUNT_INVALID', 'not a plain decimal'],
  ])('%s -> %s', (amount, code, words) => {
    const errors = errorsOf(validate({ payoutAmount: amount }));
    expect(errors.map((e) => e.code)).toEqual([code]);
    expect(errors[0]?.message).toContain(words);
    expect(errors[0]?.message).toContain(JSON.stringify(amount));
    expect(amountFormatProblem(amount)?.code).toBe(code);
  });

  it('allows no more decimals than the currency has, ignoring trailing zeros', () => {
    expect(problems({ payoutAmount: '10.12' })).toEqual([]);
    expect(problems({ payoutAmount: '10.1200' })).toEqual([]);
    expect(problems({ payoutAmount: '1500.500' })).toEqual([]);
    expect(firstMessage({ payoutAmount: '1500.125' })).toBe('payoutAmount "1500.125" has 3 decimals; PHP allows at most 2');
    expect(problems({ payoutAmount: '10.5' }, rules({ payoutCurrencies: ['JPY'] }))).toHaveLength(1);
    expect(errorsOf(validate({ payoutCurrency: 'JPY', payoutAmount: '10.5' }, rules({ payoutCurrencies: ['JPY'] })))[0]?.code).toBe(
      'AMOUNT_TOO_MANY_DECIMALS',
    );
    expect(problems({ payoutCurrency: 'KWD', payoutAmount: '1.125' }, rules({ payoutCurrencies: ['KWD'] }))).toEqual([]);
  });

  it('refuses a dot that looks like a thousands separator, even when the decimals it leaves are zeros', () => {
    const idr = { payoutCurrency: 'IDR', 'beneficiary.bankCode': '014' };
    const eur = {
      payoutCurrency: 'EUR',
      'beneficiary.accountNumber': 'DE89 3704 0044 0532 0130 00',
      'beneficiary.bankCode': 'COBADEFFXXX',
    };
    const jpy = rules({ payoutCurrencies: ['JPY'] });
    for (const [amount, over, compiled] of [
      ['1.500', {}, DEFAULT],
      ['100.500', {}, DEFAULT],
      ['1.234', {}, DEFAULT],
      ['250.000', idr, DEFAULT],
      ['12.000', eur, DEFAULT],
      ['1.000', { payoutCurrency: 'JPY' }, jpy],
      ['1.234.567', {}, DEFAULT],
    ] as const) {
      expect(problems({ ...over, payoutAmount: amount }, compiled), amount).toEqual([['AMOUNT_LOCALE_FORMAT', 'payoutAmount']]);
    }
    expect(firstMessage({ payoutAmount: '1.500' })).toBe(
      'payoutAmount "1.500" has a dot that looks like a thousands separator (PHP has 2 decimals, not 3): write 1500 or 1500.00, with no separator; or 1.5 if 1.5 PHP was meant',
    );
    expect(firstMessage({ ...idr, payoutAmount: '250.000' })).toContain(
      'write 250000 or 250000.00, with no separator; or 250 if 250 IDR was meant',
    );
    expect(firstMessage({ payoutAmount: '1.234' })).toBe(
      'payoutAmount "1.234" has a dot that looks like a thousands separator (PHP has 2 decimals, not 3): write 1234 or 1234.00, with no separator',
    );
    expect(firstMessage({ payoutCurrency: 'JPY', payoutAmount: '1.000' }, jpy)).toContain(
      'write 1000, with no separator; or 1 if 1 JPY was meant',
    );
    expect(firstMessage({ payoutAmount: '1.234.567' })).toContain('write 1234567');
    // Three minor units: 1.500 is one and a half; a leading zero or a fourth decimal is no thousands group.
    const kwd = rules({ payoutCurrencies: ['KWD'] });
    expect(problems({ payoutCurrency: 'KWD', payoutAmount: '1.500' }, kwd)).toEqual([]);
    expect(problems({ payoutAmount: '0.500' })).toEqual([]);
    expect(problems({ payoutAmount: '1.5000' })).toEqual([]);
    expect(problems({ payoutAmount: '1.50' })).toEqual([]);
  });

  it('takes a per-currency minor units override', () => {
    const compiled = rules({ minorUnits: { IDR: 0 } });
    expect(problems({ payoutCurrency: 'IDR', payoutAmount: '15000.5', 'beneficiary.bankCode': '014' })).toEqual([]);
    expect(problems({ payoutCurrency: 'IDR', payoutAmount: '15000.5', 'beneficiary.bankCode': '014' }, compiled)).toEqual([
      ['AMOUNT_TOO_MANY_DECIMALS', 'payoutAmount'],
    ]);
  });

  it('checks min and max with Decimal, per currency overridable', () => {
    expect(problems({ payoutAmount: '1000000000' })).toEqual([]);
    expect(problems({ payoutAmount: '1000000000.01' })).toEqual([['AMOUNT_ABOVE_MAX', 'payoutAmount']]);
    const compiled = rules({ amount: { min: '1', max: '5000', perCurrency: { PHP: { min: '50', max: '9007199254740993.5' } } } });
    expect(problems({ payoutAmount: '49.99' }, compiled)).toEqual([['AMOUNT_BELOW_MIN', 'payoutAmount']]);
    // Beyond float precision: 9007199254740993.51 > 9007199254740993.5 only in exact decimal.
    expect(problems({ payoutAmount: '9007199254740993.5' }, compiled)).toEqual([]);
    expect(problems({ payoutAmount: '9007199254740993.51' }, compiled)).toEqual([['AMOUNT_ABOVE_MAX', 'payoutAmount']]);
    const usd = { payoutCurrency: 'USD', 'beneficiary.accountNumber': '000123456789', 'beneficiary.bankCode': '021000021' };
    expect(problems({ ...usd, payoutAmount: '0.5' }, compiled)).toEqual([['AMOUNT_BELOW_MIN', 'payoutAmount']]);
    expect(firstMessage({ ...usd, payoutAmount: '5000.01' }, compiled)).toBe('payoutAmount "5000.01" is above the maximum 5000 USD');
  });
});

describe('country and id type', () => {
  it('accepts ISO 3166-1 alpha-2 codes only', () => {
    expect(problems({ 'sender.country': 'ph' })).toEqual([]);
    for (const bad of ['PHL', 'UK', 'XX', 'P'])
      expect(problems({ 'sender.country': bad })).toEqual([['COUNTRY_INVALID', 'sender.country']]);
  });

  it('accepts the configured id types', () => {
    expect(problems({ 'sender.idType': 'TAX_ID' })).toEqual([]);
    expect(problems({ 'sender.idType': 'SSN' })).toEqual([['ID_TYPE_UNSUPPORTED', 'sender.idType']]);
    expect(problems({ 'sender.idType': 'SSN' }, rules({ idTypes: ['SSN'] }))).toEqual([]);
  });
});

describe('IBAN (EUR)', () => {
  const eur = (accountNumber: string): Partial<Record<FieldPath, string>> => ({
    payoutCurrency: 'EUR',
    'beneficiary.accountNumber': accountNumber,
    'beneficiary.bankCode': 'COBADEFF',
  });

  it('accepts IBANs with good check digits, spaces removed', () => {
    for (const iban of [
      'DE89 3704 0044 0532 0130 00',
      'FR1420041010050500013M02606',
      'NL91ABNA0417164300',
      'BE68539007547034',
      'gb82west12345698765432',
    ]) {
      expect(problems(eur(iban))).toEqual([]);
      expect(ibanProblem(compactIban(iban))).toBeNull();
    }
  });

  it('rejects bad check digits', () => {
    expect(problems(eur('DE88370400440532013000'))).toEqual([['IBAN_CHECKSUM', 'beneficiary.accountNumber']]);
    // A transposition of two digits is caught too.
    expect(problems(eur('DE89370400440532031000'))).toEqual([['IBAN_CHECKSUM', 'beneficiary.accountNumber']]);
  });

  it('rejects the wrong length, an unknown country and a non-IBAN', () => {
    expect(firstMessage(eur('DE8937040044053201300'))).toContain('a DE IBAN has 22 characters, this one has 21');
    expect(firstMessage(eur('ZZ89370400440532013000'))).toContain('ZZ is not an IBAN country');
    expect(problems(eur('1234567890'))).toEqual([['IBAN_INVALID', 'beneficiary.accountNumber']]);
  });

  it('masks the account number in messages', () => {
    const message = firstMessage(eur('DE88370400440532013000'));
    expect(message).toContain('********3000');
    expect(message).not.toContain('0532013000');
  });

  it('checks the BIC', () => {
    expect(problems({ ...eur('DE89370400440532013000'), 'beneficiary.bankCode': 'COBADEFFXXX' })).toEqual([]);
    for (const bad of ['COBADE', 'COBADEFFXX', 'COBAZZFF', '1OBADEFF']) {
      expect(problems({ ...eur('DE89370400440532013000'), 'beneficiary.bankCode': bad })).toEqual([
        ['BIC_INVALID', 'beneficiary.bankCode'],
      ]);
    }
    expect(bicProblem('COBAZZFF')).toEqual({ kind: 'country', country: 'ZZ' });
  });
});

describe('ABA routing number (USD)', () => {
  const usd = (bankCode: string, accountNumber = '000123456789'): Partial<Record<FieldPath, string>> => ({
    payoutCurrency: 'USD',
    'beneficiary.accountNumber': accountNumber,
    'beneficiary.bankCode': bankCode,
  });

  it('accepts routing numbers with a good checksum', () => {
    for (const aba of ['021000021', '011000015', '026009593', '121000358', '322271627']) expect(problems(usd(aba))).toEqual([]);
  });

  it('rejects a bad checksum, a bad prefix and a wrong length', () => {
    expect(problems(usd('021000022'))).toEqual([['ABA_CHECKSUM', 'beneficiary.bankCode']]);
    expect(abaProblem('021000022')).toEqual({ kind: 'checksum' });
    expect(abaProblem('500000005')).toEqual({ kind: 'prefix', prefix: '50' });
    expect(problems(usd('02100002'))).toEqual([['ABA_INVALID', 'beneficiary.bankCode']]);
  });

  it('requires 4 to 17 digits for the account', () => {
    expect(problems(usd('021000021', '1234'))).toEqual([]);
    expect(problems(usd('021000021', '123'))).toEqual([['ACCOUNT_NUMBER_INVALID', 'beneficiary.accountNumber']]);
    expect(problems(usd('021000021', '1'.repeat(18)))).toEqual([['ACCOUNT_NUMBER_INVALID', 'beneficiary.accountNumber']]);
  });
});

describe('account rules of other currencies', () => {
  it('applies the built-in national patterns', () => {
    const cases: [string, string, string, boolean][] = [
      ['IDR', '1234567890', '014', true],
      ['IDR', '1234567890', '14', false],
      ['INR', '123456789012', 'HDFC0001234', true],
      ['INR', '123456789012', 'HDFC1001234', false],
      ['BRL', '123456789', '341', true],
      ['BRL', '123456789', '00000000', true],
      ['MXN', '012180001234567897', '012', true],
      ['MXN', '01218000123456789', '012', false],
      ['GBP', '12345678', '401276', true],
      ['GBP', '12345678', '40-12-76', false],
    ];
    for (const [payoutCurrency, accountNumber, bankCode, ok] of cases) {
      const found = problems({
        payoutCurrency,
        payoutAmount: '100',
        'beneficiary.accountNumber': accountNumber,
        'beneficiary.bankCode': bankCode,
      });
      expect([payoutCurrency, accountNumber, bankCode, found.length === 0]).toEqual([payoutCurrency, accountNumber, bankCode, ok]);
    }
  });

  it('lays configured rules over the built-ins per currency; {} turns checks off', () => {
    const compiled = rules({ accountRules: { PHP: { accountNumber: { pattern: 'PH\\d{4}' } }, USD: {} } });
    expect(problems({ 'beneficiary.accountNumber': 'PH1234', 'beneficiary.bankCode': 'anything' }, compiled)).toEqual([]);
    expect(problems({ 'beneficiary.accountNumber': '1234567890' }, compiled)).toEqual([
      ['ACCOUNT_NUMBER_INVALID', 'beneficiary.accountNumber'],
    ]);
    expect(problems({ payoutCurrency: 'USD', 'beneficiary.bankCode': 'any' }, compiled)).toEqual([]);
    // EUR keeps its built-in IBAN and BIC rules.
    expect(problems({ payoutCurrency: 'EUR', 'beneficiary.bankCode': 'BOPI' }, compiled)).toEqual([
      ['IBAN_INVALID', 'beneficiary.accountNumber'],
      ['BIC_INVALID', 'beneficiary.bankCode'],
    ]);
  });

  it('skips currency-dependent account checks when the currency itself is wrong', () => {
    expect(problems({ payoutCurrency: 'XYZ', 'beneficiary.accountNumber': 'whatever', 'beneficiary.bankCode': '?' })).toEqual([
      ['CURRENCY_UNKNOWN', 'payoutCurrency'],
    ]);
  });
});

describe('rules configuration', () => {
  it('has every setting defaulted', () => {
    expect(validationRulesSchema.parse({})).toEqual(DEFAULT_VALIDATION_RULES);
    expect(DEFAULT_VALIDATION_RULES.payoutCurrencies).toEqual(['PHP', 'IDR', 'EUR', 'BRL', 'USD', 'MXN', 'INR', 'GBP']);
    expect(DEFAULT_VALIDATION_RULES.nameMaxLength).toBe(140);
  });

  it('rejects invalid patterns, unknown settings and currencies without minor units', () => {
    expect(validationRulesSchema.safeParse({ merchantReferenceId: { pattern: '[' } }).success).toBe(false);
    expect(validationRulesSchema.safeParse({ colour: 'blue' }).success).toBe(false);
    const unknown = validationRulesSchema.safeParse({ payoutCurrencies: ['ABC'] });
    expect(unknown.success).toBe(false);
    expect(JSON.stringify(unknown.error?.issues)).toContain('ABC is not in ISO 4217');
    expect(validationRulesSchema.safeParse({ payoutCurrencies: ['ABC'], minorUnits: { ABC: 2 } }).success).toBe(true);
    expect(validationRulesSchema.safeParse({ amount: { max: '1e9' } }).success).toBe(false);
  });
});
