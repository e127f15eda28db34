/**
 * BatchIntake: where a dropped CSV file becomes payout rows. A claimed file
 * gets a batch record, is recognized when its bytes repeat an earlier batch,
 * is read and validated row by row into the database, and is then accepted
 * (its rows become READY and hold their references) or rejected as a whole.
 * Finance gets an acknowledgement file either way. Reading is restartable:
 * a batch interrupted mid-read is read again from the start.
 */
import { open, readdir, stat } from 'node:fs/promises';
import { createReadStream } from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import { basename, extname, join } from 'node:path';
import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.js';
import {
  type Database,
  claimBatchLease,
  clearBatchContents,
  findBatchByStoredPath,
  findFirstBySha,
  getBatch,
  insertBatch,
  insertBatchErrors,
  receivedBatch,
  updateBatch,
  type BatchErrorRecord,
  type BatchRecord,
  acceptBatchRows,
  type InvalidRowsPolicy,
  insertRowsWhileReading,
  type NewPayoutRow,
  holdBatch,
} from '../store/index.js';
import { BatchReadError, type BatchFormatOptions } from './csv/index.js';
import { compileRules, type CompiledRules, type RowError, type ValidationRules } from './rules/index.js';
import { moveAside, verifyUnchanged, type ClaimedFile } from './inbox/index.js';
import {
  readBatchInParts,
  readBatchInThread,
  removeAckDrafts,
  removeAllAckDrafts,
  removeBatchAckDrafts,
  type BatchRead,
  type BatchReadOptions,
  type PartsSettings,
  type ReadRows,
  type ReaderThreads,
} from './read/index.js';

export interface IntakeOptions {
  format: BatchFormatOptions;
  rules: ValidationRules;
  onInvalidRows: InvalidRowsPolicy;
  /** Where refused files are parked with a reason file. */
  rejectedDir: string;
  /** Where a batch being read drafts its acknowledgement (this instance's own state directory). */
  readingDir: string;
  /** Reading large files in parts on reader threads (config `batch.read`); absent: every file in this thread. */
  read?: PartsSettings;
  /** Reader threads started ahead of each file (the daemon's; src/ingest/read/reader-threads.ts); absent: a read starts its own. */
  readers?: ReaderThreads;
  /** This instance, and how long its hold on a batch being read lasts without renewal. */
  instanceId: string;
  leaseMs: number;
  /** Stops a read in progress (shutdown); the batch stays VALIDATING and is read again next time. */
  signal?: AbortSignal;
}

/** The pieces of the outbox and balance check the intake calls (kept abstract: no report or API details here). */
export interface IntakeEffects {
  /** The acknowledgement: from the stored rows, or from the drafts written while the file was read (when exact). */
  writeAck(batch: BatchRecord, fileRejection?: string, drafts?: readonly string[]): Promise<string>;
  writeFileRejection(batch: BatchRecord, reason: string): Promise<string>;
  writeResult(batch: BatchRecord): Promise<unknown>;
  checkBalance?(batchId: string): Promise<{ ok: boolean; reason: string | null }>;
  balanceRecheckMs: number;
}

export interface IntakeDeps {
  db: Database;
  clock: Clock;
  logger: Logger;
  effects: IntakeEffects;
  /** Called once a chunk of rows is committed while the batch is still being read (the chaos tests' kill point). */
  afterChunkStored?: () => void;
}

const CSV_EXTENSIONS = new Set(['.csv', '.txt', '']);

/** One transaction (one disk sync) per this many rows: a million-row file costs ~100 syncs. (Exported for bench/.) */
export const ROWS_PER_TRANSACTION = 10_000;
/** Rows per hand-over from a reader (the parser hands it fewer at a time: PARSED_ROWS_AT_A_TIME, src/ingest/read). */
const PARSE_CHUNK_ROWS = 1_000;

/**
 * A row as read, as the payouts table stores it. A class, not an object literal: the intake's thread makes
 * one for every row and keeps them until their transaction is stored, and V8 watches each object literal's
 * place in the code: finding most of those made since its last collection still alive, it makes them in
 * the old generation from then on (allocation-site pretenuring), where each keeps its strings alive until
 * a full collection. In about one read of a million rows in two that took the intake's heap from 52 to
 * 112-132 MB and the peak RSS over its budget (254-292 MB against 195-203).
 */
