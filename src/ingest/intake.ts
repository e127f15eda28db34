/**
 * BatchIntake: where a claimed CSV file becomes payout rows. A file gets a batch record, is recognized when
 * its bytes repeat an earlier batch, is read and validated into the database, and is accepted or rejected
 * as a whole; finance gets an acknowledgement either way. A batch interrupted mid-read is read again.
 */
import { open } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { basename, extname } from 'node:path';
import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.js';
import { whileRenewing } from '../domain/lease.js';
import { isBeingRead } from '../domain/lifecycle.js';
import type { BatchHold } from '../domain/holds.js';
import type { ReadyMoney } from '../domain/ready-money.js';
import type { BatchEventInput } from '../domain/batch-events.js';
import {
  type Database,
  claimBatchLease,
  holdReaderLease,
  clearBatchContents,
  batchStateCounts,
  findFirstBySha,
  getBatch,
  reasonsInState,
  contradictedCounts,
  insertBatch,
  BatchStateError,
  insertBatchErrors,
  receivedBatch,
  updateBatch,
  type BatchErrorRecord,
  type BatchRecord,
  type ReaderFence,
  type ReaderLease,
  acceptBatchRows,
  activateReadBatch,
  type InvalidRowsPolicy,
  type ReferenceColumn,
  type RetryFiles,
  insertRowsWhileReading,
  retryOriginalsOf,
  readyMoneyOf,
} from '../store/index.js';
import {
  BatchReadError,
  batchFileKind,
  readBatchFileOnThread,
  reasonOf,
  type BatchFormatOptions,
  type BatchParseResult,
} from './csv/index.js';
import type { RowError, ValidationRules } from './rules/index.js';
import { columnPlace, filePlace } from './rules/row-error.js';
import { moveAside, type ClaimedFile } from './inbox/index.js';
import { findOrphanClaims, type OrphanSearch } from './orphans.js';
import { duplicateFileMessage } from './duplicate-file.js';

/** The event a move of the batch makes, stored with it (src/domain/batch-events.ts). */
type BatchEventChange = Omit<BatchEventInput, 'batchId'>;

export interface IntakeOptions {
  format: BatchFormatOptions;
  rules: ValidationRules;
  onInvalidRows: InvalidRowsPolicy;
  /** Where refused files are parked with a reason file. */
  rejectedDir: string;
  /** This instance, and how long its hold on a batch being read lasts without renewal. */
  instanceId: string;
  leaseMs: number;
  /** Stops a read in progress (shutdown); the batch stays VALIDATING and is read again next time. */
  signal?: AbortSignal;
  /** The outbox name of a batch's retry file, named in the advice on payouts not paid; absent when retry files are off. */
  retryFileOf?: (batch: { id: string; fileName: string }) => string;
}

/** An ack being written: its rows read once from the store and written ahead, with what they add up to. */
export interface AckDraft {
  /** The READY rows' money as their requests say, which the balance and approval gates decide on (null: they read it). */
  readonly ready: ReadyMoney | null;
  /** Writes the ack and its .xlsx for the batch as it is now (its hold, its verdict); the rows are those read. */
  write(batch: BatchRecord, fileRejection?: string): Promise<string>;
  /** Removes the rows written ahead (after `write`, or when the ack will not be written from them). */
  discard(): Promise<void>;
}

export interface IntakeEffects {
  /** The acknowledgement, from the stored rows (a hold only an operator lifts is stated at its top), and its .xlsx. */
  writeAck(batch: BatchRecord, fileRejection?: string): Promise<string>;
  /** The ack's rows read and written ahead, to be written once the batch's holds are known. */
  draftAck(batch: BatchRecord): Promise<AckDraft>;
  writeFileRejection(batch: BatchRecord, reason: string): Promise<string>;
  writeResult(batch: BatchRecord): Promise<unknown>;
}

