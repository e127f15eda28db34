/** Row validation for CSV payout batches: pure rules, reference tables, the error shape. */
export { FIELD_PATHS, isFieldPath, emptyRowValues, type FieldPath, type RowValues } from './fields.js';
export {
  FILE_ERROR_CODES,
  ROW_ERROR_CODES,
  columnLetter,
  columnPlace,
  errorPlace,
  quoteValue,
  type FileErrorCode,
  type RowError,
  type RowErrorCode,
} from './row-error.js';
export {
  BUILTIN_ACCOUNT_RULES,
  DEFAULT_REFERENCE_PATTERN,
  DEFAULT_VALIDATION_RULES,
  validationRulesSchema,
  type AccountRule,
  type ValidationRules,
  type ValidationRulesInput,
} from './options.js';
export { compileRules, type CompiledAccountRule, type CompiledRules, type WholePattern } from './compiled.js';
export { validateCells, validateRow, type RowCells, type RowInput, type RowValidation } from './validate-row.js';
export { amountFormatProblem, amountRangeProblem, type AmountLimits, type AmountProblem } from './amount.js';
export { IBAN_LENGTHS, compactIban, ibanMod97, ibanProblem, type IbanProblem } from './iban.js';
export { abaChecksumValid, abaProblem, bicProblem, type AbaProblem, type BicProblem } from './bank-codes.js';
export { ISO_4217_MINOR_UNITS } from '../../domain/iso4217.js';
export { ISO_3166_ALPHA2 } from './iso3166.js';
export { codePointLength, firstControlCharacter, formulaLikeLead, trimSpaces, upperCased } from './text.js';
