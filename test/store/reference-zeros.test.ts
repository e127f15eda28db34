/**
 * The acceptance's check of references that lost their leading zeros on a real SQLite file
 * (test/store/reference-zeros.ts), the plan of its reads (a file of other references costs one probe of a
 * partial index; a file of numeric references an index search per row, never a walk of other rows), and the
 * rows stored before migration 0040 found as those stored after.
 */
import type { Knex } from 'knex';
import { describe, expect, it } from 'vitest';
import { acceptBatchRows } from '../../src/store/acceptance.js';
import { useTestDatabase } from '../support/database.js';
import { addBatch, addRows, request, validRow } from '../finance/helpers.js';
import { referenceZerosChecks } from './reference-zeros.js';

/** The statements the acceptance of `batchId` sends that read reference_digits, with their plans. */
async function digitReads(db: Knex, batchId: string): Promise<{ sql: string; plan: string[] }[]> {
  const seen: { sql: string; bindings: Knex.RawBinding[] }[] = [];
  const record = (q: { sql: string; bindings: Knex.RawBinding[] }): void => void seen.push(q);
  db.on('query', record);
  await acceptBatchRows(db, batchId, 'skip-rows', 5);
  db.off('query', record);
  const reads: { sql: string; plan: string[] }[] = [];
  for (const q of seen.filter((x) => x.sql.includes('reference_digits') && /^select/i.test(x.sql))) {
    const plan = (await db.raw(`EXPLAIN QUERY PLAN ${q.sql}`, q.bindings)) as { detail: string }[];
    reads.push({ sql: q.sql, plan: plan.map((p) => p.detail) });
  }
  return reads;
}

describe('store: references that lost their leading zeros (SQLite)', () => {
  const store = useTestDatabase('payoutd-reference-zeros-');

  referenceZerosChecks(store);

  it('reads a file of other references with one probe, and a file of numeric ones through the indexes of 0040', async () => {
    const { db } = store;
    await addBatch(db, 'EARLIER', 'earlier.csv');
    await addRows(db, [{ ...validRow('EARLIER', 2, request('000123')), state: 'READY' }]);
    await addBatch(db, 'PLAIN', 'plain.csv');
    await addRows(
      db,
      Array.from({ length: 2000 }, (_, i) => ({ ...validRow('PLAIN', i + 2, request(`PLAIN-${i + 1}`)), state: 'READY' as const })),
    );
    const plain = await digitReads(db, 'PLAIN');
    expect(plain).toHaveLength(1);
    expect(plain[0]?.plan.join(' | ')).toMatch(/^SEARCH payouts USING (COVERING )?INDEX payouts_batch_reference_digits \(batch_id=\?\)$/);

    await addBatch(db, 'DIGITS', 'digits.csv');
    await addRows(
      db,
      Array.from({ length: 2000 }, (_, i) => ({ ...validRow('DIGITS', i + 2, request(String(i + 1))), state: 'READY' as const })),
    );
    const digits = await digitReads(db, 'DIGITS');
    expect(digits).toHaveLength(2);
    const pairs = digits[1]?.plan ?? [];
    expect(pairs.filter((d) => /^SCAN/.test(d))).toEqual([]);
    // The file's rows a range of lines at a time, each probing the rows of its digits.
    expect(pairs.find((d) => d.startsWith('SEARCH p '))).toMatch(/\(batch_id=\? AND (state=\? AND )?line>\?\)$/);
    expect(pairs).toContain('SEARCH o USING INDEX payouts_reference_digits (reference_digits=?)');
    expect(await db('payouts').where({ batch_id: 'DIGITS', line: 124 }).first('state')).toEqual({ state: 'DUPLICATE' });
  });
});
