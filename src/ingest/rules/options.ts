/**
 * The validation rules as configuration: the zod schema the daemon config embeds and the built-ins.
 * `accountRules`, `minorUnits` and `amount.perCurrency` entries lay over the built-ins per currency (`{}` in
 * accountRules turns that currency's checks off); list settings replace the built-in list.
 */
import { z } from 'zod';
import { ALWAYS_REQUIRED_FIELDS, FIELD_PATHS } from './fields.js';
import { ISO_4217_MINOR_UNITS } from '../../domain/iso4217.js';
import { isValidPattern } from './compiled.js';

export interface AccountRule {
  accountNumber?: { pattern?: string; format?: 'iban' };
  bankCode?: { pattern?: string; format?: 'bic' | 'aba' };
}

/** Built-in account and bank-code rules per payout currency: common national formats, not a bank directory. */
export const BUILTIN_ACCOUNT_RULES: Readonly<Record<string, AccountRule>> = {
  // SEPA: IBAN (spaces allowed in the file, removed) and the bank's BIC.
  EUR: { accountNumber: { format: 'iban' }, bankCode: { format: 'bic' } },
  // US: account 4-17 digits, ABA routing number with its checksum.
  USD: { accountNumber: { pattern: '\\d{4,17}' }, bankCode: { format: 'aba' } },
  // Philippines: 10-16 digit account; BIC or a local institution code.
  PHP: { accountNumber: { pattern: '\\d{10,16}' }, bankCode: { pattern: '[A-Z0-9]{4,11}' } },
  // Indonesia: 6-20 digit account; 3-digit Bank Indonesia code (014 = BCA).
  IDR: { accountNumber: { pattern: '\\d{6,20}' }, bankCode: { pattern: '\\d{3}' } },
  // India: 9-18 digit account; IFSC (4 letters, 0, 6 alphanumerics).
  INR: { accountNumber: { pattern: '\\d{9,18}' }, bankCode: { pattern: '[A-Z]{4}0[A-Z0-9]{6}' } },
  // Brazil: 5-20 digit account (agency and check digit included); COMPE (3) or ISPB (8) code.
  BRL: { accountNumber: { pattern: '\\d{5,20}' }, bankCode: { pattern: '\\d{3}|\\d{8}' } },
  // Mexico: 18-digit CLABE; 3-digit bank code (the CLABE's first three digits).
  MXN: { accountNumber: { pattern: '\\d{18}' }, bankCode: { pattern: '\\d{3}' } },
  // UK: 8-digit account; 6-digit sort code written without dashes.
  GBP: { accountNumber: { pattern: '\\d{8}' }, bankCode: { pattern: '\\d{6}' } },
};

export const DEFAULT_REFERENCE_PATTERN = '[A-Za-z0-9._:-]+';

const patternString = z.string().min(1).refine(isValidPattern, { message: 'not a valid regular expression (JavaScript syntax, u flag)' });
const plainDecimal = z.string().regex(/^\d+(?:\.\d+)?$/, { message: 'expected a plain decimal such as 1000 or 0.01' });
const currencyCode = z.string().regex(/^[A-Z]{3}$/, { message: 'expected an upper-case 3-letter ISO 4217 code' });
const limitSchema = z.strictObject({ min: plainDecimal.optional(), max: plainDecimal.optional() });

const accountRuleSchema = z.strictObject({
  accountNumber: z.strictObject({ pattern: patternString.optional(), format: z.literal('iban').optional() }).optional(),
  bankCode: z.strictObject({ pattern: patternString.optional(), format: z.enum(['bic', 'aba']).optional() }).optional(),
});

/** `a, b and c`. */
function wordList(words: readonly string[]): string {
  return words.length < 2 ? words.join('') : `${words.slice(0, -1).join(', ')} and ${words.at(-1) ?? ''}`;
}

export const validationRulesSchema = z
  .strictObject({
    /**
     * Fields that must be non-empty; a column for a field not listed may be absent. Default: all twelve; only
     * sender and beneficiary fields may be left out (ALWAYS_REQUIRED_FIELDS).
     */
    requiredFields: z.array(z.enum(FIELD_PATHS)).default(() => [...FIELD_PATHS]),
    /** Whole-value pattern and maximum length (code points) of merchantReferenceId. */
    merchantReferenceId: z
      .strictObject({
        pattern: patternString.default(DEFAULT_REFERENCE_PATTERN),
        maxLength: z.int().min(1).max(1024).default(64),
      })
      .prefault({}),
    /** Stablecoins a row may be funded from. */
    deductionCurrencies: z
      .array(z.string().regex(/^[A-Z0-9]{2,12}$/))
      .min(1)
      .default(() => ['USDT', 'USDC']),
    /** Fiat currencies accepted; each must be in ISO 4217 or have a `minorUnits` entry. */
    payoutCurrencies: z
      .array(currencyCode)
      .min(1)
      .default(() => ['PHP', 'IDR', 'EUR', 'BRL', 'USD', 'MXN', 'INR', 'GBP']),
    /** Minor-unit digits overriding the ISO 4217 table, e.g. `{ IDR: 0 }`. */
    minorUnits: z.record(currencyCode, z.int().min(0).max(8)).default(() => ({})),
    /** Inclusive amount bounds in payout currency; `perCurrency` overrides the global ones. */
    amount: z
      .strictObject({
        min: plainDecimal.optional(),
        max: plainDecimal.optional().default('1000000000'),
        perCurrency: z.record(currencyCode, limitSchema).default(() => ({})),
      })
      .prefault({}),
    /** sender.idType values accepted (compared upper-cased). */
    idTypes: z
      .array(z.string().regex(/^[A-Z0-9_]+$/))
      .min(1)
      .default(() => ['PASSPORT', 'NATIONAL_ID', 'DRIVING_LICENSE', 'TAX_ID', 'RESIDENCE_PERMIT']),
    /** Account number and bank code rules per payout currency, laid over BUILTIN_ACCOUNT_RULES. */
    accountRules: z
      .record(currencyCode, accountRuleSchema)
      .default(() => ({}))
      .transform((user) => ({ ...BUILTIN_ACCOUNT_RULES, ...user })),
    /** Maximum length (code points) of sender/beneficiary names. */
    nameMaxLength: z.int().min(1).max(10_000).default(140),
    /** Maximum length of sender.idValue. */
    idValueMaxLength: z.int().min(1).max(10_000).default(64),
    /** Maximum length of accountNumber and bankCode where no account rule applies. */
    accountMaxLength: z.int().min(1).max(10_000).default(64),
  })
  .superRefine((rules, ctx) => {
    const missing = ALWAYS_REQUIRED_FIELDS.filter((f) => !rules.requiredFields.includes(f));
    if (missing.length > 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['requiredFields'],
        message:
          `leaves out ${wordList(missing)}; ${wordList(ALWAYS_REQUIRED_FIELDS)} must stay required, as no payout can be ` +
          `created without them (only sender and beneficiary fields may be left out); add ${wordList(missing)} back to the list`,
      });
    }
    for (const currency of rules.payoutCurrencies) {
      if (rules.minorUnits[currency] === undefined && !ISO_4217_MINOR_UNITS.has(currency)) {
        ctx.addIssue({
          code: 'custom',
          path: ['payoutCurrencies'],
          message: `payout currency ${currency} is not in ISO 4217; add its minor units under minorUnits`,
        });
      }
    }
  });

export type ValidationRules = z.output<typeof validationRulesSchema>;
export type ValidationRulesInput = z.input<typeof validationRulesSchema>;

export const DEFAULT_VALIDATION_RULES: ValidationRules = validationRulesSchema.parse({});
