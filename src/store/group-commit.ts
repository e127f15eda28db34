/**
 * GroupCommit: many small writes, one transaction. Moves arriving within `maxDelayMs` share one commit, so
 * the answers of many creates in flight do not cost a commit each. The commit need not reach the disk
 * (recordAnswers): rows a lost commit leaves CREATING become UNKNOWN at the next start and are resolved by query.
 */
import type { Database } from './db.js';
import { recordAnswers } from './answers.js';
import type { RowMove } from './moves.js';

interface PendingCommit {
  moves: RowMove[];
  /** The moves that happened (a row another actor moved first, or whose guard no longer held, is left out). */
  committed: Promise<ReadonlySet<RowMove>>;
  resolve: (applied: ReadonlySet<RowMove>) => void;
  reject: (err: unknown) => void;
}

function pendingCommit(): PendingCommit {
  let resolve!: (applied: ReadonlySet<RowMove>) => void;
  let reject!: (err: unknown) => void;
  const committed = new Promise<ReadonlySet<RowMove>>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A failed commit rejects every caller's await; this keeps it from also counting as unhandled when none is left.
  committed.catch(() => undefined);
  return { moves: [], committed, resolve, reject };
}

export class GroupCommit {
  private pending: PendingCommit | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly db: Database,
    private readonly now: () => number,
    private readonly maxDelayMs = 20,
    private readonly maxBatch = 256,
  ) {}

  /**
   * Resolves once the move's commit is done, with whether the move happened (false: its guard no longer held), or
   * rejects with the transaction's error.
   */
  add(move: RowMove): Promise<boolean> {
    const pending = (this.pending ??= pendingCommit());
    pending.moves.push(move);
    if (pending.moves.length >= this.maxBatch) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), this.maxDelayMs);
    return pending.committed.then((applied) => applied.has(move));
  }

  private async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.pending;
    this.pending = null;
    if (batch === null) return;
    try {
      batch.resolve(new Set(await recordAnswers(this.db, [{ moves: batch.moves, at: this.now() }])));
    } catch (err) {
      batch.reject(err);
    }
  }
}
