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
  committed: Promise<void>;
  resolve: () => void;
  reject: (err: unknown) => void;
}

function pendingCommit(): PendingCommit {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const committed = new Promise<void>((res, rej) => {
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

  /** Resolves once the move is committed (or rejects with the transaction's error); a commit's moves share one promise. */
  add(move: RowMove): Promise<void> {
    const pending = (this.pending ??= pendingCommit());
    pending.moves.push(move);
    if (pending.moves.length >= this.maxBatch) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), this.maxDelayMs);
    return pending.committed;
  }

  private async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.pending;
    this.pending = null;
    if (batch === null) return;
    try {
      await recordAnswers(this.db, [{ moves: batch.moves, at: this.now() }]);
      batch.resolve();
    } catch (err) {
      batch.reject(err);
    }
  }
}
