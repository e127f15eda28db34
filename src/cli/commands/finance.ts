/** Finance commands: `payoutd report --since` (the reconciliation report) and `payoutd retry-file --batch`. */
import { mkdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { approvalInUse, type ResolvedConfig } from '../../config/index.js';
import { systemClock, type Clock } from '../../domain/clock.js';
import { UsageError } from '../../domain/errors.js';
import { getBatch, batchRetrySource, payoutsCreatedBetween } from '../../store/index.js';
import { outboxName } from '../../daemon/outbox.js';
import {
  outboxFileName,
  reconciliationFileName,
  reportPeriod,
  writeReconciliationReport,
  writeReconciliationXlsx,
  writeRetryFileAt,
  xlsxPathFor,
  writeRetryXlsx,
  type BatchSummary,
  type RetryFile,
} from '../../report/index.js';
import { print } from '../output.js';
import { withMigratedStore } from './status.js';

export interface ReconciliationArgs {
  /** YYYY-MM-DD (UTC) or ISO timestamp with a zone; inclusive. */
  since: string;
  /** Exclusive; default now. */
  until?: string;
  /** CSV path; default `reconciliation-<since>-<until>.csv` in the current directory. */
  out?: string;
  /** Also write the .xlsx; default `outbox.xlsx`. */
  xlsx?: boolean;
}

export interface ReconciliationOutput {
  path: string;
  totalsPath: string;
  xlsxPath: string | null;
  summary: BatchSummary;
}

function counts(summary: BatchSummary): string {
  const parts = Object.entries(summary.statusCounts).map(([status, n]) => `${status}=${n}`);
  return parts.length > 0 ? parts.join(' ') : 'none';
}

/** Writes the reconciliation report (and totals, and .xlsx when asked) and says where. */
export async function reconciliationReport(
  config: ResolvedConfig,
  args: ReconciliationArgs,
  clock: Clock = systemClock,
): Promise<ReconciliationOutput> {
  const period = reportPeriod(args.since, args.until, clock.now());
  const path = resolve(args.out ?? reconciliationFileName(period));
  return withMigratedStore(config, async (db) => {
    // With approval in use, each row carries its batch's approval audit (who approved what, when, how).
    const audit = approvalInUse(config.approval, config.limits) ? await import('../../approval/index.js') : null;
    const approvalOf = audit ? async (batchId: string) => audit.approvalAuditText(await audit.readApproval(db, batchId)) : undefined;
    const files = await writeReconciliationReport(path, payoutsCreatedBetween(db, period.sinceMs, period.untilMs), {
      bom: config.outbox.bom,
      approvalOf,
    });
    let xlsxPath: string | null = null;
    if (args.xlsx ?? config.outbox.xlsx) {
      // A second read: rows that settle in between show their newer state here; the CSV is the record.
      xlsxPath = xlsxPathFor(path);
      await writeReconciliationXlsx(xlsxPath, payoutsCreatedBetween(db, period.sinceMs, period.untilMs), {
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
    return { ...files, xlsxPath };
  });
}

/** Writes the retry file of one batch (default: `<outboxName>.retry.csv` in the outbox) and lists rows left out. */
export async function retryFile(config: ResolvedConfig, batchId: string, out: string | undefined): Promise<RetryFile> {
  return withMigratedStore(config, async (db) => {
    const batch = await getBatch(db, batchId);
    if (!batch) throw new UsageError('BATCH_NOT_FOUND', `no batch ${batchId}`);
    const path = resolve(out ?? join(config.paths.outbox, outboxFileName(outboxName(batch), 'retry')));
    // The daemon makes the outbox when it starts; this command may run before it ever did.
    if (out === undefined) await mkdir(dirname(path), { recursive: true });
    const result = await writeRetryFileAt(path, batchRetrySource(db, batchId), {
      bom: config.outbox.bom,
      referenceMaxLength: config.batch.rules.merchantReferenceId.maxLength,
    });
    if (!result.path && result.skippedCount > 0)
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
      print(
        `  line ${s.line} ${s.merchantReferenceId}: left out: ${s.retriedAs}, the reference its retry would take, is ${s.state}. If ${s.retriedAs} is no retry of it, pay it again in a file of your own with a new reference`,
      );
    }
    if (result.skippedCount > result.skipped.length) print(`  … ${result.skippedCount - result.skipped.length} more left out`);
    return result;
  });
}
