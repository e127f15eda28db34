/**
 * The approval policy as pure functions: what a batch pays (its figures),
 * whether it must wait for an approver or is refused under the thresholds
 * and limits of the configuration, who may approve, and the words finance
 * and operators read about it. No IO here; ./gate.ts and ./decide.ts apply it.
 */
import type { ApprovalConfig, LimitsConfig } from '../config/index.js';
import { Decimal, decimalText } from '../domain/money.js';
import { PRIVATE_FILE_HOWTO } from './errors.js';

/** What the rows to pay of a batch add up to, per payout currency. */
export interface BatchFigures {
  totals: Record<string, string>;
  rows: number;
  largest: Record<string, string>;
}

/** Why a batch waits (or is refused): a code per rule and currency, and the words. */
export interface ApprovalReason {
  /** ALWAYS, THRESHOLD_TOTAL:PHP, THRESHOLD_ROWS, THRESHOLD_ROW:PHP, OTHER_CURRENCY:EUR, LIMIT_BATCH:PHP, LIMIT_24H:PHP, LIMIT_ROW:PHP. */
  code: string;
  text: string;
  /**
   * For a limit: the figure found over it (the row, the batch total, or the 24-hour total with this batch) and the
   * limit, as the approver was shown them, so a release can tell whether it grew since. Absent in older records.
   */
  amount?: string;
  limit?: string;
}

export interface ApprovalPolicy {
  approval: ApprovalConfig;
  limits: LimitsConfig;
}

export function emptyFigures(): BatchFigures {
  return { totals: {}, rows: 0, largest: {} };
}

const over = (amount: string | undefined, limit: string | undefined): boolean =>
  amount !== undefined && limit !== undefined && new Decimal(amount).gt(limit);

/** Totals per currency as finance reads them: `1500.5 PHP, 20 EUR`. */
export function totalsText(totals: Record<string, string>): string {
  const parts = Object.keys(totals)
    .sort()
    .map((c) => `${totals[c]} ${c}`);
  return parts.length > 0 ? parts.join(', ') : 'nothing';
}

/**
 * The limits a batch breaks, `rolling` being what the other batches of the last 24 hours (and those still
 * being paid) add up to per currency.
 */
export function limitBreaches(f: BatchFigures, limits: LimitsConfig, rolling: Record<string, string>): ApprovalReason[] {
  const out: ApprovalReason[] = [];
  for (const currency of Object.keys(f.totals).sort()) {
    const l = limits.perCurrency[currency];
    if (!l) continue;
    const total = f.totals[currency] as string;
    if (over(f.largest[currency], l.maxRow)) {
      out.push({
        code: `LIMIT_ROW:${currency}`,
        text: `a row of ${f.largest[currency]} ${currency} is above the row limit of ${l.maxRow} ${currency}`,
        amount: f.largest[currency],
        limit: l.maxRow,
      });
    }
    if (over(total, l.maxBatch)) {
      out.push({
        code: `LIMIT_BATCH:${currency}`,
        text: `the batch total of ${total} ${currency} is above the batch limit of ${l.maxBatch} ${currency}`,
        amount: total,
        limit: l.maxBatch,
      });
    }
    if (l.max24h !== undefined) {
      const earlier = rolling[currency] ?? '0';
      const with24h = decimalText(new Decimal(earlier).plus(total));
      if (over(with24h, l.max24h)) {
        out.push({
          code: `LIMIT_24H:${currency}`,
          text: `${total} ${currency} on top of ${earlier} ${currency} paid or being paid in the last 24 hours is ${with24h} ${currency}, above the 24-hour limit of ${l.max24h} ${currency}`,
          amount: with24h,
          limit: l.max24h,
        });
      }
    }
  }
  return out;
}

/** The thresholds a batch is above (approval.required: above-thresholds), or ALWAYS. */
export function thresholdReasons(f: BatchFigures, approval: ApprovalConfig): ApprovalReason[] {
  if (approval.required === 'never') return [];
  if (approval.required === 'always') return [{ code: 'ALWAYS', text: 'every batch needs approval (approval.required: always)' }];
  const t = approval.thresholds;
  const out: ApprovalReason[] = [];
  for (const currency of Object.keys(f.totals).sort()) {
    if (over(f.totals[currency], t.batchTotal[currency])) {
      out.push({
        code: `THRESHOLD_TOTAL:${currency}`,
        text: `the total of ${f.totals[currency]} ${currency} is above the approval threshold of ${t.batchTotal[currency]} ${currency}`,
      });
    }
    if (over(f.largest[currency], t.largestRow[currency])) {
      out.push({
        code: `THRESHOLD_ROW:${currency}`,
        text: `a row of ${f.largest[currency]} ${currency} is above the approval threshold of ${t.largestRow[currency]} ${currency} for one row`,
      });
    }
  }
  if (t.rows !== undefined && f.rows > t.rows) {
    out.push({ code: 'THRESHOLD_ROWS', text: `${f.rows} rows to pay is above the approval threshold of ${t.rows} rows` });
  }
  return out;
}

