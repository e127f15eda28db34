/**
 * Recording what was decided about rows: the payout service's answers
 * (creates, polls) and other moves of many rows at once, each in one
 * transaction (moves.ts applies them).
 */
import type { Knex } from 'knex';
import { isPostgres, type Database } from './db.js';
import { applyMoves, type RowMove } from './moves.js';
import { reproducibleTransaction } from './reproducible.js';

/** Applies independent row moves in one transaction; a row no longer in its move's `from` is skipped. Returns how many happened. */
export async function applyRowMoves(db: Database, moves: RowMove[], now: number): Promise<number> {
  if (moves.length === 0) return 0;
  return db.transaction((trx) => applyMoves(trx, moves, now));
}

/** Moves that share the time they were decided at (one group commit, one poll call's answer). */
export interface AnswerMoves {
  moves: RowMove[];
  at: number;
}

/**
 * Records answers of the payout service (creates, polls) in one transaction
 * whose commit need not reach the disk at once: each is asked again after a
 * crash that lost it (./reproducible.ts). Returns how many rows moved.
 */
export async function recordAnswers(db: Database, answers: readonly AnswerMoves[]): Promise<number> {
  if (answers.every((a) => a.moves.length === 0)) return 0;
  return reproducibleTransaction(db, async (trx) => {
    await lockInIdOrder(
      trx,
      answers.flatMap((a) => a.moves.map((m) => m.row.id)),
    );
    let moved = 0;
    for (const a of answers) if (a.moves.length > 0) moved += await applyMoves(trx, a.moves, a.at);
    return moved;
  });
}

/**
 * On PostgreSQL, locks the rows about to move in id order first. The moves
 * run as one UPDATE per group of moves alike, each locking its rows as it reaches them, and
 * two instances can hold answers for the same rows (a webhook or a
 * settlement sweep made a row due while another instance was asking about
 * it): taken in different orders, their locks could deadlock, which aborts
 * one of the answers. Taken in one order, the later answer waits, then finds
 * the rows already moved and skips them.
 */
async function lockInIdOrder(trx: Knex.Transaction, ids: number[]): Promise<void> {
  if (!isPostgres(trx) || ids.length < 2) return;
  const sorted = [...new Set(ids)].sort((a, b) => a - b);
  for (let i = 0; i < sorted.length; i += 5000)
    await trx('payouts')
      .select('id')
      .whereIn('id', sorted.slice(i, i + 5000))
      .orderBy('id')
      .forUpdate();
}
