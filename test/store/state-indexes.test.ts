/**
 * The partial index of each state read by its state alone (migration 0007), on a real SQLite file: every
 * store read of PENDING, UNKNOWN or CREATING rows goes through its state's index, as the query plan says,
 * and the two indexes led by the state over every row are gone (a claim, an answer and a settlement each
 * moved an entry in both).
 */
import { describe, expect, it } from 'vitest';
import type { Knex } from 'knex';
import { STATE_INDEXES, rowsInState } from '../../src/store/payouts.js';
import { listDueForPoll, listStalePending, nextPollDue, oldestPendingCreatedAt } from '../../src/store/settlement.js';
import { claimDueRows, countRowsInState, markInterruptedCreatesUnknown } from '../../src/store/submission.js';
import { useTestDatabase } from '../support/database.js';
import { seedBatch } from './moves.js';

describe('store: one partial index per state read alone (SQLite)', () => {
  const store = useTestDatabase('payoutd-state-idx-');

  it('each covers its one state, written as a literal; no index over every row leads with the state', async () => {
    const { db } = store;
    const indexes = (await db('sqlite_master').where({ type: 'index', tbl_name: 'payouts' }).select('name', 'sql')) as {
      name: string;
      sql: string | null;
    }[];
    for (const [state, name] of Object.entries(STATE_INDEXES))
      expect(indexes.find((i) => i.name === name)?.sql, name).toMatch(new RegExp(`WHERE state = '${state}'$`));
    expect(indexes.filter((i) => /\(`?state`?,/.test(i.sql ?? '')).map((i) => i.name)).toEqual([]);
  });

  it('every read of PENDING, UNKNOWN or CREATING rows is planned through that state index', async () => {
    const { db } = store;
    await seedBatch(db, 'SI', 6, 'PENDING');
    const seen: { sql: string; bindings: Knex.RawBinding[] }[] = [];
    const record = (q: { sql: string; bindings: Knex.RawBinding[] }): void => void seen.push(q);
    db.on('query', record);
    const reads: [string, () => Promise<unknown>][] = [
      ['payouts_pending_due', () => listDueForPoll(db, 10, 5)],
      ['payouts_pending_due', () => listDueForPoll(db, 10, 5, { at: 1, id: 1 })],
      ['payouts_pending_due', () => nextPollDue(db)],
      ['payouts_pending_due', () => countRowsInState(db, 'PENDING')],
      ['payouts_pending_due', () => listStalePending(db, 10, 5)],
      ['payouts_pending_due', () => oldestPendingCreatedAt(db)],
      ['payouts_unknown_due', () => claimDueRows(db, 'UNKNOWN', 'next_attempt_at', 10, 5, 1000)],
      ['payouts_creating_lease', () => markInterruptedCreatesUnknown(db, 10, false)],
      ['payouts_creating_lease', () => markInterruptedCreatesUnknown(db, 10, true)],
    ];
    for (const [index, read] of reads) {
      seen.length = 0;
      await read();
      const reading = seen.filter((q) => q.sql.includes('INDEXED BY'));
      expect(reading.length, index).toBeGreaterThan(0);
      for (const q of reading) {
        const plan = (await db.raw(`EXPLAIN QUERY PLAN ${q.sql}`, q.bindings)) as { detail: string }[];
        expect(plan.map((p) => p.detail).join(' | '), q.sql).toMatch(new RegExp(`USING (COVERING )?INDEX ${index}\\b`));
      }
    }
    db.off('query', record);
  });

  it('names only the states that have an index', () => {
    const { db } = store;
    expect(() => rowsInState(db, 'PAID' as never)).toThrow(/no partial index covers state "PAID"/);
  });
});
