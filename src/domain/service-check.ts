/**
 * A check of a row against the payout service, owed when a webhook contradicted it: what the query's answer
 * means for the row, and what finance is told of it (result files, `payoutd status --batch`, retry files leave it
 * out). Pure: no HTTP, no SQL. The query decides (spec 1.6, spec 6 rule 3); the event is only why it is asked.
 */
import type { RowState } from './lifecycle.js';
import type { PayoutQueryAnswer } from './payout.js';

/** What a check queries: the row's payout by its id, or the row's reference (the event named another payout under it). */
export type ServiceCheckKind = 'PAYOUT' | 'REFERENCE';

/** Final states whose payout a webhook can contradict: a row paid, or not paid, by its own payout. */
export const CHECKED_FINAL_STATES: readonly RowState[] = ['PAID', 'CANCELLED'];

export interface CheckedRow {
  merchantReferenceId: string;
  /** null: a row ended without a payout, asked by its reference. */
  payoutId: string | null;
  state: RowState;
  serviceCheck: ServiceCheckKind;
}

/** A payout the service holds, as a check reports it: its id and its status as the service wrote it. */
export interface HeldPayout {
  payoutId: string;
  status: string;
}

/** Another payout the service holds under a row's reference, as a check's answer reported it. */
export interface OtherPayout {
  payoutId: string;
  status: string;
  /** As the service's record has them (decimal text); null when its record could not be read. */
  amount: string | null;
  currency: string | null;
}

/**
 * What a check's answer reported of a row, kept beside the note it told (the history entry's data): the status
 * the service reports for the row's own payout where it contradicts the row (null: it does not), and the other
 * payouts, not CANCELLED, it holds under the row's reference.
 */
export interface ServiceReport {
  own: string | null;
  others: OtherPayout[];
}

export type CheckVerdict =
  /** The service shows the row as recorded: the event is not confirmed, and nothing of the row changes. */
  | { kind: 'agrees'; detail: string; held: number }
  /** The service contradicts the row: what it reports, and what finance is told. */
  | { kind: 'contradicts'; status: string; payouts: HeldPayout[]; report: ServiceReport; note: string; held: number }
  /** The answer does not tell (payout unknown, answer partial, a record without its payout): asked again later. */
  | { kind: 'unanswered'; reason: string };

const DO_NOT_SEND = 'do not send this row again';

/** What finance is told of a row while its check is owed (kept until the service has answered). */
export function checkOwedNote(kind: ServiceCheckKind, row: { payoutId: string | null; state: RowState }, event: HeldPayout): string {
  const holds = row.payoutId === null ? 'no payout' : `payout ${row.payoutId}`;
  const asked =
    kind === 'PAYOUT'
      ? `a payout.updated event reported ${event.status} for payout ${row.payoutId}, recorded ${row.state} here`
      : `a payout.updated event named payout ${event.payoutId} (${event.status}) under this row's reference, which holds ${holds} (${row.state})`;
  return `${asked}; payoutd is asking the payout service: ${DO_NOT_SEND} and check it with the payout service before booking it`;
}

/** What finance is told of a row adopting one of several payouts its reference query found, until its check is answered. */
export function severalPayoutsNote(held: number): string {
  return `the payout service holds ${held} payouts under this row's reference; payoutd is asking the payout service about them: ${DO_NOT_SEND} and check it with the payout service before booking it`;
}

/**
 * What finance is told of a row ended without a payout whose create was answered with one after its claim ended,
 * or of any row such a create's answer was lost for (null: it may have made one).
 */
export function lateCreateNote(payoutId: string | null): string {
  const create =
    payoutId === null ? 'a create of this row whose answer was lost ended' : `a create of this row was answered with payout ${payoutId}`;
  return `${create} after its claim on the row ended; payoutd is asking the payout service about this row's reference: ${DO_NOT_SEND} and check it with the payout service before booking it`;
}

/**
 * What finance is told of a row whose reference check was owed when its own poll found the reference held for
 * another payout (REFERENCE_TAKEN): the check, which needs the row's payout, is not asked any more, and the payout
 * the event named under the reference may still be the row's own.
 */
export const REFERENCE_TAKEN_WHILE_CHECKED_NOTE =
  "a payout.updated event named another payout under this row's reference, and the payout the row was answered with " +
  `is not the row's (REFERENCE_TAKEN), so payoutd no longer asks about it: ${DO_NOT_SEND} until every payout the payout ` +
  'service holds under this reference is checked with it';

