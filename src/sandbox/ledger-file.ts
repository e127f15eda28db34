/**
 * LedgerFile: a sandbox's ledger on disk (`stateFile`): a snapshot replaced atomically and a journal of one JSON
 * line per change. The server awaits `durable()` before it answers; one turn's changes share one write and fsync.
 * On start the journal is replayed (a torn last line ignored) and folded into a new snapshot. Both files are
 * written and read a line at a time (the snapshot a payout per line): a ledger larger than the longest string
 * V8 allows still saves and loads. A fold while serving runs beside the answers: the journal is set aside
 * (`.journal.folding`) and a new one started, and the ledger as it stands is written a part at a time; the
 * set-aside journal is deleted once the snapshot replaced the old one. Changes made before the fold but still
 * queued go to the new journal, where the replay skips them by their seq.
 */
import { closeSync, existsSync, fdatasync, fsyncSync, ftruncateSync, openSync, readFileSync, renameSync, rmSync, write } from 'node:fs';
import { dirname } from 'node:path';
import { SandboxError } from './errors.js';
import type { Ledger, LedgerChange, LedgerSnapshot } from './ledger.js';
import type { SandboxLogger } from './logger.js';
import type { SandboxStats } from './stats.js';

/** The journal is folded into the snapshot once it holds this many changes, or as many as the ledger has payouts if more. */
const FOLD_MIN_CHANGES = 10_000;

/** Lines one write holds (snapshot payouts, journal changes): neither file is ever one string in memory. */
const LINES_PER_WRITE = 1000;

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

/** The lines of `bytes` (UTF-8), each decoded alone. */
function* linesOf(bytes: Buffer): Generator<string> {
  for (let start = 0; start < bytes.length;) {
    const end = bytes.indexOf(0x0a, start);
    const stop = end < 0 ? bytes.length : end;
    yield bytes.toString('utf8', start, stop);
    start = stop + 1;
  }
}

function parsedOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The complete journal lines, in order; a torn last line is ignored, a bad line with records after it is damage. */
function parseJournal(bytes: Buffer, path: string): JournalLine[] {
  const out: JournalLine[] = [];
  let bad: number | null = null;
  let n = 0;
  for (const line of linesOf(bytes)) {
    n++;
    if (line === '') continue;
    if (bad !== null)
      throw new SandboxError(
        'SANDBOX_STATE_DAMAGED',
        `sandbox journal ${path} line ${bad} is not a ledger change, and changes follow it; move the file aside to start from the snapshot alone`,
      );
    const value = parsedOrUndefined(line);
    if (isJournalLine(value)) out.push(value);
    else bad = n;
  }
  return out;
}

/** The snapshot's first line ends so: then a payout a line, and `]}` (see LedgerFile.fold). */
const PAYOUTS_FOLLOW = ',"payouts":[';

/** A snapshot file: as fold writes it (a payout a line), or any JSON of the same shape (written by hand). */
function readSnapshot(path: string): StateSnapshot {
  const damaged = (why: string): SandboxError =>
    new SandboxError('SANDBOX_STATE_DAMAGED', `sandbox state file ${path} is not a ledger snapshot (${why})`);
  const bytes = readFileSync(path);
  const lines = linesOf(bytes);
  const head = lines.next();
  if (head.done === true || !head.value.endsWith(PAYOUTS_FOLLOW)) {
    let whole: unknown;
    try {
      whole = JSON.parse(bytes.toString('utf8'));
    } catch (err) {
      throw damaged(String(err));
    }
    if (typeof whole !== 'object' || whole === null) throw damaged('not a JSON object');
    return whole as StateSnapshot;
  }
  const snap = parsedOrUndefined(`${head.value.slice(0, -PAYOUTS_FOLLOW.length)}}`) as Omit<StateSnapshot, 'payouts'> | undefined;
  if (snap === undefined) throw damaged('line 1 is not JSON');
  const payouts: StateSnapshot['payouts'][number][] = [];
  let n = 1;
  for (const line of lines) {
    n++;
    if (line === ']}') return { ...snap, payouts };
    const payout = parsedOrUndefined(line.endsWith(',') ? line.slice(0, -1) : line);
    if (typeof payout !== 'object' || payout === null) throw damaged(`line ${n} is not a payout`);
    payouts.push(payout as StateSnapshot['payouts'][number]);
  }
  throw damaged('it ends before its last line');
}

export class LedgerFile {
  private readonly journalPath: string;
  /** The journal a fold set aside: its changes are in the snapshot being written (until then, replayed on start). */
  private readonly foldingPath: string;
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
  /** The snapshot being written beside the answers (see foldAside). */
  private folding: Promise<void> | null = null;
  private failure: SandboxError | null = null;

  constructor(
    private readonly path: string,
    private readonly ledger: Ledger,
    private readonly logger: SandboxLogger,
    private readonly stats: SandboxStats,
    private readonly foldMinChanges = FOLD_MIN_CHANGES,
  ) {
    this.journalPath = `${path}.journal`;
    this.foldingPath = `${path}.journal.folding`;
  }

