/** BatchOutbox: what finance receives for a batch, built from the database: ack, result and summary, interim report. */
import { createHash } from 'node:crypto';
import { readdir, rm } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { approvalAuditText, readApproval } from '../approval/index.js';
import { waitsForOperator } from '../domain/holds.js';
import type { RowState } from '../domain/lifecycle.js';
import { ReadyMoney } from '../domain/ready-money.js';
import type { AckDraft } from '../ingest/index.js';
import { lstatOrNull, newClaimId, outboxSafeName, parseStoredName, refusalOutcome, type RejectedEntry } from '../ingest/inbox/index.js';
import {
  type Database,
  type BatchRecord,
  ackMoneyPages,
  type AckSourceRow,
  type AckMoneySourceRow,
  resultRowPages,
  type BatchResultRow,
  batchRetrySource,
  countCancelledRows,
  recordNotesShown,
  type NoteShown,
  anyRowSent,
} from '../store/index.js';
import { correctionText, noteChange, type NoteChange } from '../domain/service-check.js';
import {
  writeAckFile,
  writeAckRowsAhead,
  type AckRowsAhead,
  writeInterimReport,
  writeInterimReportXlsx,
  writeRejectionAckFile,
  writeResultFiles,
  writeCorrectedResultFile,
  writeCorrectedResultXlsx,
  resultFileName,
  outcomeStatusOf,
  reasonText,
  withServiceNote,
  isTempName,
  writeResultXlsx,
  writeRetryFileAt,
  writeRetryXlsx,
  retryFileName,
  type RetrySource,
  writeAckXlsx,
  writeSummaryXlsx,
  AckTotalsAccumulator,
  disputedRowText,
  endedRowText,
  type AckCurrencyTotal,
  type AckMoneyRow,
  type EndedStatus,
  type DetailsRemoved,
  xlsxPathFor,
  outboxFileName,
  resultColumns,
  type AckRow,
  type BatchIdentity,
  type ResultFiles,
  type RetryFile,
  type RowOutcome,
  type XlsxOptions,
} from '../report/index.js';

const INTERIM_REASON: Partial<Record<RowState, string>> = {
  VALIDATED: 'being read',
  READY: 'waiting to be sent',
  CREATING: 'create in progress',
  UNKNOWN: 'create outcome being confirmed with the service',
};

/** Outbox files of a batch are named `<batchId>_<original name>`, the name made safe (outboxSafeName). */
export function outboxName(batch: Pick<BatchRecord, 'id' | 'fileName'>): string {
  return `${batch.id}_${outboxSafeName(batch.fileName)}`;
}

/**
 * When retention removed a batch's row details and outbox files, or began to (some may be gone), and which result
 * file finance has its figures in; null if it never began.
 */
export function detailsRemovedOf(batch: Pick<BatchRecord, 'id' | 'fileName' | 'prunedAt' | 'pruneStartedAt'>): DetailsRemoved | null {
  const resultFile = outboxFileName(outboxName(batch), 'result');
  if (batch.prunedAt != null) return { at: batch.prunedAt, complete: true, resultFile };
  if (batch.pruneStartedAt != null) return { at: batch.pruneStartedAt, complete: false, resultFile };
  return null;
}

/**
 * Outbox files of an inbox entry refused before it became a batch: `<refusal id>_<name>`, its id in rejected/. A
 * file left in place for its version has an id made of that version: the same at every start, so its answer is found.
 */
export function refusedEntryOutboxName(entry: Pick<RejectedEntry, 'name' | 'movedTo' | 'version'>, nowMs: number): string {
  const parked = entry.movedTo === undefined ? null : parseStoredName(basename(entry.movedTo));
  const id = parked?.claimId ?? (entry.version ? versionRefusalId(entry.name, entry.version) : newClaimId(nowMs));
  return `${id}_${outboxSafeName(entry.name)}`;
}

