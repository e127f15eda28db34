/**
 * Validates one row of cells into a normalized PayoutRequest's values, or everything wrong with it (at most one
 * error per field). Pure; uniqueness of merchantReferenceId is the caller's job (it needs the database).
 */
import { normalizeAmount } from '../../domain/money.js';
import { maskAccountNumber } from '../../domain/payout.js';
import { amountFormatProblem, amountRangeProblem } from './amount.js';
import { damageChecked, damageProblem, isSpreadsheetError, spreadsheetErrorProblem } from './damage.js';
import { formatInWords } from './format-words.js';
import { DEFAULT_REFERENCE_PATTERN } from './options.js';
import { abaProblem, bicProblem, type AbaProblem, type BicProblem } from './bank-codes.js';
import { REQUEST_VALUE_INDEX } from '../../domain/request-values.js';
import { FIELD_PATHS, FIELD_WORDS, type FieldPath, type RowValues } from './fields.js';
import { compactIban, ibanProblem } from '../../domain/iban.js';
import { ISO_3166_ALPHA2 } from './iso3166.js';
import type { CompiledAccountRule, CompiledRules } from './compiled.js';
import {
  describeInvisible,
  invisibleCharacters,
  invisibleIn,
  quoteValue,
  quoteVisibly,
  type RowError,
  type RowErrorCode,
} from './row-error.js';
import {
  RESEND_DAMAGED_WORKBOOK,
  codePointLength,
  damagedTextWords,
  firstControlCharacter,
  formulaLikeLead,
  isBlank,
  positionOf,
  trimSpaces,
  upperCased,
  zeroWidthIn,
} from './text.js';

export interface RowInput {
  /** Display name of the batch file. */
  file: string;
  /** Physical line where the record starts. */
  line: number;
  /** Cell values by field (as read, untrimmed). */
  values: RowValues;
  /** Header name as written for each field present in the file. */
  columns: Partial<Record<FieldPath, string>>;
}

/** A row as its cells in FIELD_PATHS order (as read, untrimmed; '' for a field the file lacks). */
export interface RowCells extends Omit<RowInput, 'values'> {
  cells: readonly string[];
}

/** A valid row's request values in FIELD_PATHS order (what the store keeps), or every problem of the row. */
export type RowValidation = { values: readonly string[] } | { errors: RowError[] };

type Problem = { code: RowErrorCode; message: string };
/** The normalized value when the check passes, else the problem (a string, not `{ ok }`: no object per valid cell). */
type Check = string | Problem;

const NAME_FIELDS: ReadonlySet<FieldPath> = new Set(['sender.firstName', 'sender.lastName', 'beneficiary.accountName']);
const UPPER_CASED: ReadonlySet<FieldPath> = new Set([
  'deductionCurrency',
  'payoutCurrency',
  'sender.country',
  'sender.idType',
  'beneficiary.bankCode',
]);
const PAYOUT_CURRENCY = REQUEST_VALUE_INDEX.payoutCurrency;

/** UPPER_CASED by position in FIELD_PATHS (looked up once per cell). */
const UPPER_CASED_AT: readonly boolean[] = FIELD_PATHS.map((field) => UPPER_CASED.has(field));
/** Fields checked for formula-like text: every text field; the amount's own checks refuse a sign or `=`. */
const FORMULA_CHECKED_AT: readonly boolean[] = FIELD_PATHS.map((field) => field !== 'payoutAmount');

/**
 * Fields that identify (the reference, codes, id and account numbers), by position: a character no one sees in one
 * is never meant, and a bank reads it as part of the value. Names may hold one (a zero-width non-joiner is part of
 * Persian spelling); the amount's own rules refuse anything but digits and a point.
 */
const INVISIBLE_CHECKED_AT: readonly boolean[] = FIELD_PATHS.map((field) => !NAME_FIELDS.has(field) && field !== 'payoutAmount');

/**
 * Fields checked for text damaged before it was read (every field sent to the service); the amount's own rules
 * refuse anything but digits and a point.
 */
const DAMAGED_TEXT_CHECKED_AT: readonly boolean[] = FORMULA_CHECKED_AT;

