/**
 * Operator decisions on a batch: `payoutd release` lifts a hold, `payoutd cancel` makes unsent rows NOT_SUBMITTED
 * (also of a batch still being read, so a file dropped by mistake can be stopped before its first row is sent).
 */
import type { ResolvedConfig } from '../../config/index.js';
import { PayoutdError, UsageError } from '../../domain/errors.js';
import type { HoldCode } from '../../domain/holds.js';
import { getBatch, cancelReadyRows, releaseBatchHold, type BatchRecord, type CancelOutcome, type Database } from '../../store/index.js';
import { print } from '../output.js';
import { SystemUsers } from '../../approval/index.js';
import { invokingUser } from './approval.js';
import { withCurrentStore } from './state-database.js';

/** Runs `f` on the store once the batch is found; `refused`: why the command does not apply to it as it is (null: it does). */
async function withBatch(
  config: ResolvedConfig,
  batchId: string,
  refused: (batch: BatchRecord) => UsageError | null,
  f: (db: Database) => Promise<void>,
): Promise<void> {
  await withCurrentStore(config, async (db) => {
    const batch = await getBatch(db, batchId);
    if (!batch) throw new UsageError('BATCH_NOT_FOUND', `no batch ${batchId}`);
    const refusal = refused(batch);
    if (refusal) throw refusal;
    await f(db);
  });
}

/**
 * Lifts the hold `read` (the one the operator was shown), and no other: a hold the daemon set meanwhile (the
 * file changed) is held once only, and waits for a decision of its own.
 */
export async function liftHoldAsRead(db: Database, batchId: string, read: HoldCode, now: number): Promise<void> {
  if (await releaseBatchHold(db, batchId, now, 'operator', read)) return;
  const current = await getBatch(db, batchId);
  throw new PayoutdError(
    'HOLD_CHANGED',
    `batch ${batchId}: its hold changed while this command ran (now ${current?.holdCode ?? 'none'}); nothing was released: look at it again (payoutd status --batch ${batchId})`,
  );
}

/** Only an ACTIVE batch has a hold to release. */
const notActive = (b: BatchRecord): UsageError | null =>
  b.state === 'ACTIVE' ? null : new UsageError('BATCH_NOT_ACTIVE', `batch ${b.id} is ${b.state}; only an ACTIVE batch can be released`);

export async function releaseBatch(config: ResolvedConfig, batchId: string): Promise<void> {
  await withBatch(config, batchId, notActive, async (db) => {
    const batch = await getBatch(db, batchId);
    if (batch?.approvalState === 'REQUIRED') {
      throw new PayoutdError(
        'APPROVAL_REQUIRED',
        `batch ${batchId} waits for approval: release does not replace it (payoutd approve / payoutd reject, or an approval file)`,
      );
    }
    if (!batch?.holdCode) {
      print(`batch ${batchId} is not held`);
      return;
    }
    await liftHoldAsRead(db, batchId, batch.holdCode, Date.now());
    print(`batch ${batchId}: hold ${batch.holdCode} lifted; its READY rows will be sent`);
  });
}

/** What `payoutd cancel` tells the operator: what it made NOT_SUBMITTED, and what may still be on the wire. */
export function cancelMessage(batchId: string, done: CancelOutcome): string {
  if (done.beingRead !== undefined) {
    return (
      `batch ${batchId} is being read (${done.beingRead}): cancelled before any row was sent. None of its rows will be sent:` +
      ' once the file is read, its valid rows are made NOT_SUBMITTED, its ack says the batch was cancelled and why, and its result file follows.'
    );
  }
  const claimed =
    done.claimed > 0
      ? ` ${done.claimed} row(s) were claimed for sending and may already be on the wire: each is followed to its end and reported, and one not yet sent is stopped and made NOT_SUBMITTED.`
      : '';
  const unknown =
    done.unknown > 0
      ? ` ${done.unknown} row(s) whose create's outcome is unknown are being resolved by a query of their reference: each may still end PAID, or is made NOT_SUBMITTED once the service proves it never got it.`
      : '';
  return (
    `batch ${batchId}: ${done.notSubmitted} row(s) not yet sent are now NOT_SUBMITTED.${claimed}${unknown}` +
    ' Rows already sent are followed to their end; one the service proves never to have received is not sent again.'
  );
}

export async function cancelBatch(config: ResolvedConfig, batchId: string, reason: string): Promise<void> {
  // The store refuses a batch that has ended (BATCH_ENDED), in the cancel's own transaction.
  await withBatch(
    config,
    batchId,
    () => null,
    async (db) => {
      // The approval audit names who cancelled; a user without a name on this system cancels all the same.
      const by = await invokingUser(process.env, process.getuid?.() ?? -1, new SystemUsers()).then(
        (u) => u.name,
        () => null,
      );
      const done = await cancelReadyRows(db, batchId, `cancelled by an operator: ${reason}`, Date.now(), by);
      print(cancelMessage(batchId, done));
    },
  );
}
