/** Row validation for CSV payout batches: pure rules, reference tables, the error shape. */
export { FIELD_PATHS, type FieldPath } from './fields.js';
export { FILE_ERROR_CODES, ROW_ERROR_CODES, errorPlace, type RowError } from './row-error.js';
export { DEFAULT_VALIDATION_RULES, validationRulesSchema, type ValidationRules, type ValidationRulesInput } from './options.js';
export { compileRules, type CompiledRules } from './compiled.js';
export { validateRow, type RowValidation } from './validate-row.js';
export { amountFormatProblem } from './amount.js';
export { compactIban, ibanProblem } from '../../domain/iban.js';
export { abaProblem, bicProblem } from './bank-codes.js';
export { ISO_4217_MINOR_UNITS } from '../../domain/iso4217.js';
export { ISO_3166_ALPHA2 } from './iso3166.js';
export { upperCased } from './text.js';