/** Fields whose text is checked for what a spreadsheet does to numbers and dates, by position. */
const DAMAGE_CHECKED_AT: readonly boolean[] = FIELD_PATHS.map((field) => damageChecked(field));

/** A formula trigger as a message names it. */
function triggerName(trigger: string): { starts: string; remove: string } {
  if (trigger === '\t') return { starts: 'a tab', remove: 'tab' };
  if (trigger === '\r') return { starts: 'a carriage return', remove: 'carriage return' };
  return { starts: JSON.stringify(trigger), remove: JSON.stringify(trigger) };
}

/** Text a spreadsheet would run, refused so that it is never paid nor reaches a file finance opens. */
function formulaLikeProblem(field: FieldPath, lead: string): Problem {
  const trigger = triggerName(lead.slice(-1));
  if (lead.length === 1) {
    return {
      code: 'FORMULA_LIKE_TEXT',
      message: `${field} starts with ${trigger.starts}, which a spreadsheet would run as a formula; remove the leading ${trigger.remove}`,
    };
  }
  return {
    code: 'FORMULA_LIKE_TEXT',
    message: `${field} starts with "'" and ${trigger.starts}: text a spreadsheet would run as a formula, escaped as a retry file writes it; write the real value, not starting with ${trigger.starts}`,
  };
}

/**
 * How a field's value may appear in a message: account numbers masked, personal data not at all, characters no one
 * sees written out.
 */
function shown(field: FieldPath, value: string): string {
  if (field === 'beneficiary.accountNumber') return ` ${quoteVisibly(maskAccountNumber(value))}`;
  if (field === 'sender.idValue' || NAME_FIELDS.has(field)) return '';
  return ` ${quoteVisibly(value)}`;
}

/** A required cell of only characters no one sees: REQUIRED, naming them, as a clerk cannot tell them from nothing. */
function blankProblem(field: FieldPath, value: string): Problem {
  const invisible = invisibleCharacters(value);
  const which = invisible.length > 0 ? `: ${describeInvisible(invisible)}` : '';
  return { code: 'REQUIRED', message: `${field} is required but empty (the cell holds only invisible characters${which})` };
}

/**
 * An identifier holding a character of no width, which would be sent as part of it: which, and where. A no-break
 * or narrow space is not one: it shows as a gap, and is left to the field's own rules, as an ASCII space inside is.
 */
function invisibleProblem(field: FieldPath, value: string): Problem | null {
  const zeroWidth = zeroWidthIn(value);
  if (!zeroWidth) return null;
  const them = zeroWidth.found.length === 1 ? 'it' : 'them';
  return {
    code: 'INVISIBLE_CHARACTER',
    message: `${field}${shown(field, value)} has ${invisibleInWords(value, zeroWidth)}, which would be sent as part of it: delete ${them}, or type the value again`,
  };
}

/** Characters no one sees in a value, as messages word them: which (`found` each as often as met), and where the first is. */
function invisibleInWords(value: string, where: { first: number; found: readonly string[] }): string {
  const which = describeInvisible([...new Set(where.found)]);
  const position = positionOf(value, where.first);
  return where.found.length === 1
    ? `an invisible character in it (${which}) at position ${position}`
    : `invisible characters in it (${which}), the first at position ${position}`;
}

/**
 * `shown` (what a message may show of a refused `value`) with a no-break or odd space of `value` written out, and
 * which and where the first is (its position tells nothing the mask hides): printed as it is, it reads as a plain
 * space. Null when `value` has none. `aside`: the message goes on after it, so the words end in a comma.
 */
function withInvisible(value: string, shown: string, aside: boolean): string | null {
  const invisible = invisibleIn(value);
  if (invisible === null) return null;
  return `${quoteVisibly(shown)}, ${invisibleInWords(value, invisible)}${aside ? ',' : ''}`;
}

/** A refused account number as a message shows it: masked (`shownAs` it, the IBAN compacted), its odd spaces written out. */
function maskedAccount(value: string, aside = false, shownAs = value): string {
  const masked = maskAccountNumber(shownAs);
  return withInvisible(value, masked, aside) ?? masked;
}