function contradictionNote(row: CheckedRow, payouts: readonly HeldPayout[]): string {
  const own = payouts.find((p) => p.payoutId === row.payoutId);
  const others = payouts.filter((p) => p.payoutId !== row.payoutId);
  const said: string[] = [];
  if (own) said.push(`the payout service now reports ${own.status} for payout ${own.payoutId}, recorded ${row.state} here`);
  if (others.length > 0) {
    const list = others.map((p) => `${p.payoutId} (${p.status})`).join(', ');
    const besides =
      row.payoutId === null ? `, recorded ${row.state} here without a payout` : ` besides payout ${row.payoutId} (recorded ${row.state})`;
    said.push(`the payout service holds payout${others.length > 1 ? 's' : ''} ${list} under this row's reference${besides}`);
  }
  return `${said.join('; ')}: ${DO_NOT_SEND}; check it with the payout service before booking it`;
}

/** How a row's note changed since the result file a corrected one supersedes. */
export type NoteChange = 'added' | 'changed' | 'withdrawn';

/** A row's note now and as the last result file showed it: how it changed, null when it did not. */
export function noteChange(note: string | null, shown: string | null): NoteChange | null {
  if (note === shown) return null;
  return shown === null ? 'added' : note === null ? 'withdrawn' : 'changed';
}

/**
 * The `correction` cell of a row in a corrected result file: what changed in it since `previous`, the file it
 * supersedes (null: the row is as that file showed it). Only a note changes: never a status or an amount.
 */
export function correctionText(row: { state: RowState; note: string | null; shown: string | null }, previous: string): string | null {
  const change = noteChange(row.note, row.shown);
  if (change === null) return null;
  const what =
    change === 'added'
      ? "a note is added to this row's reason: what the payout service says of it, or that payoutd is asking it"
      : change === 'changed'
        ? `the note of this row's reason changed; it was: ${row.shown}`
        : `the note of this row's reason is withdrawn, the payout service shows the row as recorded (${row.state}); it was: ${row.shown}`;
  // A CANCELLED row's note decides whether a retry file offers it: finance is told which way this one went.
  const retry =
    row.state !== 'CANCELLED' || change === 'changed'
      ? ''
      : change === 'added'
        ? '; it is left out of retry files written from now on: do not retry it from an earlier retry file'
        : '; retry files written from now on offer it again';
  return `supersedes ${previous}: ${what}${retry}`;
}

/** A row's outcome while the payout service's word on it is not known: payoutd is asking it, or can no longer ask. */
export const UNCONFIRMED_OUTCOME = 'UNCONFIRMED';

/**
 * A row's outcome when the service does not contradict its own payout but holds other payouts under its reference
 * besides it: the reference may be paid twice, or by another payout than the row's.
 */
export const OTHER_PAYOUTS_OUTCOME = 'OTHER_PAYOUTS';

/** A contradiction the service's answer recorded of a row: the note finance was told and what the answer reported. */
export interface Contradiction {
  note: string;
  report: ServiceReport;
}

/** A row's outcome as finance reads it beside its status, with the other payouts under its reference. */
export interface ShownOutcome {
  outcome: string;
  otherPayouts: OtherPayout[];
}

/**
 * The outcome finance reads of a row shown with `note` beside its `status` in the result file: that status when no
 * note; when the note is one of its contradictions (the latest of that text), the status the service reported for
 * the row's own payout, or OTHER_PAYOUTS when it reported only other payouts under the row's reference; else
 * UNCONFIRMED (the note says payoutd is asking, or no longer can).
 */
export function shownOutcome(status: string, note: string | null, contradictions: readonly Contradiction[]): ShownOutcome {
  if (note === null) return { outcome: status, otherPayouts: [] };
  const report = contradictions.findLast((c) => c.note === note)?.report;
  if (report === undefined) return { outcome: UNCONFIRMED_OUTCOME, otherPayouts: [] };
  const outcome = report.own ?? (report.others.length > 0 ? OTHER_PAYOUTS_OUTCOME : status);
  return { outcome, otherPayouts: report.others };
}

/** A JSON object (not an array), as stored data is read back. */
export const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
/** A stored text field, or null when it is not one. */
export const textOrNull = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/** Other payouts as stored (a report, an event's row); an entry without its payout and status is left out. */
export function otherPayoutsOf(v: unknown): OtherPayout[] {
  if (!Array.isArray(v)) return [];
  return v.flatMap((o) => {
    if (!isRecord(o) || typeof o['payoutId'] !== 'string' || typeof o['status'] !== 'string') return [];
    return [{ payoutId: o['payoutId'], status: o['status'], amount: textOrNull(o['amount']), currency: textOrNull(o['currency']) }];
  });
}

