/**
 * The debug log's progress line counts each ACTIVE batch's rows, which reads every one of them: only when the
 * debug level is on, never for a line the logger drops.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import pino from 'pino';
import { ManualClock } from '../../src/domain/clock.js';
import { ProgressLog } from '../../src/daemon/progress.js';
import { useTestDatabase } from '../support/database.js';
import { seedBatch } from '../store/moves.js';

describe('daemon: the progress line of the debug log', () => {
  const store = useTestDatabase('payoutd-progress-log-');

  it('counts the rows of ACTIVE batches only when the debug level is on', async () => {
    const { db } = store;
    await seedBatch(db, 'PL1', 3, 'PENDING');
    const lines: string[] = [];
    const sink = new Writable({ write: (chunk: Buffer, _e, done) => (lines.push(chunk.toString()), done()) });
    const payoutReads = async (level: string): Promise<number> => {
      const seen: string[] = [];
      const record = (q: { sql: string }): void => void seen.push(q.sql);
      db.on('query', record);
      try {
        await new ProgressLog(db, new ManualClock(), pino({ level }, sink)).maybeLog();
      } finally {
        db.off('query', record);
      }
      return seen.filter((sql) => sql.includes('`payouts`')).length;
    };
    expect(await payoutReads('info')).toBe(0);
    expect(lines).toEqual([]);
    expect(await payoutReads('debug')).toBeGreaterThan(0);
    expect(lines.map((l) => JSON.parse(l) as { msg: string; batchId: string; total: number })).toMatchObject([
      { msg: 'batch progress', batchId: 'PL1', total: 3 },
    ]);
  });
});