/** A refusal id of one version of a file: its mtime, and a digest of its name (as written, not made safe), size and mtime. */
function versionRefusalId(name: string, version: NonNullable<RejectedEntry['version']>): string {
  const digest = createHash('sha256').update(`${name}\0${version.size}\0${version.mtimeMs}`, 'utf8').digest();
  return newClaimId(version.mtimeMs, digest.subarray(0, 6));
}

export function identityOf(batch: BatchRecord): BatchIdentity {
  return {
    batchId: batch.id,
    fileName: batch.fileName,
    outboxName: outboxName(batch),
    sha256: batch.sha256,
    receivedAt: new Date(batch.receivedAt).toISOString(),
  };
}

export function rowOutcome(row: BatchResultRow): RowOutcome {
  const reason = withServiceNote(reasonText(row.reasonCode, row.reason) ?? INTERIM_REASON[row.state] ?? null, row.serviceNote);
  return {
    line: row.line,
    merchantReferenceId: row.merchantReferenceId,
    payoutCurrency: row.payoutCurrency ?? '',
    payoutAmount: row.payoutAmount ?? '',
    deductionCurrency: row.deductionCurrency ?? '',
    beneficiaryAccountName: row.beneficiaryAccountName ?? '',
    beneficiaryAccountNumber: row.beneficiaryAccountNumber ?? '',
    status: outcomeStatusOf(row.state),
    payoutId: row.payoutId,
    rate: row.rate,
    deductionAmount: row.deductionAmount,
    totalFee: row.totalFee,
    feeCurrency: row.feeCurrency,
    completeTime: row.completeTime,
    reason,
  };
}

/**
 * A row of corrected result file `n` from what correction `n` recorded: the note shown, and for a row it changed,
 * what changed since `previous` (the file it supersedes). Never the note as it is now: a file written again after
 * a stop holds the same content.
 */
function correctedOutcome(n: number, previous: string): (row: BatchResultRow) => RowOutcome {
  return (row) => ({
    ...rowOutcome({ ...row, serviceNote: row.serviceNoteShown }),
    correction:
      row.serviceNoteCorrected === n
        ? correctionText({ state: row.state, note: row.serviceNoteShown, shown: row.serviceNoteSuperseded }, previous)
        : null,
  });
}

/** A row a correction changed, with the amounts its file shows of it. */
function noteCorrected(row: BatchResultRow, shown: RowOutcome, change: NoteChange): NoteCorrected {
  const orNull = (text: string | null): string | null => (text === null || text === '' ? null : text);
  return {
    id: row.id,
    line: row.line,
    merchantReferenceId: row.merchantReferenceId,
    state: row.state,
    change,
    payoutId: row.payoutId,
    note: row.serviceNoteShown,
    superseded: row.serviceNoteSuperseded,
    payoutAmount: orNull(shown.payoutAmount),
    payoutCurrency: orNull(shown.payoutCurrency),
    deductionAmount: orNull(shown.deductionAmount),
    deductionCurrency: orNull(shown.deductionCurrency),
  };
}

const ACCEPTED_STATES: RowState[] = ['READY', 'CREATING', 'UNKNOWN', 'PENDING', 'PAID', 'CANCELLED', 'REJECTED'];

function verdictOf(state: RowState): AckRow['verdict'] {
  return ACCEPTED_STATES.includes(state) ? 'ACCEPTED' : 'REJECTED';
}

/** The ack's note of the text encoding the file was read as, when `batch.format.encoding: auto` chose it. */
function readNote(batch: BatchRecord): { fileNote?: string } {
  return batch.encoding ? { fileNote: `the file was read as ${batch.encoding} text (batch.format.encoding: auto)` } : {};
}

/**
 * The ack's line of an operator's cancel: why, and what it means for the rows. A batch cancelled before it was
 * accepted (while its file was read) sent none of them.
 */