/** The hold decisions at acceptance (src/holds: BatchHolds). */
export interface AcceptanceHolds {
  /**
   * Holds the batch if it must wait (its file changed after the claim, its balance is short); the hold put on it.
   * `balance: false` when the batch waits for approval anyway (its balance is looked at once it is let go);
   * `ready`, its READY rows' money when added up already (null: read it).
   */
  atAcceptance(batch: BatchRecord, o?: { balance: boolean; ready?: ReadyMoney | null }): Promise<BatchHold | null>;
}

/** The approval gate at acceptance (src/approval): let go, hold for approval, or refuse for a limit. */
export interface AcceptanceApproval {
  atAcceptance(
    batch: BatchRecord,
    ready: ReadyMoney | null,
  ): Promise<{ kind: 'release' } | { kind: 'hold'; hold: BatchHold } | { kind: 'refuse'; code: string; reason: string }>;
}

export interface IntakeDeps {
  db: Database;
  clock: Clock;
  logger: Logger;
  effects: IntakeEffects;
  holds: AcceptanceHolds;
  /** With approval or limits in use; without, every accepted batch is let go as before. */
  approval?: AcceptanceApproval;
  /** The user who owns a claimed file (its uid, and the name the system gives it), recorded as the batch's uploader. */
  uploaderOf?: (claimed: ClaimedFile) => Promise<{ uid: number | null; name: string | null } | null>;
  /** Called once a chunk of rows is committed while the batch is still being read (the chaos tests' kill point). */
  afterChunkStored?: () => void | Promise<void>;
}

const CSV_EXTENSIONS = new Set(['.csv', '.txt', '']);
/** Workbooks and archives that are not read, and what to do instead. */
const REFUSED_EXTENSIONS: Record<string, string> = {
  '.xlsm': 'a macro-enabled workbook (.xlsm) is not read: macros are never run; save it as an Excel Workbook (.xlsx) and drop that',
  '.xls': 'an old Excel workbook (.xls) is not read; save it as an Excel Workbook (.xlsx) or as CSV UTF-8 and drop that',
  '.ods': 'an OpenDocument spreadsheet (.ods) is not read; save it as an Excel Workbook (.xlsx) or as CSV UTF-8 and drop that',
};

/** Rows stored per transaction while a file is read (each a disk sync; its rows wait in memory until it commits). */
const ROWS_PER_TRANSACTION = 5_000;

/** A batch id finance can read and sort: B<date>-<time>-<random>. */
export function newBatchId(now: number): string {
  const iso = new Date(now).toISOString();
  return `B${iso.slice(0, 10).replaceAll('-', '')}-${iso.slice(11, 19).replaceAll(':', '')}-${randomBytes(3).toString('hex')}`;
}

function toErrorRecord(e: RowError): BatchErrorRecord {
  return {
    file: e.file,
    line: e.line ?? null,
    column: e.column ?? null,
    columnIndex: e.columnIndex ?? null,
    field: e.field ?? null,
    code: e.code,
    message: e.message,
  };
}

/** The reference's column as the file has it, for the reasons of rows whose reference is used twice. */
function referenceColumn(parse: BatchParseResult): ReferenceColumn | undefined {
  const found = parse.referenceColumn;
  return found === null ? undefined : { ...found, place: columnPlace(found) as string };
}

