/** `payoutd report --batch` (a batch's interim report, now) and `payoutd validate FILE` (a dry run that pays nothing). */
import { basename, resolve } from 'node:path';
import type { ResolvedConfig } from '../../config/index.js';
import { ConfigError, UsageError } from '../../domain/errors.js';
import { BatchOutbox, detailsRemovedOf, outboxName } from '../../daemon/outbox.js';
import { AckTotalsAccumulator, ackMoneyText, downloadedResultFile, itsRowDetails, type AckCurrencyTotal } from '../../report/index.js';
import { existsSync } from 'node:fs';
import { getBatch, inFileDuplicateMessage, inFileZerosMessage, retryOriginalsOf, type BatchErrorRecord } from '../../store/index.js';
import { referenceDigits, sameButLeadingZeros } from '../../domain/leading-zeros.js';
import { parseBatchFile, type BatchParseResult, type RetryOriginals } from '../../ingest/csv/index.js';
import { errorPlace, type RowError } from '../../ingest/rules/index.js';
import { rulesWithRowLimits } from '../../approval/index.js';
import { print } from '../output.js';
import { withReadOnlyStore } from './state-database.js';

export async function reportBatch(config: ResolvedConfig, batchId: string, out: string | undefined): Promise<void> {
  await withReadOnlyStore(config, async (db) => {
    const batch = await getBatch(db, batchId);
    if (!batch) throw new UsageError('BATCH_NOT_FOUND', `no batch ${batchId}`);
    const removed = detailsRemovedOf(batch);
    // Its rows would show as paid with empty amounts: a file finance could take for the record.
    if (removed) {
      throw new UsageError(
        'BATCH_PRUNED',
        `batch ${batchId} (${batch.fileName}): ${itsRowDetails(removed)}, so a report of it would ${removed.complete ? 'have no' : 'lack'} amounts: ` +
          `no report written. Its record is ${downloadedResultFile(removed)}; payoutd status --batch ${batchId} shows its rows by state`,
      );
    }
    const outbox = new BatchOutbox(db, config.paths.outbox, config.outbox.bom, undefined, {
      xlsx: config.outbox.xlsx,
      retryFiles: false,
      minorUnits: config.batch.rules.minorUnits,
      timeZone: config.outbox.timeZone,
    });
    const path = resolve(out ?? `${outboxName(batch)}.report-${new Date().toISOString().replace(/[:.]/g, '')}.csv`);
    await outbox.writeInterim(batch, path);
    print(`report of batch ${batchId} (${batch.state}) written to ${path}`);
  });
}

/** One problem as finance reads it: `payouts.csv, line 16, column K "Account number": CODE: what is wrong`. */
function formatError(e: RowError | (BatchErrorRecord & { file: string })): string {
  const place = errorPlace(e);
  return `${e.file}${place ? `, ${place}` : ''}: ${e.code}: ${e.message}`;
}

/** The error of each row whose reference other rows of the file hold too, as the ack gives it: in the reference's column. */
function inFileDuplicateErrors(
  file: string,
  dupes: readonly [string, number[]][],
  column: BatchParseResult['referenceColumn'],
): (BatchErrorRecord & { file: string })[] {
  return dupes.flatMap(([reference, lines]) =>
    lines.map((line) => ({
      file,
      line,
      column: column?.column ?? null,
      columnIndex: column?.columnIndex ?? null,
      field: 'merchantReferenceId',
      code: 'DUPLICATE_IN_FILE',
      message: inFileDuplicateMessage(reference, line, lines),
    })),
  );
}

/**
 * The error of each row whose reference other rows of the file hold but for leading zeros (`000123` and `123`), as
 * the acceptance gives it: in the reference's column.
 */
function inFileZerosErrors(
  file: string,
  seen: ReadonlyMap<string, number[]>,
  column: BatchParseResult['referenceColumn'],
): (BatchErrorRecord & { file: string })[] {
  const byDigits = new Map<string, { reference: string; line: number }[]>();
  for (const [reference, lines] of seen) {
    const digits = referenceDigits(reference);
    if (digits === null) continue;
    const group = byDigits.get(digits) ?? [];
    group.push(...lines.map((line) => ({ reference, line })));
    byDigits.set(digits, group);
  }
  return [...byDigits.values()].flatMap((group) =>
    group.flatMap(({ reference, line }) => {
      const others = group.filter((o) => sameButLeadingZeros(reference, o.reference));
      if (others.length === 0) return [];
      const message = inFileZerosMessage(reference, others);
      const place = { line, column: column?.column ?? null, columnIndex: column?.columnIndex ?? null };
      return [{ file, ...place, field: 'merchantReferenceId', code: 'LEADING_ZEROS_LOST', message }];
    }),
  );
}

