/**
 * What the acceptance of a batch reads to find a reference on several of its rows, on a real SQLite file:
 * the batch's VALIDATED and INVALID rows through (batch_id, state, line), and the rows of each of their
 * references through the reference index, as the query plan says; never a walk of the batch's every row
 * (a million for a large file).
 */
import { describe, expect, it } from 'vitest';
import type { Knex } from 'knex';
import { acceptBatchRows } from '../../src/store/acceptance.js';
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
    const lookups = seen.filter((q) => /in \(select/i.test(q.sql));
    expect(lookups).toHaveLength(1);
    const [q] = lookups as [{ sql: string; bindings: Knex.RawBinding[] }];
    const plan = ((await db.raw(`EXPLAIN QUERY PLAN ${q.sql}`, q.bindings)) as { detail: string }[]).map((p) => p.detail).join(' | ');
    expect(plan).toMatch(/SEARCH payouts USING (COVERING )?INDEX payouts_merchant_reference_id_index \(merchant_reference_id=\?\)/);
    expect(plan).toMatch(/SEARCH payouts USING (COVERING )?INDEX payouts_batch_state_line \(batch_id=\? AND state=\?\)/);
    expect(plan).not.toMatch(/SCAN payouts|\(batch_id=\?\)/);
  });
});