/** A refused code or reference (not personal, shown whole) as a message quotes it, its odd spaces written out. */
function quotedCell(value: string, aside = false): string {
  return withInvisible(value, value, aside) ?? quoteValue(value);
}

/**
 * Text holding the replacement character "�": characters lost before the cell was read (a file saved in another
 * encoding, or a character a workbook reader cut in two), never what was written, so it is refused, not sent.
 */
function damagedTextProblem(field: FieldPath, value: string): Problem | null {
  const words = damagedTextWords(value);
  if (words === null) return null;
  return {
    code: 'TEXT_DAMAGED',
    message: `the ${FIELD_WORDS[field]}${shown(field, value)} ${words}: the text is damaged, so the row is not paid; correct the text and send the row again (from a workbook: ${RESEND_DAMAGED_WORKBOOK})`,
  };
}

/** Why a reference does not match its pattern: the characters it may not hold, for a pattern of one class of characters. */
function referenceProblem(value: string, pattern: string): string {
  const one = /^(\[[^\]]+\])[+*]$/.exec(pattern);
  if (one) {
    const allowed = new RegExp(`^${one[1] as string}$`, 'u');
    const bad = [...new Set([...value].filter((c) => !allowed.test(c)))].map((c) => (c === ' ' ? 'a space' : quoteVisibly(c)));
    if (bad.length > 0) {
      const words = pattern === DEFAULT_REFERENCE_PATTERN ? 'letters, digits and . _ : -' : `the characters ${one[1] as string}`;
      return `the reference ${quotedCell(value, true)} may hold only ${words}; it has ${bad.join(', ')}: remove or replace them`;
    }
  }
  return `the reference ${quotedCell(value, true)} does not have the allowed form (merchantReferenceId.pattern: ${pattern})`;
}

function tooLong(field: FieldPath, value: string, max: number): Problem | null {
  const length = codePointLength(value);
  return length > max ? { code: 'TOO_LONG', message: `${field} is ${length} characters long; the maximum is ${max}` } : null;
}

function checkAccountNumber(value: string, currency: string | null, rules: CompiledRules): Check {
  const rule = currency === null ? undefined : rules.accountRule(currency);
  if (!rule || (!rule.iban && !rule.accountPattern)) {
    return tooLong('beneficiary.accountNumber', value, rules.accountMaxLength) ?? value;
  }
  if (rule.accountPattern && !rule.accountPattern.regex.test(value)) {
    const words = formatInWords(rule.accountPattern.text, value);
    return {
      code: 'ACCOUNT_NUMBER_INVALID',
      message:
        words === null
          ? `the account number ${maskedAccount(value, true)} does not have the format of a ${currency} account number (batch.format accountRules: ${rule.accountPattern.text}); check it with the beneficiary`
          : `a ${currency} account number ${words} (${maskedAccount(value)}); check it with the beneficiary`,
    };
  }
  if (!rule.iban) return value;
  const iban = compactIban(value);
  const problem = ibanProblem(iban);
  if (problem === null) return iban;
  // The position of an odd space is counted in the cell as written, where finance looks for it.
  const ibanMasked = maskedAccount(value, false, iban);
  switch (problem.kind) {
    case 'format':
      return {
        code: 'IBAN_INVALID',
        message: `beneficiary.accountNumber ${maskedAccount(value, true, iban)} is not an IBAN (2 letters, 2 check digits, then letters and digits)`,
      };
    case 'country':
      return { code: 'IBAN_INVALID', message: `beneficiary.accountNumber ${ibanMasked}: ${problem.country} is not an IBAN country` };
    case 'length':
      return {
        code: 'IBAN_INVALID',
        message: `beneficiary.accountNumber ${ibanMasked}: a ${problem.country} IBAN has ${problem.expected} characters, this one has ${problem.found}`,
      };
    case 'checksum':
      return { code: 'IBAN_CHECKSUM', message: `beneficiary.accountNumber ${ibanMasked}: the IBAN check digits do not match (typo?)` };
  }
}

