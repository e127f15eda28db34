/** Recording the payout service's answers (creates, polls) and other moves of many rows, each in one transaction. */
import type { Knex } from 'knex';
import { isPostgres, writeTransaction, type Database } from './db.js';
import { applyMoves, type RowMove } from './moves.js';
import { reproducibleTransaction } from './reproducible.js';

/** Applies independent row moves in one transaction; a row no longer in its move's `from` is skipped. Returns how many happened. */
export async function applyRowMoves(db: Database, moves: RowMove[], now: number): Promise<number> {
  if (moves.length === 0) return 0;
  return writeTransaction(db, async (trx) => (await applyMoves(trx, moves, now)).length);
}

/**
 * Applies the moves a round decided for rows it claimed by their due time (claimDueRows), only to those still so
 * claimed: a round that outlasted its claim must not apply what it decided from answers older than what another
 * round (another instance's, which may have created the row again since) made of the row. Nor to a row a webhook
 * named since (a new poll round): a claim in the event's millisecond sets the same due time again. Returns the
 * moves applied.
 */
export async function applyClaimedMoves(
  db: Database,
  moves: RowMove[],
  claimed: readonly { id: number; nextAttemptAt: number | null; pollRound: number }[],
  now: number,
): Promise<RowMove[]> {
  if (moves.length === 0) return [];
  const claims = new Map(claimed.map((r) => [r.id, r]));
  return writeTransaction(db, async (trx) => {
    const current = trx('payouts')
      .whereIn('id', [...claims.keys()])
      .select('id', 'next_attempt_at', 'poll_round');
    // Locked to the end of the transaction on PostgreSQL, in id order as everywhere (lockInIdOrder); SQLite's
    // write lock is already held.
    if (isPostgres(db)) void current.orderBy('id').forUpdate();
    const still = new Set<number>();
    for (const r of (await current) as { id: number | string; next_attempt_at: number | string | null; poll_round: number | string }[]) {
      const mark = r.next_attempt_at === null ? null : Number(r.next_attempt_at);
      const claim = claims.get(Number(r.id));
      if (mark === claim?.nextAttemptAt && Number(r.poll_round) === claim.pollRound) still.add(Number(r.id));
    }
    return applyMoves(
      trx,
      moves.filter((m) => still.has(m.row.id)),
      now,
    );
  });
}

/** Moves that share the time they were decided at (one group commit, one poll call's answer). */
export interface AnswerMoves {
  moves: RowMove[];
  at: number;
}

/**
 * Records service answers in one transaction whose commit need not reach the disk (./reproducible.ts). Returns the
 * moves that happened: a row another instance moved first is left out.
 */
export async function recordAnswers(db: Database, answers: readonly AnswerMoves[]): Promise<RowMove[]> {
  if (answers.every((a) => a.moves.length === 0)) return [];
  return reproducibleTransaction(db, async (trx) => {
    await lockInIdOrder(
      trx,
      answers.flatMap((a) => a.moves.map((m) => m.row.id)),
    );
    const moved: RowMove[] = [];
    for (const a of answers) if (a.moves.length > 0) moved.push(...(await applyMoves(trx, a.moves, a.at)));
    return moved;
  });
}

/**
 * On PostgreSQL, locks these rows in id order, as every transaction that locks several does first: two locking
 * the same rows in different orders could deadlock; in one order the later waits, then finds the rows moved.
 */
export async function lockInIdOrder(trx: Knex.Transaction | Database, ids: readonly number[]): Promise<void> {
  if (!isPostgres(trx) || ids.length < 2) return;
  const sorted = [...new Set(ids)].sort((a, b) => a - b);
  for (let i = 0; i < sorted.length; i += 5000)
    await trx('payouts')
      .select('id')
      .whereIn('id', sorted.slice(i, i + 5000))
      .orderBy('id')
      .forUpdate();
}