/**
 * The payout currencies whose batch total the policy bounds: a total threshold (when thresholds apply), or a
 * batch or 24-hour limit. A row limit or row threshold alone lets any total through, so it covers nothing.
 */
export function namedCurrencies(approval: ApprovalConfig, limits: LimitsConfig): string[] {
  const t = approval.required === 'above-thresholds' ? Object.keys(approval.thresholds.batchTotal) : [];
  const l = Object.keys(limits.perCurrency).filter((c) => {
    const entry = limits.perCurrency[c];
    return entry?.maxBatch !== undefined || entry?.max24h !== undefined;
  });
  return [...new Set([...t, ...l])].sort();
}

/** With approval.otherCurrencies: require-approval, the currencies of a batch that nothing in the policy names. */
export function otherCurrencyReasons(f: BatchFigures, policy: ApprovalPolicy): ApprovalReason[] {
  const { approval, limits } = policy;
  // Under always every batch waits already.
  if (approval.otherCurrencies !== 'require-approval' || approval.required === 'always') return [];
  const named = new Set(namedCurrencies(approval, limits));
  return Object.keys(f.totals)
    .sort()
    .filter((c) => !named.has(c))
    .map((c) => ({
      code: `OTHER_CURRENCY:${c}`,
      text: `it pays ${f.totals[c]} ${c}, a currency whose batch total no threshold or limit bounds (approval.otherCurrencies: require-approval)`,
    }));
}

/**
 * Said at start when the policy bounds totals in some currencies but not every enabled payout currency
 * (`enabled`, batch.rules.payoutCurrencies; null when any currency may be paid): a batch in one of the
 * others is held by no total. Null when none escapes so: the policy sets no amounts at all, every batch waits,
 * otherCurrencies holds the rest, or every enabled currency is covered.
 */
export function otherCurrenciesWarning(approval: ApprovalConfig, limits: LimitsConfig, enabled: readonly string[] | null): string | null {
  if (approval.required === 'always' || approval.otherCurrencies === 'require-approval') return null;
  const thresholds = approval.required === 'above-thresholds' ? approval.thresholds : { batchTotal: {}, largestRow: {} };
  const mentioned = [...Object.keys(thresholds.batchTotal), ...Object.keys(thresholds.largestRow), ...Object.keys(limits.perCurrency)];
  // With no amount set anywhere the operator has chosen no amount rules: nothing to warn of.
  if (mentioned.length === 0) return null;
  const covered = namedCurrencies(approval, limits);
  const uncovered = enabled === null ? null : [...new Set(enabled)].filter((c) => !covered.includes(c)).sort();
  if (uncovered !== null && uncovered.length === 0) return null;
  const rows =
    approval.required === 'above-thresholds' && approval.thresholds.rows !== undefined
      ? ' (approval.thresholds.rows still counts its rows)'
      : '';
  const which =
    uncovered === null
      ? `any payout currency but ${covered.length > 0 ? covered.join(', ') : 'none'}`
      : `${uncovered.join(', ')} (enabled in batch.rules.payoutCurrencies)`;
  const set = covered.length > 0 ? `, set now only for ${covered.join(', ')}` : ', set now for no currency';
  return (
    `no approval threshold or limit bounds the total of a batch paying ${which}: such a batch is not held for ` +
    `approval nor limited by its total, and is paid as read${rows}; bound each of these currencies with ` +
    `approval.thresholds.batchTotal or a maxBatch or max24h under limits.perCurrency${set}, or set ` +
    `approval.otherCurrencies: require-approval to have such a batch wait for an approver (docs/approval.md)`
  );
}

/** What the policy makes of a batch: let go, wait for `reasons`, or refused for `reasons`. */
export type Assessment = { kind: 'release' } | { kind: 'wait'; reasons: ApprovalReason[] } | { kind: 'refuse'; reasons: ApprovalReason[] };

export function assess(f: BatchFigures, policy: ApprovalPolicy, rolling: Record<string, string>): Assessment {
  const breaches = limitBreaches(f, policy.limits, rolling);
  if (breaches.length > 0 && policy.limits.onExceeded === 'refuse') return { kind: 'refuse', reasons: breaches };
  const reasons = [...thresholdReasons(f, policy.approval), ...otherCurrencyReasons(f, policy), ...breaches];
  return reasons.length > 0 ? { kind: 'wait', reasons } : { kind: 'release' };
}