function checkBankCode(value: string, currency: string | null, rules: CompiledRules): Check {
  const rule = currency === null ? undefined : rules.accountRule(currency);
  if (!rule || (!rule.bankFormat && !rule.bankPattern)) {
    return tooLong('beneficiary.bankCode', value, rules.accountMaxLength) ?? value;
  }
  const problem = bankCodeProblem(value, rule);
  return problem ?? value;
}

function bankCodeProblem(value: string, rule: CompiledAccountRule): Problem | null {
  if (rule.bankPattern && !rule.bankPattern.regex.test(value)) {
    const words = formatInWords(rule.bankPattern.text, value);
    return {
      code: 'BANK_CODE_INVALID',
      message:
        words === null
          ? `the bank code ${quotedCell(value, true)} does not have the format of a ${rule.currency} bank code (accountRules: ${rule.bankPattern.text})`
          : `a ${rule.currency} bank code ${words} (${quotedCell(value)})`,
    };
  }
  const problem = rule.bankFormat === 'bic' ? bicProblem(value) : rule.bankFormat === 'aba' ? abaProblem(value) : null;
  // Quoted only when there is something to say (most codes are valid).
  return problem === null ? null : bankFormatProblem(value, rule, problem);
}

function bankFormatProblem(value: string, rule: CompiledAccountRule, problem: BicProblem | AbaProblem): Problem | null {
  const v = quotedCell(value);
  if (rule.bankFormat === 'bic') {
    if (problem.kind === 'format') {
      return {
        code: 'BIC_INVALID',
        message: `beneficiary.bankCode ${quotedCell(value, true)} is not a BIC (8 or 11 characters: bank, country, location, branch)`,
      };
    }
    if (problem.kind === 'country') {
      return { code: 'BIC_INVALID', message: `beneficiary.bankCode ${v}: ${problem.country} in the BIC is not a country code` };
    }
  } else if (rule.bankFormat === 'aba') {
    if (problem.kind === 'format') {
      return { code: 'ABA_INVALID', message: `beneficiary.bankCode ${quotedCell(value, true)} is not an ABA routing number (9 digits)` };
    }
    if (problem.kind === 'prefix') {
      return { code: 'ABA_INVALID', message: `beneficiary.bankCode ${v}: ${problem.prefix} is not a valid routing number prefix` };
    }
    if (problem.kind === 'checksum') {
      return { code: 'ABA_CHECKSUM', message: `beneficiary.bankCode ${v}: the ABA routing number checksum does not match (typo?)` };
    }
  }
  return null;
}

/** The payout currency when it is usable for currency-dependent rules, else null. */
function usableCurrency(value: string, rules: CompiledRules): string | null {
  return rules.payoutCurrencies.has(value) && rules.minorUnits(value) !== undefined ? value : null;
}

/** Field-specific check of a trimmed, non-empty, control-free value; `currency` is the row's usable payout currency. */
function checkField(field: FieldPath, value: string, currency: string | null, rules: CompiledRules): Check {
  switch (field) {
    case 'merchantReferenceId': {
      const long = tooLong(field, value, rules.referenceMaxLength);
      if (long) return long;
      if (!rules.referencePattern.regex.test(value)) {
        return { code: 'REFERENCE_INVALID', message: referenceProblem(value, rules.referencePattern.text) };
      }
      return value;
    }
    case 'deductionCurrency':
      return rules.deductionCurrencies.has(value)
        ? value
        : {
            code: 'DEDUCTION_CURRENCY_UNSUPPORTED',
            message: `deductionCurrency ${quotedCell(value, true)} is not supported; use one of ${[...rules.deductionCurrencies].join(', ')}`,
          };
    case 'payoutCurrency':
      if (rules.minorUnits(value) === undefined) {
        return { code: 'CURRENCY_UNKNOWN', message: `payoutCurrency ${quotedCell(value, true)} is not an ISO 4217 currency code` };
      }
      return rules.payoutCurrencies.has(value)
        ? value
        : {
            code: 'CURRENCY_UNSUPPORTED',
            message: `payoutCurrency ${quotedCell(value, true)} is not enabled; enabled: ${[...rules.payoutCurrencies].join(', ')}`,
          };
    case 'payoutAmount': {
      const format = amountFormatProblem(value);
      if (format) return format;
      if (currency !== null) {
        const range = amountRangeProblem(value, currency, rules.minorUnits(currency) ?? 0, rules.amountLimits(currency));
        if (range) return range;
      }
      return normalizeAmount(value);
    }
    case 'sender.country':
      return ISO_3166_ALPHA2.has(value)
        ? value
        : { code: 'COUNTRY_INVALID', message: `sender.country ${quotedCell(value, true)} is not an ISO 3166-1 alpha-2 country code` };
    case 'sender.idType':
      return rules.idTypes.has(value)
        ? value
        : {
            code: 'ID_TYPE_UNSUPPORTED',
            message: `sender.idType ${quotedCell(value, true)} is not one of ${[...rules.idTypes].join(', ')}`,
          };
    case 'sender.idValue':
      return tooLong(field, value, rules.idValueMaxLength) ?? value;
    case 'sender.firstName':
    case 'sender.lastName':
    case 'beneficiary.accountName':
      return tooLong(field, value, rules.nameMaxLength) ?? value;
    case 'beneficiary.accountNumber':
      return checkAccountNumber(value, currency, rules);
    case 'beneficiary.bankCode':
      return checkBankCode(value, currency, rules);
  }
}