function cancelNote(batch: BatchRecord, sentAny: boolean): string | undefined {
  if (batch.cancelledAt == null) return undefined;
  const reason = batch.cancelReason ?? 'cancelled by an operator';
  // Decided by what was sent, not by comparing the CLI's clock with the daemon's: told "no row is paid", finance
  // would send again rows already paid.
  if (!sentAny)
    return `${reason} (while the file was being read, before any row was sent): no row of this file is paid; to pay any of its rows, send them again in a new file`;
  return `${reason} (while the batch was being paid): rows not sent by then are not paid (NOT_SUBMITTED); rows already sent are followed to their end (see the result file)`;
}

/** An accepted row already final: only an ack written late (after a failed write, a hold or a cancel) meets one. */
function finalOf(state: RowState): Exclude<EndedStatus, 'DISPUTED'> | undefined {
  return state === 'PAID' || state === 'CANCELLED' || state === 'REJECTED' ? state : undefined;
}

/** A row the payout service contradicts or is being asked about: it may have been paid, whatever is recorded. */
function disputed(row: AckSourceRow): boolean {
  return row.serviceNote !== null || row.serviceCheck !== null;
}

/**
 * The ended status and reason of an accepted row: a final row the payout service has since contradicted, or is
 * being asked about, is DISPUTED, its outcome not stated (the result file tells it not to be sent again). So is a
 * row NOT_SUBMITTED after a create of it was tried, once a payout under its reference is being asked about.
 */
function endedRow(row: AckSourceRow): { ended?: EndedStatus; reason: string | null } {
  const recorded = finalOf(row.state);
  if (disputed(row) && (recorded !== undefined || row.state === 'NOT_SUBMITTED'))
    return { ended: 'DISPUTED', reason: disputedRowText(row.state, row.serviceNote !== null) };
  if (recorded === undefined) return { reason: null };
  return { ended: recorded, reason: endedRowText(recorded) };
}

function ackRow(row: AckSourceRow): AckRow {
  // A row not sent is not paid, unless the service may hold a payout of a create of it tried before.
  const accepted = verdictOf(row.state) === 'ACCEPTED' || (row.state === 'NOT_SUBMITTED' && disputed(row));
  const { ended, reason } = accepted ? endedRow(row) : { ended: undefined, reason: reasonText(row.reasonCode, row.reason) };
  return {
    line: row.line,
    merchantReferenceId: row.merchantReferenceId,
    verdict: accepted ? 'ACCEPTED' : 'REJECTED',
    reason,
    ...(ended === undefined ? {} : { ended }),
  };
}

/** A row's money for the ack's totals: its cells as written, else its request's. */
function ackMoney(r: AckMoneySourceRow, row: AckRow): AckMoneyRow {
  return {
    verdict: row.verdict,
    payoutCurrency: r.writtenPayoutCurrency ?? r.requestPayoutCurrency,
    payoutAmount: r.writtenPayoutAmount ?? r.requestPayoutAmount,
    ended: row.ended,
  };
}

async function* mapRows<T>(db: Database, batchId: string, f: (r: BatchResultRow) => T): AsyncGenerator<T> {
  for await (const page of resultRowPages(db, batchId)) for (const row of page) yield f(row);
}

async function* callHalfway<T>(rows: AsyncGenerator<T>, at: number, hook: () => void): AsyncGenerator<T> {
  let n = 0;
  for await (const row of rows) {
    if (++n === at) hook();
    yield row;
  }
}

/** The optional outbox files (config `outbox.xlsx`, `outbox.retryFiles`). */
export interface OutboxExtras {
  xlsx: boolean;
  retryFiles: boolean;
  /** `batch.rules.minorUnits`: decimals shown in the .xlsx. */
  minorUnits?: Readonly<Record<string, number>>;
  /** `outbox.timeZone`: the zone the .xlsx date cells show. */
  timeZone?: string;
  /** An .xlsx twin could not be written (its CSV was): the daemon logs it. */
  onXlsxError?: (batchId: string, kind: string, err: unknown) => void;
  /** `batch.rules.merchantReferenceId.maxLength`: longest fresh reference in a retry file. */
  referenceMaxLength?: number;
  /**
   * The daemon's stop: a file being written is abandoned (its temp file removed, nothing under its final name) and
   * the error thrown, never taken for a twin that failed, so the file is not recorded and is written at the next start.
   */
  signal?: AbortSignal;
}

