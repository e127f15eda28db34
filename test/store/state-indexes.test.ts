/**
 * The partial index of each state read by its state alone (migration 0007), on a real SQLite file: every
 * store read of PENDING, UNKNOWN or CREATING rows is planned through its state's index (SQLite plans without
 * statistics, so a small file shows the plan a large one gets), and no index over every row leads with the
 * state (a claim, an answer and a settlement would each move an entry in it).
 */
import { describe, expect, it } from 'vitest';
import type { Knex } from 'knex';
import { rowsInState } from '../../src/store/payouts.js';
import { listDueForPoll, listStalePending, nextPollDue, oldestPendingCreatedAt } from '../../src/store/settlement.js';
import { claimDueRows, markInterruptedCreatesUnknown } from '../../src/store/claims.js';
import { countRowsInState } from '../../src/store/counts.js';
import { useTestDatabase } from '../support/database.js';
import { seedBatch } from './moves.js';

const STATE_INDEXES = { PENDING: 'payouts_pending_due', UNKNOWN: 'payouts_unknown_due', CREATING: 'payouts_creating_lease' };

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
    const reads: [keyof typeof STATE_INDEXES, () => Promise<unknown>][] = [
      ['PENDING', () => listDueForPoll(db, 10, 5)],
      ['PENDING', () => listDueForPoll(db, 10, 5, { at: 1, id: 1 })],
      ['PENDING', () => nextPollDue(db)],
      ['PENDING', () => countRowsInState(db, 'PENDING')],
      ['PENDING', () => listStalePending(db, 10, 5)],
      ['PENDING', () => oldestPendingCreatedAt(db)],
      ['UNKNOWN', () => claimDueRows(db, 'UNKNOWN', 'next_attempt_at', 10, 5, 1000)],
      ['CREATING', () => markInterruptedCreatesUnknown(db, 10, false)],
      ['CREATING', () => markInterruptedCreatesUnknown(db, 10, true)],
    ];
    for (const [state, read] of reads) {
      seen.length = 0;
      await read();
      const reading = seen.filter((q) => q.sql.includes(`state = '${state}'`));
      expect(reading.length, state).toBeGreaterThan(0);
      for (const q of reading) {
        const plan = (await db.raw(`EXPLAIN QUERY PLAN ${q.sql}`, q.bindings)) as { detail: string }[];
        expect(plan.map((p) => p.detail).join(' | '), q.sql).toMatch(new RegExp(`USING (COVERING )?INDEX ${STATE_INDEXES[state]}\\b`));
      }
    }
    db.off('query', record);
  });

  it('names only the states that have an index', () => {
    const { db } = store;
    expect(() => rowsInState(db, 'PAID' as never)).toThrow(/no partial index covers state "PAID"/);
  });
});
