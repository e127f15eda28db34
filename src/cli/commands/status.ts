/** `payoutd status` and `payoutd migrate`: they import only the store, so status loads nothing of the daemon. */
import type { ApprovalView } from '../../approval/index.js';
import type { ResolvedConfig } from '../../config/index.js';
import { duration } from '../../domain/clock.js';
import { ConfigError, UsageError } from '../../domain/errors.js';
import { serviceHealthLine } from '../../domain/service-health.js';
import {
  openStore,
  closeDatabase,
  migrateToLatest,
  getBatch,
  listBatchErrors,
  listBatchEvents,
  listStatusBatches,
  type Database,
  type BatchRecord,
  batchStateCounts,
  latestEventTimes,
  latestServiceHealth,
  serviceNoteCounts,
  serviceNotesOfBatch,
  type ServiceNoted,
  type StateCounts,
  acquireInstanceLocks,
  InstanceLockError,
  type InstanceLock,
} from '../../store/index.js';
import { estimateEnd, progressOfCounts, shownStateOf } from '../../domain/batch-events.js';
import {
  correctionAdvice,
  correctedRowText,
  correctionNoticeOf,
  correctionRetryText,
  type CorrectionNotice,
} from '../../domain/correction-notice.js';
import { isBeingRead } from '../../domain/lifecycle.js';
import { filePlace } from '../../ingest/rules/row-error.js';
import { resultFileName } from '../../report/format.js';
import { byRetention } from '../../report/retention-notes.js';
import { print, table } from '../output.js';
import { withReadOnlyStore } from './state-database.js';

export async function migrate(config: ResolvedConfig, acceptServiceChange = false): Promise<void> {
  // A daemon still running would go on creating on the old service after the change is recorded: with SQLite,
  // its locks tell; with PostgreSQL the operator stops every instance first (docs/high-availability.md).
  const lock = acceptServiceChange && config.database.client === 'sqlite' ? lockedForServiceChange(config) : null;
  const db = openStore(config);
  try {
    const applied = await migrateToLatest(db);
    print(applied.length > 0 ? `applied: ${applied.join(', ')}` : 'database schema is up to date');
    if (acceptServiceChange) {
      // Loaded only for this step: `migrate` alone imports nothing but the store.
      const { acceptServiceChange: accept } = await import('../../daemon/service-identity.js');
      print(await accept(db, config, Date.now()));
    }
  } finally {
    await closeDatabase(db);
    lock?.release();
  }
}

/** The daemon's locks, held while a service change is recorded; refused while a daemon runs on the database. */
function lockedForServiceChange(config: ResolvedConfig): InstanceLock {
  try {
    return acquireInstanceLocks(config.paths.stateDir, config.databaseFile);
  } catch (err) {
    if (!(err instanceof InstanceLockError)) throw err;
    throw new ConfigError(
      'DAEMON_RUNNING',
      `${err.message}. A service change is recorded only while payoutd is stopped: a running daemon would go on creating payouts on the old service. Stop it (systemctl stop payoutd), then run this again`,
    );
  }
}

const totalsIn = (json: string | null | undefined): Record<string, string> | null =>
  json ? (JSON.parse(json) as Record<string, string>) : null;

/** AMOUNTS: what the batch's accepted rows pay (nothing before acceptance, nor for a batch refused). */
function totals(b: BatchRecord): string {
  return Object.entries(totalsIn(b.acceptedTotalsJson) ?? {})
    .map(([cur, amount]) => `${amount} ${cur}`)
    .join(', ');
}

/** What an operator should know about a batch at a glance (`serviceNoted`: its rows the payout service contradicts). */
function noteOf(b: BatchRecord, serviceNoted: number, corrected: number): string {
  return [
    serviceNoted > 0 ? `SERVICE CONTRADICTS ${serviceNoted} row(s): do not pay them again, see --batch` : '',
    corrected > 0 ? `RESULT CORRECTED ${corrected} time(s) since it finished: book the corrections, see --batch` : '',
    stateNote(b),
    b.uploadContinuedAt !== null ? 'UPLOAD CONTINUED after it was taken: see --batch' : '',
  ]
    .filter((n) => n !== '')
    .join('; ');
}

