/** `payoutd status` and `payoutd migrate`: they import only the store, so status loads nothing of the daemon. */
import { existsSync } from 'node:fs';
import type { ResolvedConfig } from '../../config/index.js';
import { ConfigError } from '../../domain/errors.js';
import { serviceHealthLine } from '../../domain/service-health.js';
import {
  openStore,
  closeDatabase,
  assertSchemaCurrent,
  migrateToLatest,
  type Database,
  getBatch,
  listBatchErrors,
  listRecentBatches,
  type BatchRecord,
  batchStateCounts,
  latestServiceHealth,
} from '../../store/index.js';
import { print, table } from '../output.js';

/** Read-only access for status and reports: a running daemon is never disturbed. */
export async function withReadOnlyStore<T>(config: ResolvedConfig, f: (db: Database) => Promise<T>): Promise<T> {
  if (config.database.client === 'sqlite' && !existsSync(config.databaseFile)) {
    throw new ConfigError('NO_DATABASE', `no state database at ${config.databaseFile} yet (the daemon creates it; or run payoutd migrate)`);
  }
  const db = openStore(config, true);
  try {
    await assertSchemaCurrent(db);
    return await f(db);
  } finally {
    await closeDatabase(db);
  }
}

export async function migrate(config: ResolvedConfig): Promise<void> {
  const db = openStore(config);
  try {
    const applied = await migrateToLatest(db);
    print(applied.length > 0 ? `applied: ${applied.join(', ')}` : 'database schema is up to date');
  } finally {
    await closeDatabase(db);
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

/** What an operator should know about a batch at a glance. */
function noteOf(b: BatchRecord): string {
  return [stateNote(b), b.uploadContinuedAt !== null ? 'UPLOAD CONTINUED after it was taken: see --batch' : '']
    .filter((n) => n !== '')
    .join('; ');
}

function stateNote(b: BatchRecord): string {
  if (b.holdCode) return `HELD ${b.holdCode}`;
  if (b.rejectCode) return b.rejectCode;
  if (b.duplicateOf) return `duplicate of ${b.duplicateOf}`;
  if (b.state === 'RECEIVED' || b.state === 'VALIDATING') return 'being read: nothing sent yet';
  return '';
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
  await withReadOnlyStore(config, async (db) => {
    const now = Date.now();
    const batches = batchId
      ? [await getBatch(db, batchId)].filter((b): b is BatchRecord => Boolean(b))
      : await listRecentBatches(db, limit);
    if (batchId && batches.length === 0) throw new ConfigError('BATCH_NOT_FOUND', `no batch ${batchId}`);
    // A finished batch's counts come from its record; only unfinished batches have their rows counted.
    const rows = await Promise.all(batches.map(async (b) => ({ b, counts: await batchStateCounts(db, b) })));
    if (json) {
      print(
        JSON.stringify(
          rows.map(({ b: { finalCountsJson: _kept, ...b }, counts }) => ({
            ...b,
            counts,
            totals: b.totalsJson ? JSON.parse(b.totalsJson) : null,
          })),
          null,
          2,
        ),
      );
      return;
    }
    // The payout service unreachable (as the daemon's breaker last said): first, since nothing is sent meanwhile.
    for (const h of await latestServiceHealth(db)) {
      const line = serviceHealthLine(h, now);
      if (line !== null) print(line);
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
          noteOf(b),
        ]),
      ),
    );
    if (batchId && rows[0]) {
      const b = rows[0].b;
      if (b.holdReason) print(`\nheld: ${b.holdReason}`);
      if (b.rejectReason) print(`\nnot paid: ${b.rejectReason}`);
      if (b.uploadContinuedNote) print(`\nupload continued after the file was taken: ${b.uploadContinuedNote}`);
      const errors = await listBatchErrors(db, b.id);
      if (errors.length > 0) {
        print(`\nerrors (${errors.length}):`);
        for (const e of errors.slice(0, 50))
          print(`  ${e.line ? `line ${e.line}` : 'file'}${e.column ? `, ${e.column}` : ''}: ${e.code}: ${e.message}`);
        if (errors.length > 50) print(`  … ${errors.length - 50} more (payoutd status --batch ${b.id} --json)`);
      }
      // The outbox module brings the report writers; only this one line of --batch needs it.
      const { outboxName } = await import('../../daemon/outbox.js');
      const more = b.uploadContinuedAt !== null ? ',upload-continued,remainder' : '';
      print(`\noutbox files: ${config.paths.outbox}/${outboxName(b)}.{ack,result,summary${more}}.csv`);
    }
  });
}