class StoredRow implements NewPayoutRow {
  readonly state: 'READY' | 'INVALID';
  constructor(
    readonly batchId: string,
    readonly line: number,
    readonly merchantReferenceId: string,
    readonly requestValues: string | null,
    readonly payoutCurrency: string | null,
    readonly payoutAmount: string | null,
    readonly deductionCurrency: string | null,
    readonly reasonCode: string | null,
    readonly reason: string | null,
  ) {
    this.state = requestValues !== null ? 'READY' : 'INVALID';
  }
}

/** Rows as read, as the payouts table stores them. (Exported for bench/: it stores the same rows with no reading.) */
export function storedForm(batchId: string, rows: ReadRows): NewPayoutRow[] {
  const stored: NewPayoutRow[] = [];
  for (let i = 0; i < rows.lines.length; i++) {
    stored.push(
      new StoredRow(
        batchId,
        rows.lines[i] as number,
        rows.references[i] as string,
        rows.requests[i] ?? null,
        rows.payoutCurrencies[i] ?? null,
        rows.payoutAmounts[i] ?? null,
        rows.deductionCurrencies[i] ?? null,
        rows.reasonCodes[i] ?? null,
        rows.reasons[i] ?? null,
      ),
    );
  }
  return stored;
}

/** A batch id finance can read and sort: B<date>-<time>-<random>. */
export function newBatchId(now: number): string {
  const iso = new Date(now).toISOString();
  return `B${iso.slice(0, 10).replaceAll('-', '')}-${iso.slice(11, 19).replaceAll(':', '')}-${randomBytes(3).toString('hex')}`;
}

function toErrorRecord(e: RowError): BatchErrorRecord {
  return { line: e.line ?? null, column: e.column ?? null, field: e.field ?? null, code: e.code, message: e.message };
}

function describeErrors(errors: RowError[]): string {
  return errors.map((e) => (e.line ? `line ${e.line}: ${e.message}` : e.message)).join('; ');
}

/** A first look at the bytes: binary content is not a CSV. */
async function looksBinary(path: string): Promise<boolean> {
  const handle = await open(path, 'r');
  try {
    const buf = Buffer.alloc(8192);
    const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
    return buf.subarray(0, bytesRead).includes(0);
  } finally {
    await handle.close();
  }
}

async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

export class BatchIntake {
  private readonly rules: CompiledRules;

  constructor(
    private readonly deps: IntakeDeps,
    private readonly o: IntakeOptions,
  ) {
    this.rules = compileRules(o.rules);
  }

  /** Records a claimed file as a batch and reads it. */
  async receive(claimed: ClaimedFile): Promise<BatchRecord> {
    const now = this.deps.clock.now();
    const batch = receivedBatch(
      {
        id: newBatchId(now),
        fileName: claimed.originalName,
        storedPath: claimed.storedPath,
        controlPath: claimed.controlPath ?? null,
        sha256: claimed.sha256,
        size: claimed.size,
        mtimeMs: claimed.mtimeMs,
      },
      now,
    );
    await insertBatch(this.deps.db, { ...batch, leaseOwner: this.o.instanceId, leaseExpiresAt: now + this.o.leaseMs });
    this.deps.logger.info({ batchId: batch.id, file: batch.fileName, size: batch.size, sha256: batch.sha256 }, 'batch file received');
    return this.process(batch.id);
  }

  /**
   * Acknowledgement drafts left by reads a stop cut short (this instance's own
   * folder): called at start, before anything is read. A batch read again
   * drafts anew. Returns how many were removed.
   */
  removeDraftsLeftByStop(): Promise<number> {
    return removeAllAckDrafts(this.o.readingDir);
  }

  /**
   * Files in claimed/ with no batch record: the daemon stopped between the
   * claim (a rename) and recording it. They are received now.
   */
  async recoverOrphanClaims(claimedDir: string, minAgeMs = 0): Promise<number> {
    let names: string[];
    try {
      names = await readdir(claimedDir);
    } catch {
      return 0; // no claimed/ yet: nothing was ever claimed
    }
    let n = 0;
    for (const name of names) {
      if (name.endsWith('.ctl') || name.startsWith('.')) continue;
      const storedPath = join(claimedDir, name);
      const known = await findBatchByStoredPath(this.deps.db, storedPath);
      if (known) continue;
      const st = await stat(storedPath);
      if (!st.isFile()) continue;
      // With several instances, a claim younger than a lease may be another instance between rename and record (ctime = the rename).
      if (this.deps.clock.now() - st.ctimeMs < minAgeMs) continue;
      const sep = name.indexOf('__');
      const controlPath = `${storedPath}.ctl`;
      const hasControl = await stat(controlPath).then(
        () => true,
        () => false,
      );
      this.deps.logger.warn({ storedPath }, 'found a claimed file with no batch record (stopped mid-claim); receiving it now');
      await this.receive({
        claimId: sep > 0 ? name.slice(0, sep) : name,
        originalName: sep > 0 ? name.slice(sep + 2) : name,
        storedPath,
        size: st.size,
        mtimeMs: st.mtimeMs,
        sha256: await sha256File(storedPath),
        controlPath: hasControl ? controlPath : undefined,
      });
      n++;
    }
    return n;
  }

