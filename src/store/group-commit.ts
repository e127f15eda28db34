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
import { recordAnswers, type RowMove } from './submission.js';

interface Waiting {
  move: RowMove;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export class GroupCommit {
  private waiting: Waiting[] = [];
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly db: Database,
    private readonly now: () => number,
    /** Longest a move waits for company before it is committed. */
    private readonly maxDelayMs = 20,
    /** Commit at once when this many moves wait. */
    private readonly maxBatch = 256,
  ) {}

  /** Resolves once the move is committed (or rejects with the transaction's error). */
  add(move: RowMove): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ move, resolve, reject });
      if (this.waiting.length >= this.maxBatch) void this.flush();
      else this.timer ??= setTimeout(() => void this.flush(), this.maxDelayMs);
    });
  }

  private async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.waiting;
    this.waiting = [];
    if (batch.length === 0) return;
    try {
      await recordAnswers(this.db, [{ moves: batch.map((w) => w.move), at: this.now() }]);
      for (const w of batch) w.resolve();
    } catch (err) {
      for (const w of batch) w.reject(err);
    }
  }
}
