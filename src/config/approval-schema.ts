/**
 * The `approval:` and `limits:` options (docs/approval.md). Off by default:
 * with neither set, a dropped file is paid as before. Amounts are decimal
 * text per payout currency, never floats; a whole number in YAML is taken as
 * its digits.
 */
import { z } from 'zod';

const DECIMAL = /^\d+(?:\.\d+)?$/;
/** An amount of money in config: decimal text (a whole YAML number is taken as its digits; a fraction must be quoted). */
export const decimalAmount = z.union([z.string(), z.number()]).transform((v, ctx) => {
  if (typeof v === 'number' && !Number.isSafeInteger(v)) {
    // YAML reads 0.1 as a float, which may not be the amount written: money is never taken from one.
    ctx.addIssue({ code: 'custom', message: 'an amount with a fraction must be quoted, e.g. "2500.50" (money is never read as a float)' });
    return z.NEVER;
  }
  const text = String(v);
  if (DECIMAL.test(text)) return text;
  ctx.addIssue({ code: 'custom', message: 'expected a plain decimal such as 100000 or 2500.50 (quoted)' });
  return z.NEVER;
});
const currency = z.string().regex(/^[A-Z]{3}$/, { message: 'expected an upper-case 3-letter ISO 4217 code' });
const perCurrency = z.record(currency, decimalAmount).default(() => ({}));

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `90m`, `24h`, `2d`, or milliseconds as a number. */
export const duration = z.union([z.number().int().positive(), z.string()]).transform((v, ctx) => {
  if (typeof v === 'number') return v;
  const m = /^(\d+)\s*(ms|s|m|h|d)$/.exec(v.trim());
  if (!m) {
    ctx.addIssue({ code: 'custom', message: 'expected a duration such as 30m, 24h or 2d (or milliseconds)' });
    return z.NEVER;
  }
  return Number(m[1]) * (UNIT_MS[m[2] as string] as number);
});

const userName = z.string().regex(/^[A-Za-z0-9._][A-Za-z0-9._@-]*\$?$/, { message: 'expected a user or group name' });

export const approvalSchema = z
  .object({
    /** never: no approval (today's behaviour); always: every accepted batch waits; above-thresholds: only above `thresholds`. */
    required: z.enum(['never', 'always', 'above-thresholds']).default('never'),
    /** A batch needs approval when any is exceeded (with required: above-thresholds). */
    thresholds: z
      .object({
        /** Total of the rows to pay, per payout currency. */
        batchTotal: perCurrency,
        /** Rows to pay. */
        rows: z.number().int().positive().optional(),
        /** The largest single row, per payout currency. */
        largestRow: perCurrency,
      })
      .prefault({}),
    /**
     * A batch paying in a currency that no amount threshold (with above-thresholds) and no limit names:
     * pay (it is paid as read, as before) or require-approval (it waits, as over a threshold).
     */
    otherCurrencies: z.enum(['pay', 'require-approval']).default('pay'),
    /** Distinct approvers a batch needs: 1 (four eyes, with the uploader) or 2 (six eyes). */
    approvals: z.union([z.literal(1), z.literal(2)]).default(1),
    /** Who may approve or reject: user names, and members of Unix groups. The uploader never approves their own batch. */
    approvers: z
      .object({
        users: z.array(userName).default(() => []),
        groups: z.array(userName).default(() => []),
      })
      .prefault({}),
    /** Unix users allowed to name the approver with `payoutd approve --as NAME` (a console acting for its logged-in user). */
    serviceAccounts: z.array(userName).default(() => []),
    /** A batch not approved within this ends NOT_SUBMITTED. */
    expiresAfter: duration.default(86_400_000),
    /** Approval files larger than this are refused unread. */
    maxFileBytes: z.number().int().min(128).max(1_048_576).default(16_384),
  })
  .prefault({});

export const limitsSchema = z
  .object({
    /** A batch over `maxBatch` or `max24h`: require-approval (it waits for an approver) or refuse (not paid). */
    onExceeded: z.enum(['require-approval', 'refuse']).default('refuse'),
    /** Per payout currency: largest row (a row above it is REJECTED), batch total, and total of 24 rolling hours. */
    perCurrency: z
      .record(
        currency,
        z.strictObject({ maxRow: decimalAmount.optional(), maxBatch: decimalAmount.optional(), max24h: decimalAmount.optional() }),
      )
      .default(() => ({})),
  })
  .prefault({});

export type ApprovalConfig = z.output<typeof approvalSchema>;
export type LimitsConfig = z.output<typeof limitsSchema>;

/** Whether batches may ever wait for an approver under these options. */
export function approvalInUse(approval: ApprovalConfig, limits: LimitsConfig): boolean {
  return (
    approval.required !== 'never' ||
    approval.otherCurrencies === 'require-approval' ||
    (limits.onExceeded === 'require-approval' && Object.keys(limits.perCurrency).length > 0)
  );
}