export interface ExtraFiles {
  retry: RetryFile | null;
  retryXlsxPath: string | null;
}

/** A row of a corrected result file whose note changed since the file it supersedes. */
export interface NoteCorrected {
  /** The row's id (payouts.id). */
  id: number;
  line: number;
  merchantReferenceId: string;
  state: RowState;
  change: NoteChange;
  payoutId: string | null;
  /** The note the corrected file shows, and the one the file it supersedes showed (null: none). */
  note: string | null;
  superseded: string | null;
  /** As the file shows them: decimal text, null when the row has none. */
  payoutAmount: string | null;
  payoutCurrency: string | null;
  deductionAmount: string | null;
  deductionCurrency: string | null;
}

/** A corrected result file written (BatchOutbox.writeCorrection) from what its correction recorded. */
export interface ResultCorrection {
  /** n of `<name>.result.corrected-<n>.csv`. */
  correction: number;
  path: string;
  /** The name of the file it supersedes: the result file, or the correction before. */
  previous: string;
  changes: NoteCorrected[];
  /** Its header, in order: finance is told where the reason and correction cells are. */
  columns: readonly string[];
}

/** The retry file written with a correction (its rows changed), and the versions before it taken out of the outbox. */
export interface RetryCorrection {
  extras: ExtraFiles;
  /** CANCELLED rows the correction puts back into retry files (the service shows them as recorded). */
  putBack: NoteCorrected[];
  /** CANCELLED rows the correction leaves out of retry files (the service contradicts them, or is being asked). */
  leftOut: NoteCorrected[];
  /** Earlier retry files removed from the outbox: the new one, or none when no row is left, supersedes them. */
  removed: string[];
}

export class BatchOutbox {
  constructor(
    private readonly db: Database,
    private readonly dir: string,
    private readonly bom: boolean,
    /** Chaos testing: called halfway through writing a result file. */
    private readonly midResultFile?: () => void,
    private readonly extras: OutboxExtras = { xlsx: false, retryFiles: false },
  ) {}

  /**
   * Reads the batch's rows once for its ack: their records are written ahead (the totals lines come first in the
   * file), and what they add up to is kept: the ack's totals, and the READY rows' money the gates decide on.
   */
  async draftAck(batch: BatchRecord): Promise<AckDraft> {
    const { ahead, totals, ready } = await this.draftRows(batch);
    return {
      ready,
      write: (b, fileRejection) => this.writeAckFiles(b, ahead, totals.currencies(), fileRejection),
      discard: () => ahead.discard(),
    };
  }

  /** The batch's ack rows written ahead, and what they add up to, from one read. */
  private async draftRows(batch: BatchRecord): Promise<{ ahead: AckRowsAhead; totals: AckTotalsAccumulator; ready: ReadyMoney }> {
    const totals = new AckTotalsAccumulator();
    const ready = new ReadyMoney();
    const db = this.db;
    async function* pages(): AsyncGenerator<AckRow[]> {
      for await (const page of ackMoneyPages(db, batch.id)) {
        yield page.map((r) => {
          const row = ackRow(r);
          totals.add(ackMoney(r, row));
          if (
            r.state === 'READY' &&
            r.requestDeductionCurrency !== null &&
            r.requestPayoutCurrency !== null &&
            r.requestPayoutAmount !== null
          )
            ready.add(r.requestDeductionCurrency, r.requestPayoutCurrency, r.requestPayoutAmount);
          return row;
        });
      }
    }
    const ahead = await writeAckRowsAhead(this.dir, identityOf(batch), { pages: pages() }, this.stopOption());
    return { ahead, totals, ready };
  }

  /** The ack of the batch as it is now: its rows read and the ack written (a hold only an operator lifts is stated at its top). */
  async writeAck(batch: BatchRecord, fileRejection?: string): Promise<string> {
    const draft = await this.draftAck(batch);
    try {
      return await draft.write(batch, fileRejection);
    } finally {
      await draft.discard();
    }
  }

