/**
 * A store error in the daemon's error log: knex puts the whole statement before the driver's message, so a
 * cut message showed SQL and never the cause ("database or disk is full"). The log keeps the driver's code and
 * its own message, and never a bound value (an account number).
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { WorkLoop } from '../../src/daemon/work-loop.js';
import { createLogger, safeError } from '../../src/log/index.js';
import { addBatch, addRows, request, useStore, validRow } from '../finance/helpers.js';
import { waitFor } from '../pipeline/harness.js';

const ACCOUNT = '9876543210';

/** A real insert of a row refused by the database file as a full disk would refuse it. */
async function failedInsert(): Promise<unknown> {
  const s = await store();
  await addBatch(s.db, 'B-1', 'payouts.csv');
  await s.db.raw(`CREATE TRIGGER fail_ins BEFORE INSERT ON payouts BEGIN SELECT RAISE(FAIL, 'database or disk is full'); END;`);
  try {
    await addRows(s.db, [validRow('B-1', 2, request('INV-1', {}, { accountNumber: ACCOUNT }))]);
  } catch (err) {
    return err;
  }
  throw new Error('the insert did not fail');
}

function logLines(): { lines: string[]; stream: Writable } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  return { lines, stream };
}

const store = useStore();

describe('store errors in the log', () => {
  it("keeps the driver's code and message, without the statement or its values", async () => {
    const err = await failedInsert();
    const safe = safeError(err) as Record<string, unknown>;
    expect(safe['message']).toBe('database or disk is full');
    expect(safe['code']).toMatch(/^SQLITE_/);
    expect(JSON.stringify(safe)).not.toContain(ACCOUNT);
    expect(JSON.stringify(safe).toLowerCase()).not.toContain('insert into');
  });

  it('a work loop pass that failed so logs the cause', async () => {
    const err = await failedInsert();
    const { lines, stream } = logLines();
    const abort = new AbortController();
    const loop = new WorkLoop({ name: 'test', idleMs: 10, logger: createLogger('info', stream), pass: () => Promise.reject(err) });
    loop.start(abort.signal);
    await waitFor(() => lines.length > 0, 'the failure logged');
    abort.abort();
    await loop.stopped();
    const failed = lines
      .map((l) => JSON.parse(l) as { msg: string; err: Record<string, unknown> })
      .find((l) => l.msg.includes('work loop pass failed'));
    expect(failed?.err).toMatchObject({ message: 'database or disk is full' });
    expect(lines.join('\n')).not.toContain(ACCOUNT);
  });
});
