/**
 * What the acceptance of a batch reads to find a reference on several of its rows, on a real SQLite file:
 * the batch's VALIDATED and INVALID rows through (batch_id, state, line), and each of their references
 * through the reference index, as the query plan says; never a scan of the batch's every row (a million
 * for a large file).
 */
import { describe, expect, it } from 'vitest';
import type { Knex } from 'knex';
import { acceptBatchRows, REFERENCE_INDEX } from '../../src/store/acceptance.js';
import { useTestDatabase } from '../support/database.js';
import { addBatch, addRows, request, validRow } from '../finance/helpers.js';

describe('store: the acceptance reads only the candidates of a reference used twice (SQLite)', () => {
  const store = useTestDatabase('payoutd-accept-reads-');

  it('plans the candidates through (batch_id, state, line) and their rows through the reference index', async () => {
    const { db } = store;
    await addBatch(db, 'AR', 'AR.csv');
    await addRows(db, [validRow('AR', 2, request('AR-1')), validRow('AR', 3, request('AR-2')), validRow('AR', 4, request('AR-1'))]);
    const seen: { sql: string; bindings: Knex.RawBinding[] }[] = [];
    const record = (q: { sql: string; bindings: Knex.RawBinding[] }): void => void seen.push(q);
    db.on('query', record);
    const verdict = await acceptBatchRows(db, 'AR', 'skip-rows', 5);
    db.off('query', record);
    expect(verdict).toMatchObject({ accepted: true, readyCount: 1, invalidCount: 2 });
    const grouping = seen.filter((q) => /having count\(\*\) > 1/i.test(q.sql));
    expect(grouping).toHaveLength(1);
    const [q] = grouping as [{ sql: string; bindings: Knex.RawBinding[] }];
    const plan = ((await db.raw(`EXPLAIN QUERY PLAN ${q.sql}`, q.bindings)) as { detail: string }[]).map((p) => p.detail);
    expect(plan.join(' | ')).toMatch(
      new RegExp(`SEARCH payouts USING (COVERING )?INDEX ${REFERENCE_INDEX} \\(merchant_reference_id=\\?\\)`),
    );
    expect(plan.join(' | ')).toMatch(/SEARCH payouts USING (COVERING )?INDEX payouts_batch_state_line \(batch_id=\? AND state=\?\)/);
    expect(plan.join(' | ')).not.toMatch(/SCAN payouts|payouts_batch_state_line \(batch_id=\?\)(?! AND)/);
  });
});
