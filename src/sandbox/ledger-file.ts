/**
 * LedgerFile: a sandbox's ledger on disk (`stateFile`): a snapshot replaced atomically and a journal of one JSON
 * line per change. The server awaits `durable()` before it answers; one turn's changes share one write and fsync.
 * On start the journal is replayed (a torn last line ignored) and folded into a new snapshot.
 */
import { closeSync, existsSync, fdatasync, fsyncSync, ftruncateSync, openSync, readFileSync, renameSync, write, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { SandboxError } from './errors.js';
import type { Ledger, LedgerChange, LedgerSnapshot } from './ledger.js';
import type { SandboxLogger } from './logger.js';
import type { SandboxStats } from './stats.js';

/** The journal is folded into the snapshot once it holds this many changes, or as many as the ledger has payouts if more. */
const FOLD_MIN_CHANGES = 10_000;

/** The snapshot file: the ledger plus the last journal change it already contains. */
interface StateSnapshot extends LedgerSnapshot {
  /** Journal lines with a `seq` up to this one are in the snapshot (absent in files written by hand: 0). */
  journalSeq?: number;
}

/** One journal line. */
interface JournalLine {
  seq: number;
  change: LedgerChange;
}

interface Waiter {
  seq: number;
  resolve: () => void;
  reject: (err: Error) => void;
}

function writeAll(fd: number, bytes: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const step = (offset: number): void =>
      write(fd, bytes, offset, bytes.length - offset, null, (err, written) => {
        if (err) reject(err);
        else if (offset + written < bytes.length) step(offset + written);
        else resolve();
      });
    step(0);
  });
}

function dataSync(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fdatasync(fd, (err) => (err ? reject(err) : resolve())));
}

