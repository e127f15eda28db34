/**
 * PostgreSQL: reports whose periods meet list every payout once. A creation's time is read under a shared lock
 * its write holds to its commit; a report fixes its end under that lock alone, so it waits out a creation in flight
 * (test/finance/consecutive-reports.ts has the checks SQLite runs too).
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, type ResolvedConfig } from '../../src/config/index.js';
import { ManualClock } from '../../src/domain/clock.js';
import { writeTransaction } from '../../src/store/db.js';
import { applyMoves, type RowMove } from '../../src/store/moves.js';
import {
  answered,
  checkAnswerWrittenAfterTheEnd,
  checkClockBehindTheReport,
  referencesIn,
  reportFrom,
  sentRows,
} from '../finance/consecutive-reports.js';
import { T0 } from '../finance/helpers.js';
import { useTempDirs } from '../report/tmp.js';
import { pgQuery, pgReachable, useEmptySchema, useTestSchema, type PgSchema } from './pg.js';

describe.skipIf(!pgReachable)('postgres: payoutd report --since, consecutive periods', () => {
  const schema = useTestSchema();
  const store = useEmptySchema(schema, { latest: true });
  const tempDir = useTempDirs();

  const configFor = (dir: string): ResolvedConfig =>
    loadConfig(
      { env: {}, cwd: dir },
      {
        paths: { stateDir: dir, outbox: join(dir, 'outbox'), inbox: join(dir, 'inbox') },
        database: { client: 'pg', url: schema.url },
        outbox: { xlsx: false },
      },
    );

  it('an answer waiting for its group commit while a report fixes its end is in the next report', async () => {
    const dir = await tempDir();
    await checkAnswerWrittenAfterTheEnd(store.db, configFor(dir), dir);
  });

  it("an answer recorded just after a report fixed its end, on a clock behind the report's, is in the next report", async () => {
    const dir = await tempDir();
    await checkClockBehindTheReport(store.db, configFor(dir), dir);
  });

  it('a creation being written while a report fixes its end is in that report: the report waits for its commit', async () => {
    const { db } = store;
    const dir = await tempDir();
    const [inv1] = (await sentRows(db)) as [RowMove['row']];
    let commit!: () => void;
    const committing = new Promise<void>((resolve) => (commit = resolve));
    let written!: () => void;
    const stamped = new Promise<void>((resolve) => (written = resolve));
    // The submitter's write of INV-1's answer, held open after it stamped the creation (at T0 + 500 ms).
    const writer = writeTransaction(db, async (trx) => {
      await applyMoves(trx, [answered(inv1, 'P-1', new ManualClock(T0 + 500))], T0 + 500);
      written();
      await committing;
    });
    await stamped;

    const end = T0 + 1000;
    const clock = new ManualClock(end);
    let done = false;
    const first = reportFrom(configFor(dir), dir, 'r1.csv', T0 - 1000, clock).finally(() => (done = true));
    // Until the report waits for the writer's lock, or (without one) is written.
    while (!done && !(await reportWaitsForLock(schema))) await new Promise((resolve) => setTimeout(resolve, 20));
    commit();
    await writer;
    const r1 = await first;
    clock.set(T0 + 2000);
    const r2 = await reportFrom(configFor(dir), dir, 'r2.csv', end, clock);
    expect({ r1: await referencesIn(r1.path), r2: await referencesIn(r2.path) }).toEqual({ r1: ['INV-1'], r2: [] });
  });
});

/** Whether a report waits for the lock on the schema's creations (src/store/created-at.ts) to fix its end. */
async function reportWaitsForLock(schema: PgSchema): Promise<boolean> {
  // A bigint key is held as its high and low 32 bits (classid, objid).
  const waiting = await pgQuery(
    schema.url,
    `select 1 from pg_locks where locktype = 'advisory' and not granted and objsubid = 1
       and objid::bigint = (hashtext($1)::bigint & 4294967295)`,
    [`${schema.name}.payoutd_creations`],
  );
  return waiting.length > 0;
}
