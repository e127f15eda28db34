/**
 * `payoutd demo` lists the outbox once every batch is done: final, and its
 * files written. A batch refused for its rows is REJECTED before its result
 * files are written, so its state alone would list the outbox too early.
 */
import { describe, expect, it } from 'vitest';
import { demoDone } from '../../src/cli/commands/demo.js';
import { useTestDatabase } from '../support/database.js';

describe('payoutd demo: when it lists the files', () => {
  const store = useTestDatabase('payoutd-demo-done-');

  it('waits for the result files of a batch refused for its rows, not its state alone', async () => {
    const { db } = store;
    await db('batches').insert({
      id: 'B-1',
      file_name: 'payouts-with-errors.xlsx',
      stored_path: 'payouts-with-errors.xlsx',
      sha256: 'B-1',
      size: 1,
      mtime_ms: 1,
      state: 'REJECTED',
      row_count: 6,
      received_at: 1,
      updated_at: 1,
      ack_written_at: 1,
    });
    expect(await demoDone(db, 1)).toBe(false);
    await db('batches').where('id', 'B-1').update({ result_written_at: 2 });
    expect(await demoDone(db, 1)).toBe(true);
    // Fewer batches than files dropped: not yet.
    expect(await demoDone(db, 2)).toBe(false);
  });
});
