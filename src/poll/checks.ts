/**
 * ServiceChecks: the queries a webhook made owed (src/webhook/receiver.ts), asked through the poller's client. A
 * final row whose payout the event contradicted is asked about by its payoutId, a row whose reference the event
 * named with another payout by its reference. The answer decides (spec 6 rule 3): a row the service contradicts
 * keeps a note (result files, `payoutd status --batch`) and stays out of retry files; one it shows as recorded
 * is left as it was. Until the service has answered, the row stays out of retry files and is asked again.
 */
import type { Logger } from 'pino';
import { isApiError } from '../api/errors.js';
import type { Clock } from '../domain/clock.js';
import type { PayoutQueryAnswer, PayoutService } from '../domain/payout.js';
import { judgeCheck, type CheckVerdict } from '../domain/service-check.js';
import { type CheckTarget, type Database, type RowMove, applyRowMoves, dueServiceChecks, rescheduleServiceChecks } from '../store/index.js';
import { logSeveralPayouts } from '../submit/outcome.js';

export interface ServiceChecksDeps {
  db: Database;
  service: PayoutService;
  clock: Clock;
  logger: Logger;
}

export interface ServiceChecksOptions {
  /** Ids (or references) per query call. */
  queryMaxIds: number;
  /** A failed query is asked again after this long (as a failed poll is). */
  minIntervalMs: number;
  /** An answer that does not tell is asked again after this long. */
  maxIntervalMs: number;
}

export class ServiceChecks {
  constructor(
    private readonly deps: ServiceChecksDeps,
    private readonly o: ServiceChecksOptions,
  ) {}

  /** Asks the service about the rows whose check is due; returns the query calls made. */
  async runDue(signal: AbortSignal): Promise<number> {
    const { db, clock, service } = this.deps;
    // The service is unreachable: the checks stay due, and the breaker's probe finds when it is back.
    if (signal.aborted || service.available?.() === false) return 0;
    const due = await dueServiceChecks(db, clock.now(), this.o.queryMaxIds);
    if (due.length === 0) return 0;
    let calls = 0;
    const byPayout = due.filter((r) => r.serviceCheck === 'PAYOUT');
    const byReference = due.filter((r) => r.serviceCheck === 'REFERENCE');
    if (byPayout.length > 0) {
      calls++;
      await this.ask(byPayout, () => service.queryByPayoutIds([...new Set(byPayout.flatMap((r) => r.payoutId ?? []))], signal));
    }
    if (byReference.length > 0) {
      calls++;
      await this.ask(byReference, () => service.queryByReferences([...new Set(byReference.map((r) => r.merchantReferenceId))], signal));
    }
    return calls;
  }

  private async ask(rows: CheckTarget[], query: () => Promise<PayoutQueryAnswer>): Promise<void> {
    const { db, clock, logger } = this.deps;
    let answer: PayoutQueryAnswer;
    try {
      answer = await query();
    } catch (err) {
      logger.warn(
        {
          err: isApiError(err) ? err.toLog() : { code: 'UNEXPECTED' },
          rows: rows.map((r) => ({ batchId: r.batchId, line: r.line, merchantReferenceId: r.merchantReferenceId, payoutId: r.payoutId })),
        },
        'could not ask the payout service about rows a payout.updated event contradicted; they stay out of retry files; will ask again',
      );
      await rescheduleServiceChecks(db, rows, clock.now() + this.o.minIntervalMs);
      return;
    }
    for (const row of rows) await this.record(row, judgeCheck(row, answer));
  }

  /** Records what the answer means for one row, and tells it once recorded. */
  private async record(row: CheckTarget, verdict: CheckVerdict): Promise<void> {
    const { db, clock, logger } = this.deps;
    const now = clock.now();
    const fields = { batchId: row.batchId, line: row.line, merchantReferenceId: row.merchantReferenceId, payoutId: row.payoutId };
    if (verdict.kind === 'unanswered') {
      logger.warn(
        { ...fields, state: row.state, check: row.serviceCheck, reason: verdict.reason },
        'the payout service did not tell what a payout.updated event said of this row; it stays out of retry files; will ask again',
      );
      await rescheduleServiceChecks(db, [row], now + this.o.maxIntervalMs);
      return;
    }
    const several = verdict.held > 1;
    const move: RowMove = {
      row,
      from: row.state,
      to: row.state,
      patch: {
        serviceCheck: null,
        serviceCheckAt: null,
        serviceNote: verdict.kind === 'contradicts' ? verdict.note : null,
        serviceNotedAt: now,
      },
      // What only the log would say is kept off the history: the row is as it was.
      history:
        verdict.kind === 'contradicts'
          ? { event: 'service-contradicts', outcome: verdict.status, detail: verdict.note, data: JSON.stringify(verdict.report) }
          : several
            ? {
                event: 'service-checked',
                outcome: 'SEVERAL_PAYOUTS',
                detail: `${verdict.detail}; the service holds ${verdict.held} payouts for this reference`,
              }
            : null,
      still: { payoutId: row.payoutId, serviceCheck: row.serviceCheck, serviceCheckRound: row.serviceCheckRound },
    };
    // A check made owed again while this query was out (a later event, of any kind) may be about what the service
    // did since: it stays owed, and is asked again, rather than closed by this older answer.
    if ((await applyRowMoves(db, [move], now)) === 0) {
      logger.info(
        { ...fields, state: row.state, check: row.serviceCheck },
        'the row changed while the payout service was being asked (another payout.updated event, or its poll): its check stays owed and is asked again',
      );
      return;
    }
    if (several) logSeveralPayouts(logger, row.merchantReferenceId, verdict.held);
    if (verdict.kind === 'agrees') {
      logger.info(
        { ...fields, state: row.state, check: row.serviceCheck, answer: verdict.detail },
        row.serviceNoteShown === null
          ? `the payout service shows this row as recorded (${row.state}): the payout.updated event is not confirmed; nothing changes`
          : `the payout service shows this row as recorded (${row.state}): the payout.updated event is not confirmed; ` +
              "the note the batch's result file shows of it is withdrawn by a corrected result file",
      );
      return;
    }
    logger.error(
      { ...fields, state: row.state, reportedStatus: verdict.status, payouts: verdict.payouts },
      `THE PAYOUT SERVICE CONTRADICTS A ROW RECORDED ${row.state}: ${verdict.note}`,
    );
  }
}