  /**
   * Per-row verdicts after the totals lines (rows and amount per currency, the verdict); a line says why a
   * file is refused, or why a batch is under an operator's hold. Then its .xlsx twin.
   */
  private async writeAckFiles(
    batch: BatchRecord,
    ahead: AckRowsAhead,
    totals: AckCurrencyTotal[],
    fileRejection: string | undefined,
  ): Promise<string> {
    const opts = await this.ackOptions(batch, totals, fileRejection);
    const identity = identityOf(batch);
    const path = await writeAckFile(this.dir, identity, { ahead }, { ...opts, bom: this.bom, ...this.stopOption() });
    // From the rows its totals were added up from: rows read again later may have moved on (PENDING to PAID).
    await this.twin(identity, 'ack', () => writeAckXlsx(this.dir, identity, { ahead }, { ...opts, ...this.xlsxOptions() }));
    return path;
  }

  private async ackOptions(batch: BatchRecord, totals: AckCurrencyTotal[], fileRejection: string | undefined) {
    const fileHold = waitsForOperator(batch.holdCode) ? (reasonText(batch.holdCode, batch.holdReason) ?? undefined) : undefined;
    const fileHoldCode = fileHold !== undefined ? (batch.holdCode ?? undefined) : undefined;
    const fileCancel = cancelNote(batch, batch.cancelledAt != null && (await anyRowSent(this.db, batch.id)));
    return { fileRejection, fileCancel, fileHold, fileHoldCode, totals, minorUnits: this.extras.minorUnits, ...readNote(batch) };
  }

  /**
   * The .xlsx twins a batch's CSVs stand without in the outbox (a stop or a failed write lost them), written from
   * the database as its CSVs were; the CSVs are left as finance received them. The paths written.
   */
  async writeMissingTwins(batch: BatchRecord, missing: { ack: boolean; result: boolean }): Promise<string[]> {
    const identity = identityOf(batch);
    const written: string[] = [];
    if (missing.ack) {
      const refusedWhole = batch.state === 'DUPLICATE' || (batch.state === 'REJECTED' && batch.rowCount === 0);
      if (refusedWhole) {
        const reason = batch.rejectReason ?? 'refused';
        written.push(await writeAckXlsx(this.dir, identity, [], { fileRejection: reason, ...readNote(batch), ...this.xlsxOptions() }));
      } else {
        // The totals lines come first: the rows are written ahead in the one read that adds them up, as for its CSV.
        const draft = await this.draftRows(batch);
        try {
          const rejection = batch.state === 'REJECTED' ? (batch.rejectReason ?? undefined) : undefined;
          const opts = { ...(await this.ackOptions(batch, draft.totals.currencies(), rejection)), ...this.xlsxOptions() };
          written.push(await writeAckXlsx(this.dir, identity, { ahead: draft.ahead }, opts));
        } finally {
          await draft.ahead.discard();
        }
      }
    }
    if (missing.result) written.push(...(await this.resultTwins(batch)));
    return written;
  }

  /**
   * Batches (by the id their outbox names start with) with an ack, result or summary CSV in the outbox and no .xlsx
   * twin beside it, when twins are on; temp files and other names are not looked at.
   */
  async twinsMissing(): Promise<Map<string, { name: string; ack: boolean; result: boolean }>> {
    const missing = new Map<string, { name: string; ack: boolean; result: boolean }>();
    if (!this.extras.xlsx) return missing;
    let names: Set<string>;
    try {
      names = new Set(await readdir(this.dir));
    } catch {
      return missing; // no outbox yet
    }
    for (const file of names) {
      if (isTempName(file)) continue;
      for (const kind of ['ack', 'result', 'summary'] as const) {
        const suffix = `.${kind}.csv`;
        if (!file.endsWith(suffix)) continue;
        const name = file.slice(0, -suffix.length);
        if (names.has(`${name}.${kind}.xlsx`) || !name.includes('_')) continue;
        const id = name.slice(0, name.indexOf('_'));
        const entry = missing.get(id) ?? { name, ack: false, result: false };
        if (kind === 'ack') entry.ack = true;
        else entry.result = true;
        missing.set(id, entry);
      }
    }
    return missing;
  }