/** A report as its history entry stores it (JSON text); null when absent or not a report. */
export function serviceReportOf(json: string | null): ServiceReport | null {
  if (json === null) return null;
  let v: unknown;
  try {
    v = JSON.parse(json);
  } catch {
    // Not written by payoutd: the entry is read as one from before reports were kept.
    return null;
  }
  if (!isRecord(v) || !Array.isArray(v['others'])) return null;
  return { own: textOrNull(v['own']), others: otherPayoutsOf(v['others']) };
}

/**
 * The report of a contradiction recorded before reports were kept beside notes, read back from its note
 * (contradictionNote's words; no amounts), else the status recorded with it taken for the row's own payout's.
 */
export function reportOfNote(note: string, status: string): ServiceReport {
  const own = /now reports (\S+) for payout /.exec(note)?.[1] ?? null;
  const list = /holds payouts? (.+) under this row's reference besides /.exec(note)?.[1] ?? '';
  const others = [...list.matchAll(/(\S+) \(([^)]+)\)/g)].map((m) => ({
    payoutId: m[1] as string,
    status: m[2] as string,
    amount: null,
    currency: null,
  }));
  return own === null && others.length === 0 ? { own: status, others } : { own, others };
}

/** What the answer to a row's check means for it. */
export function judgeCheck(row: CheckedRow, answer: PayoutQueryAnswer): CheckVerdict {
  if (row.serviceCheck === 'PAYOUT' && row.payoutId !== null) {
    const rec = answer.records.find((r) => r.payoutId === row.payoutId);
    const unread = answer.unread.find((u) => u.payoutId === row.payoutId);
    const status = rec?.status ?? unread?.status ?? (unread ? 'UNREADABLE' : null);
    if (status === null) return { kind: 'unanswered', reason: `the payout service's answer holds no record of payout ${row.payoutId}` };
    if (status === row.state) return { kind: 'agrees', detail: `the payout service reports ${status} for payout ${row.payoutId}`, held: 1 };
    const payouts = [{ payoutId: row.payoutId, status }];
    return { kind: 'contradicts', status, payouts, report: { own: status, others: [] }, note: contradictionNote(row, payouts), held: 1 };
  }
  if (answer.partial === true) return { kind: 'unanswered', reason: 'the payout service said its answer was partial' };
  if (answer.unread.some((u) => u.payoutId === null)) {
    return { kind: 'unanswered', reason: "a record of the payout service's answer names no payout" };
  }
  const held = new Map<string, Omit<OtherPayout, 'payoutId'>>();
  for (const r of answer.records)
    if (r.merchantReferenceId === row.merchantReferenceId)
      held.set(r.payoutId, { status: r.status, amount: r.payoutAmount, currency: r.payoutCurrency });
  for (const u of answer.unread) {
    if (u.payoutId !== null && u.merchantReferenceId === row.merchantReferenceId && !held.has(u.payoutId))
      held.set(u.payoutId, { status: u.status ?? 'UNREADABLE', amount: null, currency: null });
  }
  // An answer without the row's own payout does not tell what the service says of it: asked again, as a payout check
  // would be, rather than taken as agreeing and a note it holds withdrawn.
  if (row.payoutId !== null && !held.has(row.payoutId))
    return { kind: 'unanswered', reason: `the payout service's answer holds no record of payout ${row.payoutId} under its reference` };
  // Another payout counts unless it is CANCELLED; the row's own only where its final state is contradicted.
  const differing = [...held]
    .filter(([id, { status }]) =>
      id === row.payoutId ? CHECKED_FINAL_STATES.includes(row.state) && status !== row.state : status !== 'CANCELLED',
    )
    .map(([payoutId, p]) => ({ payoutId, ...p }));
  if (differing.length === 0) {
    const others = [...held.keys()].filter((id) => id !== row.payoutId);
    const detail =
      others.length === 0
        ? `the payout service holds no other payout under reference ${row.merchantReferenceId}`
        : `the other payout${others.length > 1 ? 's' : ''} the payout service holds under reference ${row.merchantReferenceId} (${others.join(', ')}) ${others.length > 1 ? 'are' : 'is'} CANCELLED`;
    return { kind: 'agrees', detail, held: held.size };
  }
  const payouts = differing.map(({ payoutId, status }) => ({ payoutId, status }));
  return {
    kind: 'contradicts',
    status: (differing[0] as HeldPayout).status,
    payouts,
    // The row's own payout and the others apart: an outcome told of the row is its own payout's (shownOutcome).
    report: {
      own: differing.find((p) => p.payoutId === row.payoutId)?.status ?? null,
      others: differing.filter((p) => p.payoutId !== row.payoutId),
    },
    note: contradictionNote(row, payouts),
    held: held.size,
  };
}
