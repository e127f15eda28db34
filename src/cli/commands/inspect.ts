/**
 * Operator commands over the state database and batch files:
 * `payoutd migrate`, `payoutd status`, `payoutd report --batch`, and
 * `payoutd validate FILE` (a dry run that pays nothing).
 */
import { existsSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import type { ResolvedConfig } from '../../config/index.js';
import { ConfigError } from '../../domain/errors.js';
import { openStore } from '../../store/open.js';
import { BatchOutbox, outboxName } from '../../daemon/outbox.js';
import { assertSchemaCurrent, migrateToLatest, type Database } from '../../store/db.js';
import { getBatch, listBatchErrors, listRecentBatches, type BatchRecord } from '../../store/batches.js';
import { stateCounts } from '../../store/payouts.js';
import { parseBatchFile, type ParsedBatchRow } from '../../ingest/csv/index.js';
import type { RowError } from '../../ingest/rules/index.js';
import { print, table } from '../output.js';

/** Read-only access for status and reports: a running daemon is never disturbed. */
async function withStore<T>(config: ResolvedConfig, f: (db: Database) => Promise<T>): Promise<T> {
  if (config.database.client === 'sqlite' && !existsSync(config.databaseFile)) {
    throw new ConfigError('NO_DATABASE', `no state database at ${config.databaseFile} yet (the daemon creates it; or run payoutd migrate)`);
  }
  const db = openStore(config, true);
  try {
    await assertSchemaCurrent(db);
    return await f(db);
  } finally {
    await db.destroy();
  }
}

export async function migrate(config: ResolvedConfig): Promise<void> {
  const db = openStore(config);
  try {
    const applied = await migrateToLatest(db);
    print(applied.length > 0 ? `applied: ${applied.join(', ')}` : 'database schema is up to date');
  } finally {
    await db.destroy();
  }
}

function age(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  if (s < 172800) return `${Math.round(s / 3600)}h`;
  return `${Math.round(s / 86400)}d`;
}

function totals(b: BatchRecord): string {
  if (!b.totalsJson) return '';
  const t = JSON.parse(b.totalsJson) as Record<string, string>;
  return Object.entries(t)
    .map(([cur, amount]) => `${amount} ${cur}`)
    .join(', ');
}

const COUNT_ORDER = [
  'READY',
  'CREATING',
  'UNKNOWN',
  'PENDING',
  'PAID',
  'CANCELLED',
  'REJECTED',
  'INVALID',
  'DUPLICATE',
  'NOT_SUBMITTED',
] as const;

export async function status(config: ResolvedConfig, batchId: string | undefined, limit: number, json: boolean): Promise<void> {
  await withStore(config, async (db) => {
    const now = Date.now();
    const batches = batchId
      ? [await getBatch(db, batchId)].filter((b): b is BatchRecord => Boolean(b))
      : await listRecentBatches(db, limit);
    if (batchId && batches.length === 0) throw new ConfigError('BATCH_NOT_FOUND', `no batch ${batchId}`);
    const rows = await Promise.all(batches.map(async (b) => ({ b, counts: await stateCounts(db, b.id) })));
    if (json) {
      print(
        JSON.stringify(
          rows.map(({ b, counts }) => ({ ...b, counts, totals: b.totalsJson ? JSON.parse(b.totalsJson) : null })),
          null,
          2,
        ),
      );
      return;
    }
    if (rows.length === 0) {
      print('no batches yet');
      return;
    }
    print(
      table(
        ['BATCH', 'FILE', 'STATE', 'ROWS', 'COUNTS', 'AMOUNTS', 'AGE', 'NOTE'],
        rows.map(({ b, counts }) => [
          b.id,
          b.fileName.length > 40 ? `${b.fileName.slice(0, 37)}...` : b.fileName,
          b.state,
          String(b.rowCount),
          COUNT_ORDER.filter((s) => counts[s])
            .map((s) => `${s}=${counts[s]}`)
            .join(' '),
          totals(b),
          age(now - b.receivedAt),
          b.holdCode ? `HELD ${b.holdCode}` : b.rejectCode ? `${b.rejectCode}` : b.duplicateOf ? `duplicate of ${b.duplicateOf}` : '',
        ]),
      ),
    );
    if (batchId && rows[0]) {
      const b = rows[0].b;
      if (b.holdReason) print(`\nheld: ${b.holdReason}`);
      if (b.rejectReason) print(`\nnot paid: ${b.rejectReason}`);
      const errors = await listBatchErrors(db, b.id);
      if (errors.length > 0) {
        print(`\nerrors (${errors.length}):`);
        for (const e of errors.slice(0, 50))
          print(`  ${e.line ? `line ${e.line}` : 'file'}${e.column ? `, ${e.column}` : ''}: ${e.code}: ${e.message}`);
        if (errors.length > 50) print(`  … ${errors.length - 50} more (payoutd status --batch ${b.id} --json)`);
      }
      print(`\noutbox files: ${config.paths.outbox}/${outboxName(b)}.{ack,result,summary}.csv`);
    }
  });
}

export async function reportBatch(config: ResolvedConfig, batchId: string, out: string | undefined): Promise<void> {
  await withStore(config, async (db) => {
    const batch = await getBatch(db, batchId);
    if (!batch) throw new ConfigError('BATCH_NOT_FOUND', `no batch ${batchId}`);
    const outbox = new BatchOutbox(db, config.paths.outbox, config.outbox.bom, undefined, {
      xlsx: config.outbox.xlsx,
      retryFiles: false,
      minorUnits: config.batch.rules.minorUnits,
    });
    const path = resolve(out ?? `${outboxName(batch)}.report-${new Date().toISOString().replace(/[:.]/g, '')}.csv`);
    await outbox.writeInterim(batch, path);
    print(`report of batch ${batchId} (${batch.state}) written to ${path}`);
  });
}

function formatError(e: RowError): string {
  return `${e.file}:${e.line ?? '-'}${e.column ? ` [${e.column}]` : ''} ${e.code}: ${e.message}`;
}

/** Dry run: every error of the file, including references repeated inside it. Returns the exit code. */
export async function validateFile(config: ResolvedConfig, file: string): Promise<number> {
  const path = resolve(file);
  const name = basename(path);
  const seen = new Map<string, number[]>();
  const rowErrors: RowError[] = [];
  const result = await parseBatchFile(path, name, {
    format: config.batch.format,
    rules: config.batch.rules,
    onRows: async (rows: ParsedBatchRow[]) => {
      for (const r of rows) {
        rowErrors.push(...r.errors);
        if (r.merchantReferenceId) seen.set(r.merchantReferenceId, [...(seen.get(r.merchantReferenceId) ?? []), r.line]);
      }
    },
  });
  const dupes = [...seen.entries()].filter(([, lines]) => lines.length > 1);
  for (const e of result.fileErrors) print(formatError(e));
  if (result.fileErrors.length === 0) {
    for (const e of rowErrors) print(formatError(e));
    for (const [ref, lines] of dupes)
      print(`${name}:${lines.join(',')} [merchantReferenceId] DUPLICATE_IN_FILE: ${ref} appears on lines ${lines.join(', ')}`);
  }
  const problems = result.fileErrors.length + rowErrors.length + dupes.length;
  const sums = Object.entries(result.totals)
    .map(([c, a]) => `${a} ${c}`)
    .join(', ');
  print(
    `\n${name}: ${result.rowCount} rows, ${result.validCount} valid, ${result.invalidCount} invalid, ${dupes.length} repeated reference(s)${sums ? `; totals ${sums}` : ''}`,
  );
  print(
    problems === 0
      ? 'OK: no errors (references used by earlier batches are checked when the file is dropped)'
      : `${problems} problem(s): this file would not be paid as is`,
  );
  return problems === 0 ? 0 : 1;
}