/** Makes a rename or a file creation in `dir` survive a power loss. */
function syncDirectory(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function isJournalLine(value: unknown): value is JournalLine {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Partial<JournalLine>;
  return typeof v.seq === 'number' && typeof v.change === 'object' && v.change !== null && typeof v.change.kind === 'string';
}

/** The complete journal lines, in order; a torn last line is ignored, a bad line with records after it is damage. */
export function parseJournal(text: string, path: string): JournalLine[] {
  const lines = text.split('\n');
  const out: JournalLine[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (line === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      value = undefined;
    }
    if (isJournalLine(value)) {
      out.push(value);
      continue;
    }
    if (lines.slice(i + 1).every((rest) => rest === '')) break;
    throw new SandboxError(
      'SANDBOX_STATE_DAMAGED',
      `sandbox journal ${path} line ${i + 1} is not a ledger change, and changes follow it; move the file aside to start from the snapshot alone`,
    );
  }
  return out;
}

export class LedgerFile {
  private readonly journalPath: string;
  private fd: number | null = null;
  /** Sequence number of the last change journaled (in memory or on disk). */
  private seq = 0;
  /** Sequence number of the last change on disk (fsync'd or in the snapshot). */
  private durableSeq = 0;
  /** Changes in the journal since the last snapshot. */
  private journalChanges = 0;
  private queued: string[] = [];
  private waiters: Waiter[] = [];
  private flushing: Promise<void> | null = null;
  private failure: SandboxError | null = null;

  constructor(
    private readonly path: string,
    private readonly ledger: Ledger,
    private readonly logger: SandboxLogger,
    private readonly stats: SandboxStats,
    private readonly foldMinChanges = FOLD_MIN_CHANGES,
  ) {
    this.journalPath = `${path}.journal`;
  }

  /** Restores the saved state (snapshot, then journal), folds it into a fresh snapshot and starts journaling changes. */
  load(): void {
    let snapshotSeq = 0;
    if (existsSync(this.path)) {
      let snap: StateSnapshot;
      try {
        snap = JSON.parse(readFileSync(this.path, 'utf8')) as StateSnapshot;
      } catch (err) {
        throw new SandboxError('SANDBOX_STATE_DAMAGED', `sandbox state file ${this.path} is not a ledger snapshot (${String(err)})`);
      }
      const restored = this.ledger.restore(snap);
      snapshotSeq = snap.journalSeq ?? 0;
      this.logger.info({ payouts: restored.length }, 'sandbox ledger restored');
    }
    this.seq = snapshotSeq;
    let journalText = '';
    if (existsSync(this.journalPath)) journalText = readFileSync(this.journalPath, 'utf8');
    let replayed = 0;
    for (const line of parseJournal(journalText, this.journalPath)) {
      if (line.seq <= this.seq) continue;
      this.ledger.apply(line.change);
      this.seq = line.seq;
      replayed++;
    }
    if (replayed > 0) this.logger.info({ changes: replayed }, 'sandbox journal replayed');
    this.durableSeq = this.seq;
    const created = !existsSync(this.journalPath);
    this.fd = openSync(this.journalPath, 'a', 0o600);
    if (created) syncDirectory(dirname(this.journalPath));
    if (journalText !== '') this.fold();
    this.ledger.onChange = (change) => this.append(change);
  }

  /** Resolves once every change made so far is on disk; rejects if the journal cannot be written. */
  durable(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.durableSeq >= this.seq) return Promise.resolve();
    return new Promise((resolve, reject) => this.waiters.push({ seq: this.seq, resolve, reject }));
  }

  /** Writes what is pending, folds the journal into the snapshot and stops journaling. */
  async close(): Promise<void> {
    this.ledger.onChange = null;
    await this.flushing;
    if (this.fd === null) return;
    if (!this.failure) this.fold();
    closeSync(this.fd);
    this.fd = null;
  }

  private append(change: LedgerChange): void {
    if (this.failure) return;
    this.seq++;
    this.journalChanges++;
    this.stats.journal.changes++;
    this.queued.push(`${JSON.stringify({ seq: this.seq, change })}\n`);
    this.flushing ??= this.flush();
  }

  /** Writes queued changes until none is left: one write and one fsync for all the changes queued meanwhile. */
  private async flush(): Promise<void> {
    // Let the rest of this turn's requests queue their changes first.
    await new Promise<void>((resolve) => setImmediate(resolve));
    try {
      while (this.queued.length > 0 && this.fd !== null) {
        if (this.journalChanges >= Math.max(this.foldMinChanges, this.ledger.size)) {
          this.fold();
          continue;
        }
        const upTo = this.seq;
        const bytes = Buffer.from(this.queued.join(''), 'utf8');
        this.queued = [];
        await writeAll(this.fd, bytes);
        await dataSync(this.fd);
        this.stats.journal.syncs++;
        this.settle(upTo);
      }
    } catch (err) {
      this.fail(err);
    } finally {
      this.flushing = null;
    }
  }

  /** Replaces the snapshot with the ledger and empties the journal, synchronously (no change slips in between). */
  private fold(): void {
    const fd = this.fd;
    if (fd === null) return;
    const tmp = `${this.path}.tmp`;
    const snapshot: StateSnapshot = { ...this.ledger.snapshot(), journalSeq: this.seq };
    const tmpFd = openSync(tmp, 'w', 0o600);
    try {
      writeSync(tmpFd, JSON.stringify(snapshot));
      fsyncSync(tmpFd);
    } finally {
      closeSync(tmpFd);
    }
    renameSync(tmp, this.path);
    syncDirectory(dirname(this.path));
    // A crash before this truncation leaves lines the snapshot already holds: their seq makes the replay skip them.
    ftruncateSync(fd, 0);
    fsyncSync(fd);
    this.queued = [];
    this.journalChanges = 0;
    this.settle(this.seq);
  }

  private settle(upTo: number): void {
    this.durableSeq = upTo;
    while (this.waiters.length > 0 && (this.waiters[0] as Waiter).seq <= upTo) (this.waiters.shift() as Waiter).resolve();
  }

  private fail(err: unknown): void {
    const reason = err instanceof Error ? err.message : String(err);
    this.failure = new SandboxError('SANDBOX_STATE_WRITE_FAILED', `sandbox journal ${this.journalPath} cannot be written (${reason})`);
    this.logger.error({ err: reason }, 'sandbox journal write failed: changes from now on are not kept');
    for (const w of this.waiters.splice(0)) w.reject(this.failure);
  }
}