function stateNote(b: BatchRecord): string {
  if (b.cancelledAt != null) return (b.cancelReason ?? 'cancelled').slice(0, 80);
  if (b.holdCode) return `${b.holdCode}: ${b.holdReason ?? ''}`.slice(0, 80);
  if (b.rejectCode) return b.rejectCode;
  if (b.duplicateOf) return `duplicate of ${b.duplicateOf}`;
  if (isBeingRead(b.state)) return 'being read: nothing sent yet';
  return '';
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** A batch as `status --json` shows it: plain values, times in ISO 8601, totals and counts as objects. */
export interface BatchView {
  id: string;
  /** The approval state and audit, for a batch that went through approval (src/approval). */
  approval?: ApprovalView | null;
  /**
   * How many older finished batches the listing leaves out (--limit), the same on each of its batches; 0 with
   * --batch. On each batch: the JSON stays a plain list, as scripts read it.
   */
  olderFinishedNotShown?: number;
  fileName: string;
  state: BatchRecord['state'];
  /** The state an operator reads: HELD or AWAITING_APPROVAL for an ACTIVE batch under a hold, CANCELLED for one cancelled (finished or not). */
  shownState: string;
  size: number;
  sha256: string;
  rowCount: number;
  validCount: number;
  invalidCount: number;
  duplicateOf: string | null;
  rejectCode: string | null;
  rejectReason: string | null;
  holdCode: string | null;
  holdReason: string | null;
  /** When an operator cancelled it (`payoutd cancel`), and why. */
  cancelledAt: string | null;
  cancelReason: string | null;
  hold: { code: string; reason: string | null; until: string | null; since: string | null } | null;
  counts: StateCounts;
  /** Payout amount per currency of the rows accepted, those sent or to be sent; null before acceptance, or for a batch refused. */
  totals: Record<string, string> | null;
  /** Payout amount per currency of every data row of the file, accepted or refused, whose amount could be read. */
  fileTotals: Record<string, string> | null;
  progress: { rows: number; final: number; percent: number | null; rowsPerMinute: number | null; etaAt: string | null };
  receivedAt: string;
  acceptedAt: string | null;
  ackWrittenAt: string | null;
  resultWrittenAt: string | null;
  completedAt: string | null;
  updatedAt: string;
  fileChangedAt: string | null;
  uploadContinuedAt: string | null;
  uploadContinuedNote: string | null;
  /**
   * With --batch: its rows the payout service contradicts since they were recorded, or is being asked about (a
   * webhook said otherwise), each with what finance is told.
   */
  serviceNotes?: ServiceNoted[];
  /** Corrected result files written since the batch finished (`<name>.result.corrected-<n>.csv`, the latest n). */
  resultCorrections: number;
  /** With --batch: each correction as its `corrected` event told it, oldest first, with when. */
  corrections?: (CorrectionNotice & { at: string })[];
}

export function batchView(b: BatchRecord, counts: StateCounts, holdSince: number | null, now: number): BatchView {
  const p = progressOfCounts(counts, b.state);
  const end = b.state === 'ACTIVE' ? estimateEnd(p, b.acceptedAt ?? b.receivedAt, now) : { perMinute: null, etaAt: null };
  return {
    id: b.id,
    fileName: b.fileName,
    state: b.state,
    shownState: shownStateOf(b),
    size: b.size,
    sha256: b.sha256,
    rowCount: b.rowCount,
    validCount: b.validCount,
    invalidCount: b.invalidCount,
    duplicateOf: b.duplicateOf,
    rejectCode: b.rejectCode,
    rejectReason: b.rejectReason,
    holdCode: b.holdCode,
    holdReason: b.holdReason,
    cancelledAt: iso(b.cancelledAt ?? null),
    cancelReason: b.cancelReason ?? null,
    hold: b.holdCode === null ? null : { code: b.holdCode, reason: b.holdReason, until: iso(b.holdUntil), since: iso(holdSince) },
    counts,
    totals: totalsIn(b.acceptedTotalsJson),
    fileTotals: totalsIn(b.totalsJson),
    progress: { rows: p.rows, final: p.final, percent: p.percent, rowsPerMinute: end.perMinute, etaAt: iso(end.etaAt) },
    receivedAt: iso(b.receivedAt) as string,
    acceptedAt: iso(b.acceptedAt),
    ackWrittenAt: iso(b.ackWrittenAt),
    resultWrittenAt: iso(b.resultWrittenAt),
    completedAt: iso(b.completedAt),
    updatedAt: iso(b.updatedAt) as string,
    fileChangedAt: iso(b.fileChangedAt),
    uploadContinuedAt: iso(b.uploadContinuedAt),
    uploadContinuedNote: b.uploadContinuedNote,
    resultCorrections: b.resultCorrectionsWritten ?? 0,
  };
}

/** A batch's corrections as their `corrected` events told them, oldest first. */
async function correctionsOf(db: Database, batchId: string): Promise<(CorrectionNotice & { at: string })[]> {
  return (await listBatchEvents(db, batchId))
    .filter((e) => e.type === 'corrected')
    .map((e) => ({ ...correctionNoticeOf(e.data), at: new Date(e.createdAt).toISOString() }));
}

/** --batch: each correction of the result file, the rows it changed, and what finance does with the latest. */
function printCorrections(batchId: string, corrections: readonly (CorrectionNotice & { at: string })[]): void {
  const latest = corrections.at(-1);
  if (latest === undefined) return;
  print(`\nresult file corrected since the batch finished (${corrections.length}):`);
  for (const c of corrections) {
    print(`  correction ${c.correction} (${c.correctionFile}, supersedes ${c.supersedes}), ${c.at}: ${c.rowsChanged} row(s) changed`);
    for (const r of c.rows) print(`    ${correctedRowText(r)}`);
    if (c.rowsChanged > c.rows.length) print(`    and ${c.rowsChanged - c.rows.length} more: see ${c.correctionFile}`);
    const retry = correctionRetryText(c, batchId);
    if (retry !== null) print(`    ${retry}`);
  }
  print(`  ${correctionAdvice(latest)}`);
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
    const { batches, olderFinished } = batchId
      ? { batches: [await getBatch(db, batchId)].filter((b): b is BatchRecord => Boolean(b)), olderFinished: 0 }
      : await listStatusBatches(db, limit);
    if (batchId && batches.length === 0) throw new UsageError('BATCH_NOT_FOUND', `no batch ${batchId}`);
    // A finished batch's counts come from its record; only unfinished batches have their rows counted.
    const rows = await Promise.all(batches.map(async (b) => ({ b, counts: await batchStateCounts(db, b) })));
    // The approval module only when a batch used approval (a plain status loads the store alone).
    const audit = rows.some(({ b }) => b.approvalState) ? await import('../../approval/index.js') : null;
    const approvals = new Map(
      await Promise.all(rows.map(async ({ b }) => [b.id, audit && b.approvalState ? await audit.readApproval(db, b.id) : null] as const)),
    );
    const holdsSince = await latestEventTimes(
      db,
      batches.filter((b) => b.holdCode !== null).map((b) => b.id),
      ['held', 'awaiting-approval'],
    );
    const noted = await serviceNoteCounts(
      db,
      batches.map((b) => b.id),
    );
    const serviceNotes = batchId && batches.length > 0 ? await serviceNotesOfBatch(db, batchId) : [];
    const corrections = batchId && batches.length > 0 ? await correctionsOf(db, batchId) : [];
    const views = rows.map(({ b, counts }) => ({
      ...batchView(b, counts, holdsSince.get(b.id) ?? null, now),
      approval: approvals.get(b.id) ?? null,
      olderFinishedNotShown: olderFinished,
      ...(batchId ? { serviceNotes, corrections } : {}),
    }));
    if (json) {
      print(JSON.stringify(views, null, 2));
      return;
    }
    // The payout service unreachable (as the daemon's breaker last said): first, since nothing is sent meanwhile.
    for (const h of await latestServiceHealth(db)) {
      const line = serviceHealthLine(h, now);
      if (line !== null) print(line);
    }
    if (rows.length === 0 && olderFinished === 0) {
      print('no batches yet');
      return;
    }
    print(
      table(
        ['BATCH', 'FILE', 'STATE', 'ROWS', 'DONE', 'RATE', 'ETA', 'COUNTS', 'AMOUNTS', 'AGE', 'NOTE'],
        rows.map(({ b, counts }, i) => {
          const v = views[i] as BatchView;
          const active = b.state === 'ACTIVE';
          return [
            b.id,
            b.fileName.length > 40 ? `${b.fileName.slice(0, 37)}...` : b.fileName,
            v.shownState,
            String(b.rowCount),
            v.progress.percent === null ? '-' : `${v.progress.percent.toFixed(1)}%`,
            active && v.progress.rowsPerMinute !== null ? `${v.progress.rowsPerMinute}/min` : '',
            active && v.progress.etaAt !== null ? `in ${duration(Date.parse(v.progress.etaAt) - now)}` : '',
            COUNT_ORDER.filter((s) => counts[s])
              .map((s) => `${s}=${counts[s]}`)
              .join(' '),
            totals(b),
            duration(now - b.receivedAt),
            noteOf(b, noted.get(b.id) ?? 0, v.resultCorrections),
          ];
        }),
      ),
    );
    if (olderFinished > 0) {
      print(
        `… and ${olderFinished} older finished batch(es), not shown: payoutd status --limit N shows more, payoutd status --batch ID one of them`,
      );
    }
    if (batchId && rows[0]) {
      const b = rows[0].b;
      const v = views[0] as BatchView;
      if (b.holdReason) {
        const since = v.hold?.since;
        print(`\nheld${since ? ` since ${since}` : ''}: ${b.holdReason}`);
      }
      if (b.cancelledAt != null) {
        const at = new Date(b.cancelledAt).toISOString();
        const what = isBeingRead(b.state)
          ? 'the file is still being read: none of its rows will be sent, its valid rows are made NOT_SUBMITTED once it is read'
          : 'unsent rows are NOT_SUBMITTED, sent rows are followed to their end';
        print(`\n${b.cancelReason ?? 'cancelled'} (${at}): ${what}`);
      }
      if (b.rejectReason) print(`\nnot paid: ${b.rejectReason}`);
      if (serviceNotes.length > 0) {
        print(`\nrows the payout service contradicts, or is being asked about (${noted.get(b.id) ?? serviceNotes.length}):`);
        for (const n of serviceNotes)
          print(`  line ${n.line} ${n.merchantReferenceId} (${n.state}, payout ${n.payoutId ?? '-'}): ${n.note}`);
      }
      printCorrections(b.id, corrections);
      if (b.uploadContinuedNote) print(`\nupload continued after the file was taken: ${b.uploadContinuedNote}`);
      const view = approvals.get(b.id);
      if (audit && view) {
        print(
          `\napproval: ${view.state}${view.state === 'REQUIRED' ? ` (${view.given.length} of ${view.needed}, expires ${view.expiresAt ?? '-'})` : ''}`,
        );
        print(`  uploaded by: ${audit.uploaderOf(b) ?? 'unknown'}; file SHA-256: ${view.sha256}`);
        print(`  to pay: ${audit.totalsText(view.figures.totals)} in ${view.figures.rows} row(s)`);
        for (const r of view.reasons) print(`  why: ${r.text}`);
        for (const d of view.decisions) print(`  ${audit.decisionText(d)}`);
      }
      const errors = await listBatchErrors(db, b.id);
      if (errors.length > 0) {
        print(`\nerrors (${errors.length}):`);
        for (const e of errors.slice(0, 50)) print(`  ${filePlace(e, b.fileName) ?? 'file'}: ${e.code}: ${e.message}`);
        if (errors.length > 50) print(`  … ${errors.length - 50} more (payoutd status --batch ${b.id} --json)`);
      }
      // The outbox module brings the report writers; only these lines of --batch need it.
      const { detailsRemovedOf, outboxName } = await import('../../daemon/outbox.js');
      const more = b.uploadContinuedAt !== null ? ',upload-continued,remainder' : '';
      const xlsx = config.outbox.xlsx ? ' (and .xlsx)' : '';
      const files = `${config.paths.outbox}/${outboxName(b)}.{ack,result,summary${more}}.csv${xlsx}`;
      const removed = detailsRemovedOf(b);
      if (removed) {
        print(`\noutbox files: ${files}: ${byRetention(removed)}, with the taken file and the row details`);
        print('  references, states and payout ids are kept; amounts are only in the result file downloaded from the outbox before');
      } else {
        print(`\noutbox files: ${files}`);
        // A correction recorded and not yet written is not named: its file is not in the outbox yet.
        if (v.resultCorrections > 0) {
          print(
            `  latest result: ${config.paths.outbox}/${resultFileName(outboxName(b), v.resultCorrections)}, correction ${v.resultCorrections} of the result ` +
              "file: a row's note changed since (its correction column says which), no status or amount did",
          );
        }
        print(`\ntaken file${b.archivedAt != null ? ' (archived)' : ''}: ${b.storedPath}`);
      }
    }
  });
}
