/** What a create's answer (or failure) means for its row: a pure decision from the ApiError kind to the next state. */
import type { Logger } from 'pino';
import { ApiError, neverSent } from '../api/errors.js';
import { backoffDelay, type BackoffPolicy } from '../domain/backoff.js';
import {
  REFERENCE_TAKEN,
  deductionDiffers,
  moneySettings,
  moneyText,
  payoutDifferences,
  payoutDiffersReason,
  referenceTakenReason,
  type CreatedPayout,
  type PayoutRecord,
  type RequestedMoney,
  type UnreadRecord,
} from '../domain/payout.js';
import type { RowState } from '../domain/lifecycle.js';
import type { Clock } from '../domain/clock.js';
import { createdWhenWritten, type PayoutRowPatch, type RowMove } from '../store/index.js';

export interface CreateDecision {
  to: RowState;
  patch: PayoutRowPatch;
  event: string;
  outcome: string;
  detail: string;
  /** Hold the whole batch (insufficient balance) until this time. */
  holdBatchUntil?: number;
}

/** A create the service answered with a payout; its creation's time is read when the answer is written. */
export function decideCreated(created: CreatedPayout, clock: Clock, firstPollDelayMs: number): CreateDecision {
  const now = clock.now();
  return {
    to: 'PENDING',
    patch: {
      payoutId: created.payoutId,
      serviceStatus: 'PENDING',
      rate: created.rate,
      deductionAmount: created.deductionAmount,
      totalFee: created.totalFee,
      feeCurrency: created.feeCurrency,
      createdAtMs: createdWhenWritten(clock),
      nextPollAt: now + firstPollDelayMs,
      reasonCode: null,
      reason: null,
    },
    event: 'created',
    outcome: 'OK',
    detail: `payoutId ${created.payoutId}`,
  };
}

export interface FailureContext {
  attempt: number;
  now: number;
  retry: BackoffPolicy;
  insufficientBalanceHoldMs: number;
  random: () => number;
  /** The payout service is taken for unreachable (its circuit breaker is open). */
  serviceDown: boolean;
}

export function decideCreateFailure(err: unknown, ctx: FailureContext): CreateDecision {
  if (neverSent(err)) {
    // Provably never sent: no attempt is charged, and while the service is down the row waits for it.
    return {
      to: 'READY',
      patch: {
        nextAttemptAt: ctx.serviceDown ? ctx.now : ctx.now + backoffDelay(Math.max(1, ctx.attempt), ctx.retry, ctx.random),
        createAttempts: Math.max(0, ctx.attempt - 1),
      },
      event: 'not-sent',
      outcome: err.code,
      detail: err.message,
    };
  }
  if (!(err instanceof ApiError)) {
    // Anything unexpected while a create may have been sent: only a query may decide.
    return {
      to: 'UNKNOWN',
      patch: { nextAttemptAt: ctx.now, unknownSince: ctx.now },
      event: 'create-failed',
      outcome: 'ERROR',
      detail: 'unexpected failure; outcome unknown',
    };
  }
  const detail = err.message;
  switch (err.kind) {
    case 'rejected':
      return {
        to: 'REJECTED',
        patch: { reasonCode: err.code, reason: err.msg || err.code },
        event: 'create-rejected',
        outcome: err.code,
        detail,
      };
    case 'ambiguous':
      return {
        to: 'UNKNOWN',
        patch: { nextAttemptAt: ctx.now, unknownSince: ctx.now },
        event: 'create-unknown',
        outcome: err.code,
        detail,
      };
    case 'retryable':
      if (err.waitForBalance) {
        const until = ctx.now + ctx.insufficientBalanceHoldMs;
        return { to: 'READY', patch: { nextAttemptAt: until }, event: 'create-deferred', outcome: err.code, detail, holdBatchUntil: until };
      }
      return {
        to: 'READY',
        patch: {
          nextAttemptAt:
            // Retry-After is respected but never read as "at once": the base delay is a floor against re-send storms.
            ctx.now +
            (err.retryAfterMs !== null ? Math.max(err.retryAfterMs, ctx.retry.baseMs) : backoffDelay(ctx.attempt, ctx.retry, ctx.random)),
        },
        event: 'create-deferred',
        outcome: err.code,
        detail,
      };
    case 'auth':
      // Refused before processing: nothing was created. Try again later; the operator is told.
      return {
        to: 'READY',
        patch: { nextAttemptAt: ctx.now + backoffDelay(ctx.attempt, ctx.retry, ctx.random) },
        event: 'create-deferred',
        outcome: err.code,
        detail,
      };
  }
}

