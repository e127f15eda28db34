/** Finance commands: `payoutd report --since` (the reconciliation report) and `payoutd retry-file --batch`. */
import { mkdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { approvalInUse, type ResolvedConfig } from '../../config/index.js';
import { systemClock, type Clock } from '../../domain/clock.js';
import { UsageError } from '../../domain/errors.js';
import { CONTRADICTED_ROUND, PAY_AS_OWN } from '../../domain/retry-reference.js';
import {
  getBatch,
  batchRetrySource,
  countCancelledRows,
  fixPeriodEnd,
  payoutsCreatedBetween,
  type Database,
  type ReportedPayoutRow,
} from '../../store/index.js';
import { detailsRemovedOf, outboxName } from '../../daemon/outbox.js';
import {
  downloadedResultFile,
  outboxFileName,
  reconciliationFileName,
  reportPeriod,
  requestedPeriod,
  writeReconciliationReport,
  writeReconciliationXlsx,
  writeRetryFileAt,
  xlsxPathFor,
  writeRetryXlsx,
  byRetention,
  itsRowDetails,
  type BatchSummary,
  type ReconciliationRow,
  type ReportedPrunedBatch,
  type ReportPeriod,
  type RetryFile,
} from '../../report/index.js';
import { print } from '../output.js';
import { withMigratedStore } from './state-database.js';

export interface ReconciliationArgs {
  /** YYYY-MM-DD (UTC) or ISO timestamp with a zone; inclusive. */
  since: string;
  /** Exclusive; default now; refused when later than now. */
  until?: string;
  /** CSV path; default `reconciliation-<since>-<until>.csv` in the current directory. */
  out?: string;
  /** Also write the .xlsx; default `outbox.xlsx`. */
  xlsx?: boolean;
}

export interface ReconciliationOutput {
  /** The period reported: the next report of a chain starts at its end. */
  period: ReportPeriod;
  path: string;
  totalsPath: string;
  xlsxPath: string | null;
  summary: BatchSummary;
  prunedBatches: ReportedPrunedBatch[];
}

function counts(summary: BatchSummary): string {
  const parts = Object.entries(summary.statusCounts).map(([status, n]) => `${status}=${n}`);
  return parts.length > 0 ? parts.join(' ') : 'none';
}

/** The payouts created in the period, each naming what retention removed of its batch. */
async function* createdBetween(db: Database, sinceMs: number, untilMs: number): AsyncGenerator<ReconciliationRow> {
  for await (const row of payoutsCreatedBetween(db, sinceMs, untilMs)) yield withDetailsRemoved(row);
}

function withDetailsRemoved(row: ReportedPayoutRow): ReconciliationRow {
  const batch = { id: row.batchId, fileName: row.fileName, prunedAt: row.batchPrunedAt, pruneStartedAt: row.batchPruneStartedAt };
  return { ...row, detailsRemoved: detailsRemovedOf(batch) };
}

/**
 * How long a report waits at least for the writes in flight before it fixes its end (database.busyTimeoutMs if
 * longer): a report run beside a daemon in a long write (a prune) is better late than refused.
 */
export const REPORT_END_WAIT_MS = 60_000;

/** Writes the reconciliation report (and totals, and .xlsx when asked) and says where. */
export async function reconciliationReport(
  config: ResolvedConfig,
  args: ReconciliationArgs,
  clock: Clock = systemClock,
): Promise<ReconciliationOutput> {
  const requested = requestedPeriod(args.since, args.until);
  return withMigratedStore(config, async (db) => {
    // Its end, also when --until is given, is fixed once the creations in flight are written: one stamped before
    // it is then in this report, one written after it is stamped at or after it (src/store/created-at.ts).
    const endMs = await fixPeriodEnd(db, clock, Math.max(config.database.busyTimeoutMs, REPORT_END_WAIT_MS));
    const period = reportPeriod(requested, endMs);
    const path = resolve(args.out ?? reconciliationFileName(period));
    // With approval in use, each row carries its batch's approval audit (who approved what, when, how).
    const audit = approvalInUse(config.approval, config.limits) ? await import('../../approval/index.js') : null;
    const approvalOf = audit ? async (batchId: string) => audit.approvalAuditText(await audit.readApproval(db, batchId)) : undefined;
    const files = await writeReconciliationReport(path, createdBetween(db, period.sinceMs, period.untilMs), {
      bom: config.outbox.bom,
      approvalOf,
    });
    let xlsxPath: string | null = null;
    if (args.xlsx ?? config.outbox.xlsx) {
      // A second read: rows that settle in between show their newer state here; the CSV is the record.
      xlsxPath = xlsxPathFor(path);
      await writeReconciliationXlsx(xlsxPath, createdBetween(db, period.sinceMs, period.untilMs), {
        minorUnits: config.batch.rules.minorUnits,
        timeZone: config.outbox.timeZone,
        approvalOf,
      });
    }
    const range = `${new Date(period.sinceMs).toISOString()} to ${new Date(period.untilMs).toISOString()} (end excluded)`;
    print(`payouts created ${range}: ${files.summary.rowCount} (${counts(files.summary)})`);
    print(`report: ${files.path}`);
    print(`totals: ${files.totalsPath}`);
    if (xlsxPath) print(`xlsx:   ${xlsxPath}`);
    printPrunedBatches(files.prunedBatches);
    return { ...files, period, xlsxPath };
  });
}

/** The batches of the report whose amounts retention removed: finance must take them from the result files kept before. */
function printPrunedBatches(pruned: readonly ReportedPrunedBatch[]): void {
  if (pruned.length === 0) return;
  const payouts = pruned.reduce((n, b) => n + b.payouts, 0);
  print(
    `\n${payouts} of these payouts, of ${pruned.length} batch(es), are listed WITHOUT amounts: the batches' details were removed by retention` +
      `${pruned.every((b) => b.complete) ? '' : ' (or are being removed)'}, ` +
      'so their amounts, fees and times are not in the report or its totals (see their details_removed lines). ' +
      "Take them from each batch's result file, as downloaded from the outbox before:",
  );
  for (const b of pruned)
    print(`  ${b.batchId} ${b.fileName}: ${b.payouts} payout(s), details ${byRetention(b)}; figures in ${downloadedResultFile(b)}`);
}

/** Writes the retry file of one batch (default: `<outboxName>.retry.csv` in the outbox) and lists rows left out. */
export async function retryFile(config: ResolvedConfig, batchId: string, out: string | undefined): Promise<RetryFile> {
  return withMigratedStore(config, async (db) => {
    const batch = await getBatch(db, batchId);
    if (!batch) throw new UsageError('BATCH_NOT_FOUND', `no batch ${batchId}`);
    const removed = detailsRemovedOf(batch);
    const cancelled = removed ? await countCancelledRows(db, batchId) : 0;
    if (removed && cancelled > 0) {
      // The requests of its CANCELLED rows went with the details: nothing is left to write them from.
      throw new UsageError(
        'BATCH_PRUNED',
        `batch ${batchId} (${batch.fileName}): ${itsRowDetails(removed)}, so its ${cancelled} CANCELLED row(s) ` +
          "cannot be written to a retry file: send those not paid by an earlier retry again from finance's own copy (the retry or result file downloaded from the outbox before, " +
          'or the file as sent), each under a new reference',
      );
    }
    const path = resolve(out ?? join(config.paths.outbox, outboxFileName(outboxName(batch), 'retry')));
    // The daemon makes the outbox when it starts; this command may run before it ever did.
    if (out === undefined) await mkdir(dirname(path), { recursive: true });
    const result = await writeRetryFileAt(path, batchRetrySource(db, batchId), {
      bom: config.outbox.bom,
      referenceMaxLength: config.batch.rules.merchantReferenceId.maxLength,
    });
    if (!result.path && result.skippedCount + result.withheldCount > 0)
      print(`batch ${batchId}: no retry file written: each CANCELLED row is left out, as follows`);
    else if (!result.path) print(`batch ${batchId}: no CANCELLED row needs a retry; no file written`);
    else {
      print(`retry file of batch ${batchId}: ${result.rowCount} row(s) written to ${result.path}`);
      if (config.outbox.xlsx) {
        const xlsx = await writeRetryXlsx(result.path, result.rowCount, {
          minorUnits: config.batch.rules.minorUnits,
          timeZone: config.outbox.timeZone,
        });
        print(`  and to ${xlsx}`);
      }
    }
    for (const s of result.skipped) {
      // Only the reference is known: finance may have used one shaped like a retry round for another payout.
      const round = s.later ? 'a later round of it sent directly' : 'the reference its retry would take';
      print(
        s.state === CONTRADICTED_ROUND
          ? `  line ${s.line} ${s.merchantReferenceId}: left out: ${s.retriedAs}, ${round}, is recorded final but the payout service contradicts it and it may have been paid (payoutd status shows it): check it with the payout service before paying this row again under any reference`
          : `  line ${s.line} ${s.merchantReferenceId}: left out: ${s.retriedAs}, ${round}, is ${s.state}. If ${s.retriedAs} is no retry of it, ${PAY_AS_OWN}`,
      );
    }
    if (result.skippedCount > result.skipped.length) print(`  … ${result.skippedCount - result.skipped.length} more left out`);
    for (const w of result.withheld) print(`  line ${w.line} ${w.merchantReferenceId}: left out: ${w.note}`);
    if (result.withheldCount > result.withheld.length)
      print(
        `  … ${result.withheldCount - result.withheld.length} more left out for what the payout service says of them (payoutd status --batch ${batchId})`,
      );
    return result;
  });
}