/** Validates and normalizes one row. */
export function validateRow(input: RowInput, rules: CompiledRules): RowValidation {
  const { values, ...at } = input;
  return validateCells({ ...at, cells: FIELD_PATHS.map((field) => values[field]) }, rules);
}

/** Validates and normalizes one row given by position (validateRow's work). */
export function validateCells(input: RowCells, rules: CompiledRules): RowValidation {
  // Allocated only for a row with a problem: most rows are valid.
  let errors: RowError[] | null = null;
  // Pushed in field order, not set into an array made at its length: V8 counts such an array as having holes,
  // and JSON.stringify of the stored values then takes its slow path (each element looked up as a property).
  const normalized: string[] = [];
  const cells = input.cells;
  const currency = usableCurrency(upperCased(trimSpaces(cells[PAYOUT_CURRENCY] as string)), rules);
  for (let i = 0; i < FIELD_PATHS.length; i++) {
    const field = FIELD_PATHS[i] as FieldPath;
    const trimmed = trimSpaces(cells[i] as string);
    const value = UPPER_CASED_AT[i] ? upperCased(trimmed) : trimmed;
    let result: Check;
    if (value === '') {
      result = rules.required.has(field) ? { code: 'REQUIRED', message: `${field} is required but empty` } : '';
    } else if (isSpreadsheetError(value)) {
      result = spreadsheetErrorProblem(field, value);
    } else {
      // Checked before control characters: a leading tab or CR is named for what a spreadsheet makes of it.
      const formulaLead = FORMULA_CHECKED_AT[i] ? formulaLikeLead(value) : null;
      const control = formulaLead === null ? firstControlCharacter(value) : null;
      if (formulaLead !== null) result = formulaLikeProblem(field, formulaLead);
      else if (control) {
        result = {
          code: 'CONTROL_CHARACTER',
          message: `${field}${shown(field, value)} contains a control character (${control.description}) at position ${control.position}`,
        };
      } else if (isBlank(value)) {
        result = rules.required.has(field) ? blankProblem(field, value) : '';
      } else {
        result =
          (DAMAGED_TEXT_CHECKED_AT[i] ? damagedTextProblem(field, value) : null) ??
          (INVISIBLE_CHECKED_AT[i] ? invisibleProblem(field, value) : null) ??
          (DAMAGE_CHECKED_AT[i] ? damageProblem(field, value) : null) ??
          checkField(field, value, currency, rules);
      }
    }
    if (typeof result === 'string') {
      normalized.push(result);
    } else {
      normalized.push('');
      (errors ??= []).push({
        file: input.file,
        line: input.line,
        column: input.columns[field] ?? null,
        field,
        code: result.code,
        message: result.message,
      });
    }
  }
  return errors !== null ? { errors } : { values: normalized };
}
