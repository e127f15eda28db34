/** Recording the payout service's answers (creates, polls) and other moves of many rows, each in one transaction. */
import type { Knex } from 'knex';
import { isPostgres, writeTransaction, type Database } from './db.js';
import { applyMoves, type RowMove } from './moves.js';
import { reproducibleTransaction } from './reproducible.js';

/** Applies independent row moves in one transaction; a row no longer in its move's `from` is skipped. Returns how many happened. */
export async function applyRowMoves(db: Database, moves: RowMove[], now: number): Promise<number> {
  if (moves.length === 0) return 0;
  return writeTransaction(db, (trx) => applyMoves(trx, moves, now));
}

/** Moves that share the time they were decided at (one group commit, one poll call's answer). */
export interface AnswerMoves {
  moves: RowMove[];
  at: number;
}

/** Records service answers in one transaction whose commit need not reach the disk (./reproducible.ts). Returns rows moved. */
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
 * On PostgreSQL, locks the rows about to move in id order first: two instances answering for the same rows
 * in different orders could deadlock; in one order the later waits, then finds the rows moved and skips them.
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