/** The columns of a row that say what the service says of its payout. */
function serviceFields(record: PayoutRecord): PayoutRowPatch {
  const cancelled = record.status === 'CANCELLED';
  return {
    serviceStatus: record.status,
    rate: record.rate,
    // The amount is in the currency the record names: kept with it, so no file shows it under another.
    deductionAmount: record.deductionAmount,
    serviceDeductionCurrency: record.deductionCurrency,
    totalFee: record.totalFee,
    feeCurrency: record.feeCurrency,
    createTime: record.createTime,
    completeTime: record.completeTime,
    reasonCode: cancelled ? 'CANCELLED' : null,
    reason: cancelled ? (record.failureReason ?? 'cancelled by the payout service') : null,
  };
}

/** The patch that adopts what the service says of a payout. */
export function adoptRecord(record: PayoutRecord, clock: Clock, firstPollDelayMs: number): { to: RowState; patch: PayoutRowPatch } {
  const now = clock.now();
  const patch = serviceFields(record);
  patch.payoutId = record.payoutId;
  // When payoutd recorded it, not the service's createTime: a report of a period already reported would miss it.
  patch.createdAtMs = createdWhenWritten(clock);
  // Adopted for its currency and amount (the reconcile compares them): proven the row's own.
  patch.payoutCheckedAt = now;
  patch.nextPollAt = record.status === 'PENDING' ? now + firstPollDelayMs : null;
  return { to: record.status, patch };
}

/**
 * The patch that adopts a payout the service holds but whose record payoutd cannot read (a status it does not
 * know, a field missing): it exists, so it is followed as PENDING until a record of it can be read.
 */
export function adoptUnread(
  record: UnreadRecord & { payoutId: string },
  clock: Clock,
  firstPollDelayMs: number,
): { to: 'PENDING'; patch: PayoutRowPatch } {
  return {
    to: 'PENDING',
    patch: {
      payoutId: record.payoutId,
      serviceStatus: record.status,
      createdAtMs: createdWhenWritten(clock),
      nextPollAt: clock.now() + firstPollDelayMs,
    },
  };
}

/** The patch of a followed payout that a query found settled; the row keeps its payout id and creation time. */
export function settledPatch(record: PayoutRecord, polled: { pollCount: number; lastPolledAt: number }): PayoutRowPatch {
  const patch = serviceFields(record);
  patch.nextPollAt = null;
  patch.pollCount = polled.pollCount;
  patch.lastPolledAt = polled.lastPolledAt;
  return patch;
}

/**
 * A row whose reference the service holds for another payout (the poller's and the reconcile's finding alike):
 * not counted as paid, final. The other payout's id goes into the reason only, and none of its figures stay
 * on the row (the create's answer may have written them): in the result file and its totals they would read
 * as this row's debit and fee.
 */
export function referenceTaken(record: PayoutRecord, requested: RequestedMoney): Pick<RowMove, 'to' | 'patch' | 'history'> {
  const reason = referenceTakenReason(record, requested);
  const noPayout: PayoutRowPatch = {
    payoutId: null,
    serviceStatus: null,
    rate: null,
    deductionAmount: null,
    serviceDeductionCurrency: null,
    totalFee: null,
    feeCurrency: null,
    createTime: null,
    completeTime: null,
    createdAtMs: null,
  };
  return {
    to: 'REJECTED',
    patch: { ...noPayout, nextPollAt: null, reasonCode: REFERENCE_TAKEN, reason },
    history: { event: 'reference-taken', outcome: REFERENCE_TAKEN, detail: reason },
  };
}

