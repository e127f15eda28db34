/** Validation rules ready to run (regexes compiled once, lists as sets), from the configured rules (./options.ts). */
import { ConfigError } from '../../domain/errors.js';
import { Decimal } from '../../domain/money.js';
import { ISO_4217_MINOR_UNITS } from '../../domain/iso4217.js';
import type { AmountLimits } from './amount.js';
import type { FieldPath } from './fields.js';
import type { ValidationRules } from './options.js';

/** A configured pattern as it is run: against the whole value (JavaScript syntax, u flag). Throws on a syntax error. */
function wholeRegex(source: string): RegExp {
  return new RegExp(`^(?:${source})$`, 'u');
}

/** Whether `source` compiles as a whole-value pattern (JavaScript syntax, u flag). */
export function isValidPattern(source: string): boolean {
  try {
    wholeRegex(source);
    return true;
  } catch {
    // A syntax error is exactly what we are asking about.
    return false;
  }
}

/** A whole-value pattern and its text as configured (for messages). */
export interface WholePattern {
  regex: RegExp;
  text: string;
}

export interface CompiledAccountRule {
  currency: string;
  accountPattern: WholePattern | null;
  iban: boolean;
  bankPattern: WholePattern | null;
  bankFormat: 'bic' | 'aba' | null;
}

/** Rules ready to run: regexes compiled once, lists as sets, lookups resolved. */
export interface CompiledRules {
  required: ReadonlySet<FieldPath>;
  referencePattern: WholePattern;
  referenceMaxLength: number;
  deductionCurrencies: ReadonlySet<string>;
  payoutCurrencies: ReadonlySet<string>;
  idTypes: ReadonlySet<string>;
  nameMaxLength: number;
  idValueMaxLength: number;
  accountMaxLength: number;
  /** Minor units of a currency (override, else ISO 4217); undefined when unknown. */
  minorUnits(currency: string): number | undefined;
  amountLimits(currency: string): AmountLimits;
  accountRule(currency: string): CompiledAccountRule | undefined;
}

/** The pattern compiled for whole values (as isValidPattern checks it), once. */
function wholeValue(source: string, where: string): WholePattern {
  try {
    return { regex: wholeRegex(source), text: source };
  } catch {
    throw new ConfigError('CONFIG_INVALID', `${where}: not a valid regular expression`);
  }
}

function limit(text: string | undefined): Decimal | null {
  return text === undefined ? null : new Decimal(text);
}

/** Compiles validated rules (the output of validationRulesSchema). */
export function compileRules(rules: ValidationRules): CompiledRules {
  const accountRules = new Map<string, CompiledAccountRule>();
  for (const [currency, rule] of Object.entries(rules.accountRules)) {
    accountRules.set(currency, {
      currency,
      accountPattern: rule.accountNumber?.pattern ? wholeValue(rule.accountNumber.pattern, `accountRules.${currency}.accountNumber`) : null,
      iban: rule.accountNumber?.format === 'iban',
      bankPattern: rule.bankCode?.pattern ? wholeValue(rule.bankCode.pattern, `accountRules.${currency}.bankCode`) : null,
      bankFormat: rule.bankCode?.format ?? null,
    });
  }
  const globalLimits: AmountLimits = { min: limit(rules.amount.min), max: limit(rules.amount.max) };
  const limits = new Map<string, AmountLimits>();
  for (const [currency, l] of Object.entries(rules.amount.perCurrency)) {
    limits.set(currency, {
      min: l.min === undefined ? globalLimits.min : limit(l.min),
      max: l.max === undefined ? globalLimits.max : limit(l.max),
    });
  }
  const minorUnits = new Map(ISO_4217_MINOR_UNITS);
  for (const [currency, digits] of Object.entries(rules.minorUnits)) minorUnits.set(currency, digits);
  return {
    required: new Set(rules.requiredFields),
    referencePattern: wholeValue(rules.merchantReferenceId.pattern, 'merchantReferenceId.pattern'),
    referenceMaxLength: rules.merchantReferenceId.maxLength,
    deductionCurrencies: new Set(rules.deductionCurrencies),
    payoutCurrencies: new Set(rules.payoutCurrencies),
    idTypes: new Set(rules.idTypes),
    nameMaxLength: rules.nameMaxLength,
    idValueMaxLength: rules.idValueMaxLength,
    accountMaxLength: rules.accountMaxLength,
    minorUnits: (currency) => minorUnits.get(currency),
    amountLimits: (currency) => limits.get(currency) ?? globalLimits,
    accountRule: (currency) => accountRules.get(currency),
  };
}