  /** Restores the saved state (snapshot, then journals), folds it into a fresh snapshot and starts journaling changes. */
  async load(): Promise<void> {
    let snapshotSeq = 0;
    if (existsSync(this.path)) {
      const snap = readSnapshot(this.path);
      const restored = this.ledger.restore(snap);
      snapshotSeq = snap.journalSeq ?? 0;
      this.logger.info({ payouts: restored.length }, 'sandbox ledger restored');
    }
    this.seq = snapshotSeq;
    let replayed = 0;
    let journaled = false;
    // A journal set aside by a fold that did not finish holds the changes before the current journal's.
    for (const path of [this.foldingPath, this.journalPath]) {
      const journal = existsSync(path) ? readFileSync(path) : Buffer.alloc(0);
      journaled ||= journal.length > 0;
      for (const line of parseJournal(journal, path)) {
        if (line.seq <= this.seq) continue;
        this.ledger.apply(line.change);
        this.seq = line.seq;
        replayed++;
      }
    }
    if (replayed > 0) this.logger.info({ changes: replayed }, 'sandbox journal replayed');
    this.durableSeq = this.seq;
    const created = !existsSync(this.journalPath);
    this.fd = openSync(this.journalPath, 'a', 0o600);
    if (created) syncDirectory(dirname(this.journalPath));
    if (journaled || existsSync(this.foldingPath)) await this.foldInPlace();
    this.ledger.onChange = (change) => this.append(change);
  }

  /** Resolves once every change made so far is on disk; rejects if the journal cannot be written. */
  durable(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.durableSeq >= this.seq) return Promise.resolve();
    return new Promise((resolve, reject) => this.waiters.push({ seq: this.seq, resolve, reject }));
  }

  /** Resolves once the journal writes and a fold under way are done. */
  async idle(): Promise<void> {
    await this.flushing;
    await this.folding;
  }

  /** Writes what is pending, folds the journal into the snapshot and stops journaling. */
  async close(): Promise<void> {
    this.ledger.onChange = null;
    await this.idle();
    if (this.fd === null) return;
    if (!this.failure) await this.foldInPlace();
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
        const upTo = this.seq;
        const lines = this.queued;
        this.queued = [];
        for (let i = 0; i < lines.length; i += LINES_PER_WRITE)
          await writeAll(this.fd, Buffer.from(lines.slice(i, i + LINES_PER_WRITE).join(''), 'utf8'));
        await dataSync(this.fd);
        this.stats.journal.syncs++;
        this.settle(upTo);
        if (this.folding === null && this.journalChanges >= Math.max(this.foldMinChanges, this.ledger.size)) this.foldAside();
      }
    } catch (err) {
      this.fail(err);
    } finally {
      this.flushing = null;
    }
  }

  /**
   * Starts a fold beside the answers: the journal, every change of it on disk, is set aside and a new one
   * takes the changes from now on; the snapshot of the ledger as of now is written in the background.
   */
  private foldAside(): void {
    const fd = this.fd;
    if (fd === null) return;
    const snapshot = this.ledger.snapshot();
    const seq = this.seq;
    renameSync(this.journalPath, this.foldingPath);
    this.fd = openSync(this.journalPath, 'a', 0o600);
    syncDirectory(dirname(this.journalPath));
    closeSync(fd);
    this.journalChanges = 0;
    this.folding = (async () => {
      try {
        await this.writeSnapshot(snapshot, seq);
        rmSync(this.foldingPath, { force: true });
      } catch (err) {
        this.fail(err);
      } finally {
        this.folding = null;
      }
    })();
  }

  /** Replaces the snapshot with the ledger and empties the journal, nothing changing meanwhile (on start and close). */
  private async foldInPlace(): Promise<void> {
    const fd = this.fd;
    if (fd === null) return;
    await this.writeSnapshot(this.ledger.snapshot(), this.seq);
    // A crash before this truncation leaves lines the snapshot already holds: their seq makes the replay skip them.
    ftruncateSync(fd, 0);
    fsyncSync(fd);
    rmSync(this.foldingPath, { force: true });
    this.queued = [];
    this.journalChanges = 0;
    this.settle(this.seq);
  }

  /** Writes `snapshot` (the ledger as of change `seq`) to a new file a part at a time, then puts it in place of the old. */
  private async writeSnapshot(snapshot: LedgerSnapshot, seq: number): Promise<void> {
    const { balances, payouts } = snapshot;
    const tmp = `${this.path}.tmp`;
    const tmpFd = openSync(tmp, 'w', 0o600);
    try {
      const head = JSON.stringify({ journalSeq: seq, balances });
      await writeAll(tmpFd, Buffer.from(`${head.slice(0, -1)}${PAYOUTS_FOLLOW}\n`, 'utf8'));
      for (let i = 0; i < payouts.length; i += LINES_PER_WRITE) {
        const part = payouts.slice(i, i + LINES_PER_WRITE).map((p) => JSON.stringify(p));
        await writeAll(tmpFd, Buffer.from(`${part.join(',\n')}${i + LINES_PER_WRITE < payouts.length ? ',' : ''}\n`, 'utf8'));
      }
      await writeAll(tmpFd, Buffer.from(']}\n', 'utf8'));
      await dataSync(tmpFd);
    } finally {
      closeSync(tmpFd);
    }
    renameSync(tmp, this.path);
    syncDirectory(dirname(this.path));
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