type LoggedRow = { batchId: string; line: number; merchantReferenceId: string };

/** An error line naming a row, what its record shows against what it asked, and the settings that read them. */
function logFigures(logger: Pick<Logger, 'error'>, row: LoggedRow, record: PayoutRecord, requested: RequestedMoney, message: string): void {
  const d = deductionDiffers(record, requested);
  logger.error(
    {
      batchId: row.batchId,
      line: row.line,
      merchantReferenceId: row.merchantReferenceId,
      payoutId: record.payoutId,
      asked: moneyText(requested, d),
      service: moneyText(record, d),
      settings: moneySettings(payoutDifferences(record, requested)),
    },
    message,
  );
}

/**
 * The operator's line of a row found REFERENCE_TAKEN (finance's words are in its reason): the reference, what the
 * row asked and what the service's record shows, and the settings to check should that payout be the row's own.
 */
export function logReferenceTaken(logger: Pick<Logger, 'error'>, row: LoggedRow, record: PayoutRecord, requested: RequestedMoney): void {
  const message =
    'the service holds this reference for a payout that does not match the row; not counted as its payment (REFERENCE_TAKEN): ' +
    "check that payout with the service, and the settings named if it is the row's own";
  logFigures(logger, row, record, requested, message);
}

/** The operator's line of a row settled by its own payout whose record shows other figures (payoutDiffersReason). */
export function logPayoutDiffers(logger: Pick<Logger, 'error'>, row: LoggedRow, record: PayoutRecord, requested: RequestedMoney): void {
  const message =
    `the row's own payout settled ${record.status} with other figures than the row asked: ` +
    "check that payout with the service before it is booked, and the settings named if the service shows the row's";
  logFigures(logger, row, record, requested, message);
}

/**
 * The patch of a row's own payout settled with other figures than the row asked: settled as the service says,
 * its reason telling finance to check the payout before booking it (a CANCELLED one's reason kept before it).
 */
export function settledDifferingPatch(
  record: PayoutRecord,
  requested: RequestedMoney,
  polled: { pollCount: number; lastPolledAt: number },
): PayoutRowPatch {
  return withDifferingReason(settledPatch(record, polled), record, requested);
}

/** A settled row's patch with the reason telling finance to check its payout before booking it (after a CANCELLED one's). */
export function withDifferingReason(patch: PayoutRowPatch, record: PayoutRecord, requested: RequestedMoney): PayoutRowPatch {
  const differs = payoutDiffersReason(record, requested);
  return { ...patch, reason: patch.reason ? `${patch.reason}; ${differs}` : differs };
}

/**
 * What to tell the operator of each decided move, told only for the moves that were recorded: a guarded move
 * refused (another instance moved the row first, a claim ran out) was decided from an answer that no longer holds.
 */
/** The line telling that the service holds several payouts for one reference (reconcile, and checks of webhooks). */
export function logSeveralPayouts(logger: Logger, merchantReferenceId: string, count: number): void {
  logger.error({ merchantReferenceId, count }, 'the service holds several payouts for one reference');
}

export class MoveReports {
  private readonly byMove = new Map<RowMove, (() => void)[]>();

  /** Adds a line to tell once `move` is recorded; returns the move. */
  add(move: RowMove, tell: () => void): RowMove {
    const lines = this.byMove.get(move);
    if (lines) lines.push(tell);
    else this.byMove.set(move, [tell]);
    return move;
  }

  /** Tells what was kept for the recorded moves (the same objects as were decided). */
  tell(recorded: readonly RowMove[]): void {
    for (const m of recorded) for (const line of this.byMove.get(m) ?? []) line();
  }
}