  /**
   * The result's and summary's .xlsx twins, with the approval column their CSVs carry, written once the notes the
   * CSV shows are recorded: each row shows the note recorded as shown, not one come since, so the twin holds the
   * CSV's rows (written late after a stop, too).
   */
  private async resultTwins(batch: BatchRecord): Promise<string[]> {
    const identity = identityOf(batch);
    const approval = approvalAuditText(await readApproval(this.db, batch.id));
    const opts = { ...this.xlsxOptions(), approval };
    const rows = mapRows(this.db, batch.id, (row) => rowOutcome({ ...row, serviceNote: row.serviceNoteShown }));
    const xlsx = await writeResultXlsx(this.dir, identity, rows, opts);
    return [xlsx.path, await writeSummaryXlsx(this.dir, identity, xlsx.summary, opts)];
  }

  /** A file refused whole (bad file, duplicate file); how it was read, when that was guessed, as in every ack. */
  async writeFileRejection(batch: BatchRecord, reason: string): Promise<string> {
    return this.writeRefusal(identityOf(batch), reason, readNote(batch));
  }

  /** The answer already written to this version of a file left in place (before a restart, say); null when there is none. */
  async entryAnsweredAt(entry: RejectedEntry): Promise<string | null> {
    if (entry.version === undefined) return null;
    const path = join(this.dir, outboxFileName(refusedEntryOutboxName(entry, 0), 'ack'));
    return (await lstatOrNull(path)) === null ? null : path;
  }

  /** The answer to an inbox entry payoutd will not or may not read: an ack with only the file-level REJECTED row saying why. */
  writeEntryRefusal(entry: RejectedEntry, reason: string, nowMs: number): Promise<string> {
    const identity: BatchIdentity = {
      batchId: '',
      fileName: entry.name,
      outboxName: refusedEntryOutboxName(entry, nowMs),
      sha256: '',
      receivedAt: new Date(nowMs).toISOString(),
    };
    return this.writeRefusal(identity, `${reason}; ${refusalOutcome(entry.kind)}`);
  }

  private async writeRefusal(identity: BatchIdentity, reason: string, note: { fileNote?: string } = {}): Promise<string> {
    const path = await writeRejectionAckFile(this.dir, identity, reason, {
      bom: this.bom,
      minorUnits: this.extras.minorUnits,
      ...note,
      ...this.stopOption(),
    });
    await this.twin(identity, 'ack', () => writeAckXlsx(this.dir, identity, [], { fileRejection: reason, ...note, ...this.xlsxOptions() }));
    return path;
  }

  /**
   * The result and summary files, then their .xlsx twins (a rejected batch's too). The notes they show are recorded:
   * a note that changes after is told by a corrected result file (writeCorrection).
   */
  async writeResult(batch: BatchRecord): Promise<ResultFiles> {
    const shown: NoteShown[] = [];
    let rows = mapRows(this.db, batch.id, (row) => {
      if (noteChange(row.serviceNote, row.serviceNoteShown) !== null) shown.push({ id: row.id, note: row.serviceNote });
      return rowOutcome(row);
    });
    const hook = this.midResultFile;
    if (hook) rows = callHalfway(rows, Math.max(1, Math.floor(batch.rowCount / 2)), hook);
    const identity = identityOf(batch);
    const approval = approvalAuditText(await readApproval(this.db, batch.id));
    const files = await writeResultFiles(this.dir, identity, rows, { bom: this.bom, approval, ...this.stopOption() });
    // Before the twins, which show the notes recorded: a note set since the CSV was written waits for a correction.
    await recordNotesShown(this.db, shown);
    await this.twin(identity, 'result', () => this.resultTwins(batch));
    return files;
  }