/**
 * Dry run: every error of the file, including references repeated inside it, and retry rows that lost their
 * original's leading zeros when the state database is there to say. Returns the exit code.
 */
export async function validateFile(config: ResolvedConfig, file: string): Promise<number> {
  if (config.database.client === 'sqlite' && !existsSync(config.databaseFile)) return validateWith(config, file, undefined);
  try {
    return await withReadOnlyStore(config, (db) => validateWith(config, file, (references) => retryOriginalsOf(db, references)));
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return validateWith(config, file, undefined);
  }
}

/** A valid row's line and money, kept until the file is read: a reference repeated later refuses it. */
interface ValidMoney {
  line: number;
  payoutCurrency: string | null;
  payoutAmount: string | null;
}

/**
 * The file's totals per currency as its ack would give them: a row refused (its amount, a reference repeated within
 * the file as it is or but for leading zeros, any problem) is rejected money, and under reject-file a file with a
 * problem accepts none. References used by earlier batches are not known here.
 */
function validateTotals(
  refused: AckTotalsAccumulator,
  valid: readonly ValidMoney[],
  repeatedOn: ReadonlySet<number | null>,
  refusedWhole: boolean,
): AckCurrencyTotal[] {
  for (const v of valid) {
    const verdict = refusedWhole || repeatedOn.has(v.line) ? 'REJECTED' : 'ACCEPTED';
    refused.add({ verdict, payoutCurrency: v.payoutCurrency, payoutAmount: v.payoutAmount });
  }
  return refused.currencies();
}

async function validateWith(config: ResolvedConfig, file: string, retryOriginals: RetryOriginals | undefined): Promise<number> {
  const path = resolve(file);
  const name = basename(path);
  const seen = new Map<string, number[]>();
  const rowErrors: RowError[] = [];
  const totals = new AckTotalsAccumulator();
  const valid: ValidMoney[] = [];
  const result = await parseBatchFile(path, name, {
    format: config.batch.format,
    rules: rulesWithRowLimits(config.batch.rules, config.limits),
    ...(retryOriginals ? { retryOriginals } : {}),
    onRows: async (rows) => {
      for (const r of rows) {
        rowErrors.push(...r.errors);
        if (r.merchantReferenceId) seen.set(r.merchantReferenceId, [...(seen.get(r.merchantReferenceId) ?? []), r.line]);
        // The row's money as its ack counts it: as written, else as its request sends it.
        const request = r.request;
        const money = {
          payoutCurrency: r.payoutCurrency ?? request?.payoutCurrency ?? null,
          payoutAmount: r.payoutAmount ?? request?.payoutAmount ?? null,
        };
        if (r.state === 'READY') valid.push({ line: r.line, ...money });
        else totals.add({ verdict: 'REJECTED', ...money });
      }
    },
  });
  const dupes = [...seen.entries()].filter(([, lines]) => lines.length > 1);
  const dupeErrors = [
    ...inFileDuplicateErrors(name, dupes, result.referenceColumn),
    ...inFileZerosErrors(name, seen, result.referenceColumn),
  ];
  for (const e of result.fileErrors) print(formatError(e));
  if (result.fileErrors.length === 0) {
    // By line, as the ack lists them; a repeated reference after the row's other problems.
    for (const e of [...rowErrors, ...dupeErrors].sort((a, b) => (a.line ?? 0) - (b.line ?? 0))) print(formatError(e));
  }
  const problems = result.fileErrors.length + rowErrors.length + dupeErrors.length;
  const policy = config.batch.onInvalidRows;
  print(
    `\n${name}: ${result.rowCount} rows, ${result.validCount} valid, ${result.invalidCount} invalid, ${dupes.length} repeated reference(s)`,
  );
  // A file refused whole has no rows in its ack, so no totals here either.
  if (result.fileErrors.length === 0 && result.rowCount > 0) {
    const refusedWhole = problems > 0 && policy === 'reject-file';
    print(`totals as the ack would give them (batch.onInvalidRows: ${policy}; only accepted rows are paid):`);
    for (const t of validateTotals(totals, valid, new Set(dupeErrors.map((e) => e.line)), refusedWhole))
      print(`  ${ackMoneyText(t, config.batch.rules.minorUnits)}`);
  }
  print(
    problems === 0
      ? 'OK: no errors (references used by earlier batches are checked when the file is dropped)'
      : `${problems} problem(s): this file would not be paid as is`,
  );
  return problems === 0 ? 0 : 1;
}