/** A first look at the bytes (binary content is not a CSV; a UTF-16 byte order mark says what it is). */
async function firstBytes(path: string): Promise<Buffer> {
  const handle = await open(path, 'r');
  try {
    const buf = Buffer.alloc(8192);
    const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

export class BatchIntake {
  constructor(
    private readonly deps: IntakeDeps,
    private readonly o: IntakeOptions,
  ) {}

  /** Batches this process is reading now: a second reading of one would clear the rows the first is writing. */
  private readonly readingNow = new Set<string>();

  /** Whether this process is reading the batch right now (being received, or its reading resumed). */
  isReading(batchId: string): boolean {
    return this.readingNow.has(batchId);
  }

  /** Records a claimed file as a batch and reads it. */
  async receive(claimed: ClaimedFile): Promise<BatchRecord> {
    const uploader = (await this.deps.uploaderOf?.(claimed).catch(() => null)) ?? null;
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
        doneMarker: claimed.doneMarker,
        uploadedBy: uploader?.name ?? null,
        uploadedByUid: uploader?.uid ?? null,
      },
      now,
    );
    // Marked as being read from before its record exists: a finish pass that sees the new record leaves it alone.
    return this.readingOnce(batch.id, async () => {
      await insertBatch(this.deps.db, { ...batch, leaseOwner: this.o.instanceId, leaseExpiresAt: now + this.o.leaseMs });
      this.deps.logger.info({ batchId: batch.id, file: batch.fileName, size: batch.size, sha256: batch.sha256 }, 'batch file received');
      return this.readLeased(batch.id);
    });
  }

  /**
   * Files in claimed/ with no batch record (the daemon stopped between the claim and recording it), described
   * as a claim would describe them, for the caller to receive (src/ingest/orphans.ts).
   */
  orphanClaims(claimedDir: string, o: OrphanSearch = {}): Promise<ClaimedFile[]> {
    return findOrphanClaims({ ...this.deps, rejectedDir: this.o.rejectedDir }, claimedDir, o);
  }

  /** Reads (or re-reads, after a restart or a failed reading) a batch that is RECEIVED or VALIDATING, and finishes its intake. */
  async process(batchId: string): Promise<BatchRecord> {
    return this.readingOnce(batchId, async () => {
      await this.claimReading(batchId);
      return this.readLeased(batchId);
    });
  }

  /**
   * Refuses a batch whose reading failed `attempts` times the same unexpected way (READ_FAILED): its rows of those
   * readings go, its file is moved aside and finance gets its ack. The error itself stays in the log.
   */
  async refuseUnread(batchId: string, attempts: number): Promise<BatchRecord> {
    return this.readingOnce(batchId, async () => {
      await this.claimReading(batchId);
      const batch = (await getBatch(this.deps.db, batchId)) as BatchRecord;
      const reason =
        `payoutd could not read this file: its reading failed ${attempts} times in a row on an error inside payoutd; ` +
        'nothing in it was paid. Send the file to the operator, or save it again and drop it again';
      return this.rejectFile(batch, 'READ_FAILED', reason, [], true);
    });
  }

  /** A reading starts by taking the lease (free, run out, or this instance's); every write after it is fenced by it. */
  private async claimReading(batchId: string): Promise<void> {
    const { instanceId, leaseMs } = this.o;
    if (!(await claimBatchLease(this.deps.db, batchId, instanceId, leaseMs, this.deps.clock.now(), ['RECEIVED', 'VALIDATING']))) {
      throw new BatchStateError('BATCH_LEASE_LOST', `batch ${batchId} is being read by another instance (or is no longer being read)`);
    }
  }

  /** This instance's lease as the reader of the batch. */
  private leaseOf(batchId: string): ReaderLease {
    return { batchId, instanceId: this.o.instanceId, leaseMs: this.o.leaseMs };
  }

  /** Fails a transaction of this reader once the batch is no longer its own (another instance took it over). */
  private fenceOf(batchId: string): ReaderFence {
    return (trx) => holdReaderLease(trx, this.leaseOf(batchId), this.deps.clock.now());
  }

  /** The retry files the acceptance's advice names, and how their references are spelled. */
  private retryFiles(): RetryFiles {
    return { nameOf: this.o.retryFileOf ?? null, referenceMaxLength: this.o.rules.merchantReferenceId.maxLength };
  }

  /** Runs `reading` as this process's only reading of the batch; refused while another is going on. */
  private async readingOnce(batchId: string, reading: () => Promise<BatchRecord>): Promise<BatchRecord> {
    if (this.readingNow.has(batchId)) {
      throw new BatchStateError('BATCH_BEING_READ', `batch ${batchId} is already being read by this process`);
    }
    this.readingNow.add(batchId);
    try {
      return await reading();
    } finally {
      this.readingNow.delete(batchId);
    }
  }

  /** The reading of a batch, its lease renewed all along. */
  private async readLeased(batchId: string): Promise<BatchRecord> {
    // The lease says "still reading" to other instances for as long as this takes, however long one chunk is.
    // Renewed only while still ours: a lease taken over is not taken back (holdReaderLease); the next chunk then stops.
    return whileRenewing(
      this.o.leaseMs,
      () => holdReaderLease(this.deps.db, this.leaseOf(batchId), this.deps.clock.now()),
      () => this.read(batchId),
    );
  }

  /**
   * The intake of one batch: RECEIVED (a repeat -> DUPLICATE; not a CSV -> REJECTED), VALIDATING (its rows
   * read into the database), then ACTIVE or REJECTED.
   */
  private async read(batchId: string): Promise<BatchRecord> {
    const received = (await getBatch(this.deps.db, batchId)) as BatchRecord;
    if (received.state === 'RECEIVED') {
      const earlier = await findFirstBySha(this.deps.db, received);
      if (earlier) return this.markDuplicate(received, earlier);
      const refusal = await this.refusal(received);
      if (refusal) return this.rejectFile(received, refusal.code, refusal.reason, [], true);
    }
    const batch = await this.move(received, { state: 'VALIDATING' });
    await clearBatchContents(this.deps.db, batch.id, this.fenceOf(batch.id));
    let parse: BatchParseResult;
    try {
      parse = await this.readRows(batch);
    } catch (err) {
      if (err instanceof BatchReadError) return this.rejectFile(batch, 'UNREADABLE', err.message, [], true);
      throw err;
    }
    return this.admit(batch, parse);
  }

  /**
   * Writes `patch` to the batch's record and returns the record as it now is; only while the batch is being read
   * by this instance (BATCH_LEASE_LOST else): a reader that lost it must not move it out of VALIDATING.
   */
  private async move(batch: BatchRecord, patch: Partial<BatchRecord>, event?: BatchEventChange): Promise<BatchRecord> {
    const now = this.deps.clock.now();
    await updateBatch(this.deps.db, batch.id, patch, now, event, this.o.instanceId);
    return { ...batch, ...patch, updatedAt: now };
  }

  /** The batch as stored, once its intake is over. */
  private async stored(batchId: string): Promise<BatchRecord> {
    return (await getBatch(this.deps.db, batchId)) as BatchRecord;
  }

  private async markDuplicate(received: BatchRecord, earlier: BatchRecord): Promise<BatchRecord> {
    const { clock, logger } = this.deps;
    // A file still being read has no outcome yet: it may be refused whole.
    const outcome = isBeingRead(earlier.state)
      ? null
      : {
          counts: await batchStateCounts(this.deps.db, earlier),
          notSubmitted: await reasonsInState(this.deps.db, earlier.id, 'NOT_SUBMITTED'),
          contradicted: await contradictedCounts(this.deps.db, earlier.id),
        };
    const reason = duplicateFileMessage(received.sha256, earlier, outcome, this.o.retryFileOf?.(earlier) ?? null);
    const batch = await this.move(
      received,
      { state: 'DUPLICATE', duplicateOf: earlier.id, rejectCode: 'DUPLICATE_FILE', rejectReason: reason },
      { type: 'rejected', data: { code: 'DUPLICATE_FILE', reason, duplicateOf: earlier.id } },
    );
    await this.writeOutbox(batch.id, () => this.deps.effects.writeFileRejection(batch, reason), { ackWrittenAt: clock.now() });
    logger.warn({ batchId: batch.id, duplicateOf: earlier.id, file: batch.fileName }, 'duplicate batch file: nothing paid');
    return this.stored(batch.id);
  }

  /** A batch whose file was read: rejected as a whole, rejected for its rows, or accepted (and maybe held). */
  private async admit(validating: BatchRecord, parse: BatchParseResult): Promise<BatchRecord> {
    const { db, clock } = this.deps;
    // The encoding `auto` chose is kept even for a file refused whole: its ack says how it was read.
    const encoding = parse.encodingDetected ? parse.encoding : null;
    if (parse.fileErrors.length > 0) {
      const reason = reasonOf(parse.fileErrors, (e) => filePlace(e, parse.file)) as string;
      return this.rejectFile(validating, 'INVALID_FILE', reason, parse.fileErrors.map(toErrorRecord), false, { encoding });
    }
    if (parse.rowCount === 0) {
      return this.rejectFile(validating, 'NO_ROWS', 'the file has a header but no payout rows', [], true, { encoding });
    }
    await insertBatchErrors(db, validating.id, parse.storedErrors.map(toErrorRecord), this.fenceOf(validating.id));
    const read = await this.move(validating, {
      rowCount: parse.rowCount,
      delimiter: parse.delimiter,
      encoding,
      totalsJson: JSON.stringify(parse.totals),
    });

    const verdict = await acceptBatchRows(
      db,
      read.id,
      this.o.onInvalidRows,
      clock.now(),
      this.fenceOf(read.id),
      referenceColumn(parse),
      this.retryFiles(),
    );
    const counts = { validCount: verdict.readyCount, invalidCount: verdict.invalidCount + verdict.duplicateCount };
    if (!verdict.accepted) return this.rejectRead(read, counts, 'INVALID_ROWS', verdict.rejectReason ?? 'not accepted');
    // One read of the accepted rows writes the ack's rows ahead and adds up what the gates decide on.
    const draft = await this.draftAck(read);
    try {
      return await this.accept(read, parse, counts, draft);
    } finally {
      await draft.discard();
    }
  }

  /** A batch whose rows are accepted: let go, held or refused by the gates, its ack written, then ACTIVE (or REJECTED). */
  private async accept(
    read: BatchRecord,
    parse: BatchParseResult,
    counts: { validCount: number; invalidCount: number },
    draft: AckDraft,
  ): Promise<BatchRecord> {
    // An operator cancelled it while it was read: its rows are NOT_SUBMITTED already, nothing is left to approve or hold.
    const cancel = await this.cancelOf(read.id);
    if (cancel) return this.activate(read, parse, counts, draft, null, cancel);
    // Approval and holds are decided while the batch is still VALIDATING (not claimable), so no create can
    // slip out before them; a crash before ACTIVE means the batch is read again from the start.
    const gate = this.deps.approval ? await this.deps.approval.atAcceptance(read, draft.ready) : null;
    if (gate?.kind === 'refuse') return this.rejectRead(read, counts, gate.code, gate.reason);
    // A batch waiting for approval has its balance checked once approved (src/holds: BALANCE_CHECK), not now.
    const hold =
      (await this.deps.holds.atAcceptance(read, { balance: gate?.kind !== 'hold', ready: draft.ready })) ??
      (gate?.kind === 'hold' ? gate.hold : null);
    // A cancel made while the gates decided is stated in the ack; its work is done with the move to ACTIVE.
    return this.activate(read, parse, counts, draft, hold, await this.cancelOf(read.id));
  }

  /** The operator's cancel of a batch being read, if any (src/store/cancels.ts). */
  private async cancelOf(batchId: string): Promise<Pick<BatchRecord, 'cancelledAt' | 'cancelReason'> | null> {
    const batch = await getBatch(this.deps.db, batchId);
    return batch?.cancelledAt == null ? null : { cancelledAt: batch.cancelledAt, cancelReason: batch.cancelReason ?? null };
  }

  /**
   * The ack written while the batch is still VALIDATING, then the batch ACTIVE (held by `hold`, or cancelled by
   * `cancel`: the cancel's work is done with the move, for a cancel made after the acceptance's too).
   */
  private async activate(
    read: BatchRecord,
    parse: BatchParseResult,
    counts: { validCount: number; invalidCount: number },
    draft: AckDraft,
    hold: BatchHold | null,
    cancel: Pick<BatchRecord, 'cancelledAt' | 'cancelReason'> | null,
  ): Promise<BatchRecord> {
    const { clock, logger } = this.deps;
    const held = { ...read, ...(hold ? { holdCode: hold.code, holdReason: hold.reason, holdUntil: hold.until } : {}), ...cancel };
    // The ack is written while the batch is still ours and VALIDATING: finance's answer comes before the first
    // create, the spreadsheet copy's work never competes with the sending, and the outbox repair never takes an
    // ACTIVE batch whose ack is still being written for one without.
    // No ack from a reader that lost the batch: the reading that took over writes the batch's own.
    await holdReaderLease(this.deps.db, this.leaseOf(held.id), clock.now());
    const ackWritten = await this.writeOutbox(held.id, () => draft.write({ ...held, ...counts }));
    // The batch's amounts are what its accepted rows send; the file's, refused rows included, stay apart.
    const totals = (draft.ready ?? (await readyMoneyOf(this.deps.db, held.id))).payoutTotals();
    const acceptedAt = clock.now();
    const cancelledNow = await activateReadBatch(
      this.deps.db,
      held.id,
      {
        ...counts,
        state: 'ACTIVE',
        acceptedAt,
        acceptedTotalsJson: JSON.stringify(totals),
        leaseOwner: null,
        leaseExpiresAt: null,
        ...(ackWritten ? { ackWrittenAt: acceptedAt } : {}),
      },
      acceptedAt,
      {
        type: 'accepted',
        data: {
          rows: parse.rowCount,
          ...counts,
          totals,
          fileTotals: { ...parse.totals },
          hold: hold ? { code: hold.code, reason: hold.reason } : null,
        },
      },
      this.o.instanceId,
    );
    const stored = await this.stored(held.id);
    const logged = { batchId: stored.id, file: stored.fileName, rows: parse.rowCount, ...counts, hold: stored.holdCode };
    if (stored.cancelledAt != null) {
      const cancelled = { ...logged, reason: stored.cancelReason, ackOwed: cancelledNow > 0 };
      logger.info(cancelled, 'batch accepted after an operator cancelled it while it was read: none of its rows is sent');
    } else logger.info(logged, 'batch accepted');
    return stored;
  }

  /**
   * The ack's rows read and written ahead; when the outbox cannot take them now, a draft whose money the gates
   * read from the store and whose ack fails as the outbox does (written later by the finish loop).
   */
  private async draftAck(batch: BatchRecord): Promise<AckDraft> {
    try {
      return await this.deps.effects.draftAck(batch);
    } catch (err) {
      return { ready: null, write: () => Promise.reject(err), discard: () => Promise.resolve() };
    }
  }

  /** A batch read whole but not accepted (invalid rows under reject-file, a limit): its ack and result say why. */
  private async rejectRead(
    read: BatchRecord,
    counts: { validCount: number; invalidCount: number },
    code: string,
    reason: string,
  ): Promise<BatchRecord> {
    const { clock, logger, effects } = this.deps;
    const rejected = await this.move(
      read,
      { ...counts, state: 'REJECTED', rejectCode: code, rejectReason: reason },
      { type: 'rejected', data: { code, reason, rows: read.rowCount, ...counts } },
    );
    await this.writeOutbox(rejected.id, () => effects.writeAck(rejected, reason), { ackWrittenAt: clock.now() });
    await this.writeOutbox(rejected.id, () => effects.writeResult(rejected), { resultWrittenAt: clock.now() });
    logger.warn({ batchId: rejected.id, file: rejected.fileName, ...counts }, `batch rejected: ${reason}`);
    return this.stored(rejected.id);
  }

  /**
   * Writes an outbox file and records it (`written`, or the caller records it); one that cannot be written now is
   * written later by the finish loop. Whether it was written.
   */
  private async writeOutbox(batchId: string, write: () => Promise<unknown>, written?: Partial<BatchRecord>): Promise<boolean> {
    const { db, clock, logger } = this.deps;
    try {
      await write();
      if (written) await updateBatch(db, batchId, written, clock.now());
      return true;
    } catch (err) {
      // A stop abandons the write; the start's repair writes it.
      if (this.o.signal?.aborted) logger.info({ batchId }, 'stopping: an outbox file being written is written at the next start');
      else
        logger.error(
          { batchId, err: { code: (err as NodeJS.ErrnoException).code ?? 'ERROR', message: (err as Error).message?.slice(0, 200) } },
          'cannot write to the outbox now; the file will be written when it can',
        );
      return false;
    }
  }

  /** A file that is not a CSV batch at all, decided without parsing. */
  private async refusal(batch: BatchRecord): Promise<{ code: string; reason: string } | null> {
    const ext = extname(batch.fileName).toLowerCase();
    const refused = REFUSED_EXTENSIONS[ext];
    if (refused !== undefined) return { code: 'NOT_CSV', reason: refused };
    const kind = batchFileKind(batch.fileName);
    const textExt = kind === 'gzip' ? extname(basename(batch.fileName, extname(batch.fileName))).toLowerCase() : ext;
    if (kind !== 'xlsx' && !CSV_EXTENSIONS.has(textExt)) {
      return { code: 'NOT_CSV', reason: `not a batch file (extension ${ext}); payout batches are .csv, .csv.gz or .xlsx files` };
    }
    if (batch.size === 0) return { code: 'EMPTY', reason: 'the file is empty' };
    if (kind !== 'text') return null; // a workbook or an archive is binary: its reading says what is wrong with it
    try {
      const head = await firstBytes(batch.storedPath);
      const utf16 = (head[0] === 0xff && head[1] === 0xfe) || (head[0] === 0xfe && head[1] === 0xff);
      const encoding = this.o.format.encoding.toLowerCase();
      if (utf16 && (encoding === 'auto' || encoding.startsWith('utf-16'))) return null;
      if (utf16) {
        return {
          code: 'NOT_CSV',
          reason: 'the file is UTF-16 text (Excel\'s "Unicode Text"); save it as CSV UTF-8, or set batch.format.encoding: auto',
        };
      }
      if (head.includes(0)) return { code: 'NOT_CSV', reason: 'the file holds binary data (NUL bytes), not CSV text' };
    } catch (err) {
      return { code: 'UNREADABLE', reason: `the file cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})` };
    }
    return null;
  }

  /**
   * Reads the batch's file once, on a thread of its own, its rows stored here a transaction's worth at a time
   * while the batch stays ours.
   */
  private readRows(batch: BatchRecord): Promise<BatchParseResult> {
    const { db, clock } = this.deps;
    const lease = this.leaseOf(batch.id);
    return readBatchFileOnThread(batch.storedPath, batch.fileName, {
      format: this.o.format,
      rules: this.o.rules,
      batchId: batch.id,
      sidecarPath: batch.controlPath,
      // Recorded at the claim, so a read after a restart judges the file's end the same way.
      doneMarker: batch.doneMarker,
      bytes: batch.size,
      chunkSize: ROWS_PER_TRANSACTION,
      signal: this.o.signal,
      retryOriginals: (references) => retryOriginalsOf(db, references),
      onRows: async (rows) => {
        await insertRowsWhileReading(db, lease, rows, clock.now());
        await this.deps.afterChunkStored?.();
      },
    });
  }

  private async rejectFile(
    batch: BatchRecord,
    code: string,
    reason: string,
    errors: BatchErrorRecord[],
    moveFile: boolean,
    read: Pick<BatchRecord, 'encoding'> = { encoding: null },
  ): Promise<BatchRecord> {
    const { db, clock, logger } = this.deps;
    // A file refused whole keeps no rows: rows read before the refusal hold their references, and let them go here.
    await clearBatchContents(db, batch.id, this.fenceOf(batch.id));
    await insertBatchErrors(
      db,
      batch.id,
      errors.length > 0 ? errors : [{ line: null, column: null, field: null, code, message: reason }],
      this.fenceOf(batch.id),
    );
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
    const rejected = await this.move(
      batch,
      { state: 'REJECTED', rejectCode: code, rejectReason: reason, storedPath, encoding: read.encoding },
      { type: 'rejected', data: { code, reason } },
    );
    await this.writeOutbox(rejected.id, () => this.deps.effects.writeFileRejection(rejected, reason), { ackWrittenAt: clock.now() });
    logger.warn({ batchId: rejected.id, file: basename(rejected.fileName), code }, `batch file refused: ${reason}`);
    return this.stored(rejected.id);
  }
}