  /** `<name>.retry.csv` and its `.retry.xlsx` (when enabled), each its own atomic file, after the result files. */
  async writeExtras(batch: BatchRecord): Promise<ExtraFiles> {
    const identity = identityOf(batch);
    if (!this.extras.retryFiles || (await countCancelledRows(this.db, batch.id)) === 0) return { retry: null, retryXlsxPath: null };
    const name = outboxName(batch);
    const extras = await this.writeRetryAt(identity, join(this.dir, retryFileName(name, 0)), batchRetrySource(this.db, batch.id));
    // A finish cut short after its retry file is done again; with no row left to retry now (the service contradicted
    // one since), the file it wrote must not go on offering it.
    if (extras.retry?.path === null)
      for (const ext of ['csv', 'xlsx'] as const) await rm(join(this.dir, retryFileName(name, 0, ext)), { force: true });
    return extras;
  }

  /** A retry file at `path` and its .xlsx twin. */
  private async writeRetryAt(identity: BatchIdentity, path: string, source: RetrySource): Promise<ExtraFiles> {
    const retry = await writeRetryFileAt(path, source, {
      bom: this.bom,
      referenceMaxLength: this.extras.referenceMaxLength,
      ...this.stopOption(),
    });
    let retryXlsxPath: string | null = null;
    // Like every twin, one not written is logged and leaves the retry CSV standing (and logged as written).
    if (retry.path) {
      const csvPath = retry.path;
      await this.twin(identity, 'retry', async () => {
        retryXlsxPath = await writeRetryXlsx(csvPath, retry.rowCount, this.xlsxOptions());
      });
    }
    return { retry, retryXlsxPath };
  }

  /**
   * Correction `n` of a finished batch's result file, `<name>.result.corrected-<n>.csv`, written from what the
   * correction recorded (recordCorrection): each row shows the note recorded as shown, and a row the correction
   * changed says so in its `correction` cell, naming the file it supersedes. Written again after a stop, the same
   * name holds the same content. Never under the name of a file finance may have booked already.
   */
  async writeCorrection(batch: BatchRecord, n: number): Promise<ResultCorrection> {
    const previous = resultFileName(outboxName(batch), n - 1);
    const changes: NoteCorrected[] = [];
    const corrected = correctedOutcome(n, previous);
    const rows = mapRows(this.db, batch.id, (row) => {
      const change = row.serviceNoteCorrected === n ? noteChange(row.serviceNoteShown, row.serviceNoteSuperseded) : null;
      const outcome = corrected(row);
      if (change !== null) changes.push(noteCorrected(row, outcome, change));
      return outcome;
    });
    const approval = approvalAuditText(await readApproval(this.db, batch.id));
    const written = await writeCorrectedResultFile(this.dir, identityOf(batch), n, rows, { bom: this.bom, approval, ...this.stopOption() });
    return { correction: n, path: written.path, previous, changes, columns: resultColumns(approval, true) };
  }

  /** The .xlsx twin of correction `n` (when `outbox.xlsx` is on), the same rows as its CSV. */
  async writeCorrectionTwin(batch: BatchRecord, n: number): Promise<void> {
    const identity = identityOf(batch);
    const corrected = correctedOutcome(n, resultFileName(outboxName(batch), n - 1));
    const approval = approvalAuditText(await readApproval(this.db, batch.id));
    await this.twin(identity, 'result', () =>
      writeCorrectedResultXlsx(this.dir, identity, n, mapRows(this.db, batch.id, corrected), { ...this.xlsxOptions(), approval }),
    );
  }