/** A limit found at release beyond what the approvals were given for, and the reason they were shown for it, if any. */
export interface WorseBreach {
  now: ApprovalReason;
  approved: ApprovalReason | undefined;
}

/**
 * The breaches found at release that are worse than what the approvers were shown: a limit not named then, or
 * one whose figure grew since (the 24-hour total, as other batches were let go meanwhile). A reason recorded
 * without its figure counts as worse: what its approvers saw cannot be compared.
 */
export function worseThanApproved(breaches: ApprovalReason[], approved: ApprovalReason[]): WorseBreach[] {
  const byCode = new Map(approved.map((r) => [r.code, r]));
  return breaches
    .map((now) => ({ now, approved: byCode.get(now.code) }))
    .filter((w) => !w.approved || w.approved.amount === undefined || w.now.amount === undefined || over(w.now.amount, w.approved.amount));
}

/** A worse breach in words: what it is now, and what was approved when it grew. */
export function worseText(w: WorseBreach): string {
  if (!w.approved) return w.now.text;
  const currency = w.now.code.split(':')[1] ?? '';
  const was = w.approved.amount === undefined ? 'a figure not recorded' : `${w.approved.amount} ${currency}`;
  return `${w.now.text} (approved at ${was})`;
}

/** Whether a reason is a limit's (checked again at release), not a threshold's. */
export const isLimitReason = (r: ApprovalReason): boolean => r.code.startsWith('LIMIT_');

/** Whether a user may approve under the policy: named, or in a named group. */
export function mayApprove(approval: ApprovalConfig, user: string, groups: readonly string[]): boolean {
  return approval.approvers.users.includes(user) || groups.some((g) => approval.approvers.groups.includes(g));
}

export interface WaitingBatch {
  id: string;
  sha256: string;
  figures: BatchFigures;
  reasons: ApprovalReason[];
  needed: number;
  expiresAt: number;
  /** False when no uploader was recorded for the batch's file: then no approval of it can be applied. */
  uploaderKnown: boolean;
  /** The approval round, from 1: an approval names it, and one of an earlier round is refused. */
  round: number;
}

/** The hold's words: shown at the top of the ack and by `payoutd status`, so they say what to do. */
export function awaitingApprovalText(b: WaitingBatch): string {
  const who = b.needed === 2 ? 'two approvers (not the uploader, not the same person twice)' : 'an approver other than the uploader';
  const by = new Date(b.expiresAt).toISOString();
  const head = b.uploaderKnown
    ? `AWAITING APPROVAL: nothing of this batch is paid until ${who} approves it, by ${by}; `
    : // Said at once, not at approval time: else approvers learn it only when refused, and the batch waits out its expiry.
      `AWAITING APPROVAL, WHICH CANNOT BE GIVEN: no uploader is known for this file (others could write it when it was ` +
      `taken: a second hard link, or writable by group or others; or payoutd's own file with no console upload recorded; ` +
      `the log says which), so every approval of it is refused (APPROVAL_UPLOADER_UNKNOWN) and nothing of it is paid; ` +
      `unless rejected or cancelled it ends NOT_SUBMITTED at ${by}. What to do: reject it (payoutd reject --batch ${b.id} ` +
      `--reason ...) or cancel it (payoutd cancel --batch ${b.id}), and send the rows again in a new file (the same bytes ` +
      `again are refused as a duplicate of this batch), dropped by its uploader, in the console or ${PRIVATE_FILE_HOWTO}; `;
  const todo = b.uploaderKnown
    ? `To approve (approval round ${b.round}), drop a file named ${b.id}.approve into the approvals folder holding the lines "decision: approve", "batch: ${b.id}"` +
      `, "sha256: ${b.sha256}" and "round: ${b.round}" (or run: payoutd approve --batch ${b.id} --round ${b.round}); to reject, ${b.id}.reject with "decision: reject", the same ` +
      `two lines and "reason: ..." (or payoutd reject --batch ${b.id} --reason ...)`
    : `To reject by file, drop ${b.id}.reject into the approvals folder holding the lines "decision: reject", "batch: ${b.id}", ` +
      `"sha256: ${b.sha256}" and "reason: ..."`;
  return (
    head +
    `why: ${b.reasons.map((r) => r.text).join('; ')}. ` +
    `To pay: ${totalsText(b.figures.totals)} in ${b.figures.rows} row(s). File SHA-256: ${b.sha256}. ` +
    todo
  );
}
