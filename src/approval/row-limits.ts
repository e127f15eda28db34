/**
 * The per-row limit (limits.perCurrency.<C>.maxRow) as a validation rule: a
 * row above it is REJECTED at intake with the reason, like any amount above
 * its bound. The lower of the rule's own maximum and the limit applies.
 */
import type { LimitsConfig } from '../config/index.js';
import { Decimal } from '../domain/money.js';
import type { ValidationRules } from '../ingest/rules/index.js';

export function rulesWithRowLimits(rules: ValidationRules, limits: LimitsConfig): ValidationRules {
  const perCurrency = { ...rules.amount.perCurrency };
  for (const [currency, l] of Object.entries(limits.perCurrency)) {
    if (l.maxRow === undefined) continue;
    const own = perCurrency[currency] ?? {};
    const max = own.max ?? rules.amount.max;
    perCurrency[currency] = { ...own, max: max !== undefined && new Decimal(max).lt(l.maxRow) ? max : l.maxRow };
  }
  return { ...rules, amount: { ...rules.amount, perCurrency } };
}
