/**
 * GroupCommit: many small writes, one transaction. Each caller hands over a
 * row move and waits until it is committed; moves arriving within 20 ms
 * share one transaction, so recording the answers of 64 creates in flight
 * does not cost 64 commits (the submitter frees a create's slot at its
 * answer, so the wait never holds a create back). The commit itself does
 * not wait for the disk (recordAnswers): a crash before the commit, or a
 * power loss soon after it, loses only records whose rows are still
 * CREATING: at the next start they become UNKNOWN and are resolved by
 * query, as any crash is.
 */
import type { Database } from './db.js';
import { recordAnswers } from './answers.js';
import type { RowMove } from './moves.js';

/** The moves waiting for one commit, and the promise each of their callers waits on. */
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
    /** Longest a move waits for company before it is committed. */
    private readonly maxDelayMs = 20,
    /** Commit at once when this many moves wait. */
    private readonly maxBatch = 256,
  ) {}

  /**
   * Resolves once the move is committed (or rejects with the transaction's error). The moves of one commit
   * share one promise: at L = 0 a promise and two closures per create's answer were a measurable part of
   * the submitter's own work.
   */
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