  /**
   * The retry file of correction `n`, `<name>.retry.corrected-<n>.csv` (and its .xlsx), when the correction puts a
   * CANCELLED row back or leaves one out, and retry files are on or one is in the outbox. A row whose note is
   * recorded as shown, or set since, is left out. The batch's earlier retry files are then removed from the outbox
   * (also when no row is left to retry): none offers a row the payout service contradicts. Null: none written.
   */
  async writeCorrectionRetry(batch: BatchRecord, n: number, changes: readonly NoteCorrected[]): Promise<RetryCorrection | null> {
    const moved = changes.filter((c) => c.state === 'CANCELLED' && c.change !== 'changed');
    if (moved.length === 0) return null;
    const name = outboxName(batch);
    const path = join(this.dir, retryFileName(name, n));
    // This version's own files are not earlier ones: written again after a stop, its twin stays.
    const own = new Set([path, join(this.dir, retryFileName(name, n, 'xlsx'))]);
    const earlier = (await readdir(this.dir)).filter(
      (f) => f.startsWith(`${name}.retry.`) && (f.endsWith('.csv') || f.endsWith('.xlsx')) && !own.has(join(this.dir, f)) && !isTempName(f),
    );
    if (!this.extras.retryFiles && !earlier.some((f) => f.endsWith('.csv'))) return null;
    const source = batchRetrySource(this.db, batch.id);
    const extras = await this.writeRetryAt(identityOf(batch), path, {
      ...source,
      // The rows its correction shows, by the notes recorded with it, not by notes come since: the version agrees
      // with the corrected result file beside it, and holds the same rows if written again after a stop. A row
      // noted since is in the next correction; a retry of it dropped meanwhile is refused (RETRY_DUPLICATE).
      cancelledRows: async function* () {
        for await (const row of source.cancelledRows()) yield { ...row, serviceNote: row.serviceNoteShown };
      },
    });
    const removed: string[] = [];
    for (const f of earlier) {
      await rm(join(this.dir, f), { force: true });
      removed.push(join(this.dir, f));
    }
    return {
      extras,
      putBack: moved.filter((c) => c.change === 'withdrawn'),
      leftOut: moved.filter((c) => c.change === 'added'),
      removed,
    };
  }

  /** An .xlsx twin written with this outbox's options, when `outbox.xlsx` is on (see twin). */
  writeTwin(identity: BatchIdentity, kind: string, write: (opts: XlsxOptions) => Promise<unknown>): Promise<void> {
    return this.twin(identity, kind, () => write(this.xlsxOptions()));
  }

  /**
   * An .xlsx twin, after its CSV: the CSV is the record, so a twin that cannot be written is reported
   * (`onXlsxError`) and never holds a batch back; without a reporter the error is the caller's.
   */
  private async twin(identity: BatchIdentity, kind: string, write: () => Promise<unknown>): Promise<void> {
    if (!this.extras.xlsx) return;
    try {
      await write();
    } catch (err) {
      if (!this.extras.onXlsxError || this.stopping()) throw err;
      this.extras.onXlsxError(identity.batchId, kind, err);
    }
  }

  async writeInterim(batch: BatchRecord, path: string): Promise<string> {
    const r = await writeInterimReport(path, mapRows(this.db, batch.id, rowOutcome), { bom: this.bom, ...this.stopOption() });
    if (this.extras.xlsx) await writeInterimReportXlsx(xlsxPathFor(path), mapRows(this.db, batch.id, rowOutcome), this.xlsxOptions());
    return r.path;
  }

  private xlsxOptions(): { minorUnits?: Readonly<Record<string, number>>; timeZone?: string; signal?: AbortSignal } {
    return { minorUnits: this.extras.minorUnits, timeZone: this.extras.timeZone, ...this.stopOption() };
  }

  /** The stop signal for a writer, when the outbox has one. */
  private stopOption(): { signal?: AbortSignal } {
    return this.extras.signal ? { signal: this.extras.signal } : {};
  }

  /**
   * The daemon is stopping: a write that failed now was abandoned, not refused. The one question the finisher and
   * the file reception ask of the daemon's stop.
   */
  stopping(): boolean {
    return this.extras.signal?.aborted === true;
  }
}

/** Removes temp files a writer left when its process died (names `.<name>.<random>.tmp`). */
export async function removeStaleTempFiles(dir: string, logger: { warn(o: object, msg: string): void }): Promise<void> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return; // no outbox yet
  }
  for (const name of names.filter(isTempName)) {
    await rm(join(dir, name), { force: true });
    logger.warn({ file: name }, 'removed a partial outbox file left by an interrupted write');
  }
}