  /** Reads (or re-reads, after a restart) a batch that is RECEIVED or VALIDATING, and finishes its intake. */
  async process(batchId: string): Promise<BatchRecord> {
    // The lease says "still reading" to other instances for as long as this takes, however long one chunk is.
    const renew = setInterval(
      () => {
        claimBatchLease(this.deps.db, batchId, this.o.instanceId, this.o.leaseMs, this.deps.clock.now(), ['RECEIVED', 'VALIDATING']).catch(
          () => {
            // A failed renewal is retried on the next tick; the per-chunk renewal also keeps it.
          },
        );
      },
      Math.max(1000, Math.floor(this.o.leaseMs / 3)),
    );
    renew.unref();
    try {
      return await this.read(batchId);
    } finally {
      clearInterval(renew);
    }
  }

  private async read(batchId: string): Promise<BatchRecord> {
    const { db, clock, logger } = this.deps;
    let batch = (await getBatch(db, batchId)) as BatchRecord;

    if (batch.state === 'RECEIVED') {
      const earlier = await findFirstBySha(db, batch.sha256, batch.id);
      if (earlier) {
        const reason = `duplicate file: the same content (sha256 ${batch.sha256.slice(0, 12)}…) was received as batch ${earlier.id} ("${earlier.fileName}", ${new Date(earlier.receivedAt).toISOString()}); nothing in this file is paid again`;
        await updateBatch(
          db,
          batch.id,
          { state: 'DUPLICATE', duplicateOf: earlier.id, rejectCode: 'DUPLICATE_FILE', rejectReason: reason },
          clock.now(),
        );
        batch = (await getBatch(db, batch.id)) as BatchRecord;
        await this.writeOutbox(batch.id, () => this.deps.effects.writeFileRejection(batch, reason), { ackWrittenAt: clock.now() });
        logger.warn({ batchId: batch.id, duplicateOf: earlier.id, file: batch.fileName }, 'duplicate batch file: nothing paid');
        return (await getBatch(db, batch.id)) as BatchRecord;
      }
      const refusal = await this.refusal(batch);
      if (refusal) return this.rejectFile(batch, refusal.code, refusal.reason, [], true);
    }

    await updateBatch(db, batch.id, { state: 'VALIDATING' }, clock.now());
    await clearBatchContents(db, batch.id);
    const result = await this.readRows(batch);
    if ('readError' in result) return this.rejectFile(batch, 'UNREADABLE', result.readError, [], true);
    try {
      return await this.admit(batch, result.read);
    } finally {
      await removeAckDrafts(result.read.ackDrafts);
    }
  }

  /** A batch whose file was read: rejected as a whole, rejected for its rows, or accepted (and maybe held). */
  private async admit(read: BatchRecord, { parse, ackDrafts }: BatchRead): Promise<BatchRecord> {
    const { db, clock, logger } = this.deps;
    let batch = read;
    if (parse.fileErrors.length > 0) {
      return this.rejectFile(batch, 'INVALID_FILE', describeErrors(parse.fileErrors), parse.fileErrors.map(toErrorRecord), false);
    }
    if (parse.rowCount === 0) {
      return this.rejectFile(batch, 'NO_ROWS', 'the file has a header but no payout rows', [], true);
    }
    await insertBatchErrors(db, batch.id, parse.storedErrors.map(toErrorRecord));
    await updateBatch(
      db,
      batch.id,
      { rowCount: parse.rowCount, delimiter: parse.delimiter, totalsJson: JSON.stringify(parse.totals) },
      clock.now(),
    );

    const verdict = await acceptBatchRows(db, batch.id, this.o.onInvalidRows, clock.now());
    const counts = { validCount: verdict.readyCount, invalidCount: verdict.invalidCount + verdict.duplicateCount };
    if (!verdict.accepted) {
      await updateBatch(
        db,
        batch.id,
        { ...counts, state: 'REJECTED', rejectCode: 'INVALID_ROWS', rejectReason: verdict.rejectReason },
        clock.now(),
      );
      batch = (await getBatch(db, batch.id)) as BatchRecord;
      const rejected = batch;
      await this.writeOutbox(batch.id, () => this.deps.effects.writeAck(rejected, verdict.rejectReason ?? undefined), {
        ackWrittenAt: clock.now(),
      });
      await this.writeOutbox(batch.id, () => this.deps.effects.writeResult(rejected), { resultWrittenAt: clock.now() });
      logger.warn({ batchId: batch.id, file: batch.fileName, ...counts }, `batch rejected: ${verdict.rejectReason}`);
      return (await getBatch(db, batch.id)) as BatchRecord;
    }
    // Holds are decided while the batch is still VALIDATING (not claimable), so no create can slip out
    // before them; a crash before ACTIVE means the batch is read again from the start.
    await this.holdIfNeeded(batch);
    await updateBatch(
      db,
      batch.id,
      { ...counts, state: 'ACTIVE', acceptedAt: clock.now(), leaseOwner: null, leaseExpiresAt: null },
      clock.now(),
    );
    batch = (await getBatch(db, batch.id)) as BatchRecord;
    const accepted = batch;
    // The draft says what the rows said as read: exact unless the acceptance changed a row (a reference used twice).
    const drafts = verdict.rowsChanged === 0 ? ackDrafts : undefined;
    await this.writeOutbox(batch.id, () => this.deps.effects.writeAck(accepted, undefined, drafts), { ackWrittenAt: clock.now() });
    logger.info(
      { batchId: batch.id, file: batch.fileName, rows: parse.rowCount, ...counts, hold: batch.holdCode, readInParts: ackDrafts.length },
      'batch accepted',
    );
    return (await getBatch(db, batch.id)) as BatchRecord;
  }

  /**
   * Writes an outbox file and records it. An outbox that cannot be written
   * (full disk, wrong permissions) does not stop the intake: the file stays
   * unrecorded and the daemon's finish loop writes it later.
   */
  private async writeOutbox(batchId: string, write: () => Promise<unknown>, written: Partial<BatchRecord>): Promise<void> {
    const { db, clock, logger } = this.deps;
    try {
      await write();
      await updateBatch(db, batchId, written, clock.now());
    } catch (err) {
      logger.error(
        { batchId, err: { code: (err as NodeJS.ErrnoException).code ?? 'ERROR', message: (err as Error).message?.slice(0, 200) } },
        'cannot write to the outbox now; the file will be written when it can',
      );
    }
  }

  /** A file that is not a CSV batch at all, decided without parsing. */
  private async refusal(batch: BatchRecord): Promise<{ code: string; reason: string } | null> {
    const ext = extname(batch.fileName).toLowerCase();
    if (!CSV_EXTENSIONS.has(ext)) return { code: 'NOT_CSV', reason: `not a CSV file (extension ${ext}); payout batches are .csv files` };
    if (batch.size === 0) return { code: 'EMPTY', reason: 'the file is empty' };
    try {
      if (await looksBinary(batch.storedPath)) return { code: 'NOT_CSV', reason: 'the file holds binary data (NUL bytes), not CSV text' };
    } catch (err) {
      return { code: 'UNREADABLE', reason: `the file cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})` };
    }
    return null;
  }

  /**
   * Reads the batch's file into its rows, stored a transaction's worth at a
   * time: in parts on reader threads when the file is large (src/ingest/read),
   * else in this thread, and in this thread again when a read in parts says so
   * (its rows are cleared first).
   */
  private async readRows(batch: BatchRecord): Promise<{ read: BatchRead } | { readError: string }> {
    const { db, clock, logger } = this.deps;
    // Rows wait here, already in their stored form, until a transaction's worth is read.
    let pending: NewPayoutRow[] = [];
    const store = async (): Promise<void> => {
      if (pending.length === 0) return;
      const records = pending;
      pending = [];
      const now = clock.now();
      // Still reading: the batch stays ours while its rows go in.
      await insertRowsWhileReading(db, { batchId: batch.id, instanceId: this.o.instanceId, leaseMs: this.o.leaseMs }, records, now);
      this.deps.afterChunkStored?.();
    };
    const opts: BatchReadOptions = {
      format: this.o.format,
      rules: this.o.rules,
      compiledRules: this.rules,
      identity: { batchId: batch.id, fileName: batch.fileName },
      draftDir: this.o.readingDir,
      sidecarPath: batch.controlPath,
      // Chunks smaller than a transaction: only the rows' stored form waits for the transaction's worth.
      chunkSize: PARSE_CHUNK_ROWS,
      signal: this.o.signal,
      readers: this.o.readers,
      onRows: async (rows) => {
        for (const row of storedForm(batch.id, rows)) pending.push(row);
        if (pending.length >= ROWS_PER_TRANSACTION) await store();
      },
    };
    // Drafts of an earlier read of this batch (in one part or in more) would be read as this one's.
    await removeBatchAckDrafts(this.o.readingDir, batch.id);
    try {
      let read = this.o.read ? await readBatchInParts(batch.storedPath, batch.size, this.o.read, opts) : null;
      if (read !== null && 'again' in read) {
        logger.info({ batchId: batch.id, file: batch.fileName, why: read.again }, 'reading the file again, in one part');
        pending = [];
        await clearBatchContents(db, batch.id);
        read = null;
      }
      read ??= await readBatchInThread(batch.storedPath, opts);
      // A rejected file's rows are cleared anyway; only an accepted read needs its last rows stored.
      if (read.parse.fileErrors.length === 0) await store();
      return { read };
    } catch (err) {
      await removeBatchAckDrafts(this.o.readingDir, batch.id);
      if (err instanceof BatchReadError) return { readError: err.message };
      throw err;
    }
  }

  private async rejectFile(
    batch: BatchRecord,
    code: string,
    reason: string,
    errors: BatchErrorRecord[],
    moveFile: boolean,
  ): Promise<BatchRecord> {
    const { db, clock, logger } = this.deps;
    // A file refused whole keeps no rows: rows read before the refusal hold their references, and let them go here.
    await clearBatchContents(db, batch.id);
    await insertBatchErrors(db, batch.id, errors.length > 0 ? errors : [{ line: null, column: null, field: null, code, message: reason }]);
    let storedPath = batch.storedPath;
    if (moveFile) {
      try {
        storedPath = (await moveAside(batch.storedPath, this.o.rejectedDir, reason, { originalName: batch.fileName, clock })).storedPath;
      } catch (err) {
        logger.warn(
          { batchId: batch.id, code: (err as NodeJS.ErrnoException).code },
          'could not move the refused file aside; it stays in claimed/',
        );
      }
    }
    await updateBatch(db, batch.id, { state: 'REJECTED', rejectCode: code, rejectReason: reason, storedPath }, clock.now());
    const updated = (await getBatch(db, batch.id)) as BatchRecord;
    await this.writeOutbox(batch.id, () => this.deps.effects.writeFileRejection(updated, reason), { ackWrittenAt: clock.now() });
    logger.warn({ batchId: batch.id, file: basename(batch.fileName), code }, `batch file refused: ${reason}`);
    return (await getBatch(db, batch.id)) as BatchRecord;
  }

  /** Holds a just-accepted batch when its upload changed after the claim, or the balance will not cover it. */
  private async holdIfNeeded(batch: BatchRecord): Promise<void> {
    const { db, clock, logger } = this.deps;
    const changed = await verifyUnchanged({
      claimId: '',
      originalName: batch.fileName,
      storedPath: batch.storedPath,
      size: batch.size,
      mtimeMs: batch.mtimeMs,
      sha256: batch.sha256,
    });
    if (changed.changed) {
      const reason = `${changed.reason ?? 'the file changed after it was taken'}; only the rows read before the change are in this batch and NONE will be paid until an operator decides (payoutd release / payoutd cancel)`;
      await holdBatch(db, batch.id, 'FILE_CHANGED', reason, null, clock.now());
      logger.error({ batchId: batch.id, file: batch.fileName }, `batch held: ${reason}`);
      return;
    }
    const check = this.deps.effects.checkBalance;
    if (!check) return;
    const verdict = await check(batch.id);
    if (!verdict.ok) {
      const until = clock.now() + this.deps.effects.balanceRecheckMs;
      await holdBatch(db, batch.id, 'INSUFFICIENT_BALANCE', verdict.reason ?? 'insufficient balance', until, clock.now());
      logger.error({ batchId: batch.id }, `batch held: ${verdict.reason}`);
    }
  }
}
