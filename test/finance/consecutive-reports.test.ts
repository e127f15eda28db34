/**
 * Reports whose periods meet list every payout once, on a real SQLite file: a creation's time is read once its
 * write holds the write lock, and a report fixes its end holding that lock, so a creation in flight is either
 * committed before the report reads or stamped at or after its end. A later --until than that end is refused.
 */
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { reconciliationReport } from '../../src/cli/commands/finance.js';
import { exitCodeOf } from '../../src/cli/output.js';
import { loadConfig, type ResolvedConfig } from '../../src/config/index.js';
import { ManualClock } from '../../src/domain/clock.js';
import { closeDatabase } from '../../src/store/db.js';
import type { RowMove } from '../../src/store/moves.js';
import { writeLockHeldElsewhere } from '../support/database.js';
import { recordAnswers } from '../../src/store/answers.js';
import {
  answered,
  checkAnswerWrittenAfterTheEnd,
  checkClockBehindTheReport,
  referencesIn,
  reportFrom,
  sentRows,
} from './consecutive-reports.js';
import { T0, useStore } from './helpers.js';

const store = useStore();

function configFor(dir: string): ResolvedConfig {
  return loadConfig(
    { env: {}, cwd: dir },
    {
      paths: { stateDir: dir, outbox: join(dir, 'outbox'), inbox: join(dir, 'inbox') },
      database: { filename: join(dir, 'state.sqlite'), synchronous: 'NORMAL' },
      outbox: { xlsx: false },
    },
  );
}

describe('payoutd report --since: consecutive periods', () => {
  it('an answer waiting for its group commit while a report fixes its end is in the next report', async () => {
    const { db, dir } = await store();
    await checkAnswerWrittenAfterTheEnd(db, configFor(dir), dir);
  });

  it("an answer recorded just after a report fixed its end, on a clock behind the report's, is in the next report", async () => {
    const { db, dir } = await store();
    await checkClockBehindTheReport(db, configFor(dir), dir);
  });

  it('a creation another process is writing while a report fixes its end is in that report: the report waits for its commit', async () => {
    const { db, dir } = await store();
    const [inv1] = (await sentRows(db)) as [RowMove['row']];
    await closeDatabase(db);
    const base = configFor(dir);
    // The write lasts longer than database.busyTimeoutMs: the report waits for it all the same.
    const config = { ...base, database: { ...base.database, busyTimeoutMs: 100 } };
    // The daemon, stamping INV-1's creation at T0 + 500 ms inside its transaction, which commits 1.5 s later.
    const daemon = await writeLockHeldElsewhere(join(dir, 'state.sqlite'), 1500, [
      [
        "update payouts set state = 'PENDING', service_status = 'PENDING', payout_id = 'P-1', created_at_ms = ? where id = ?",
        T0 + 500,
        inv1.id,
      ],
    ]);
    const end = T0 + 1000;
    const clock = new ManualClock(end);
    const r1 = await reportFrom(config, dir, 'r1.csv', T0 - 1000, clock);
    await daemon.released;
    clock.set(T0 + 2000);
    const r2 = await reportFrom(config, dir, 'r2.csv', end, clock);
    expect({ r1: await referencesIn(r1.path), r2: await referencesIn(r2.path) }).toEqual({ r1: ['INV-1'], r2: [] });
  });

  it('a report run on a clock far ahead does not date later creations by it: they stay in the reports of their day', async () => {
    const { db, dir } = await store();
    const config = configFor(dir);
    const [row] = (await sentRows(db)) as [RowMove['row']];
    const year = 365 * 86_400_000;
    await reconciliationReport(
      config,
      { since: new Date(T0 - 1000).toISOString(), out: join(dir, 'ahead.csv') },
      new ManualClock(T0 + year),
    );
    const daemon = new ManualClock(T0 + 3_600_000);
    await recordAnswers(db, [{ moves: [answered(row, 'P-1', daemon)], at: daemon.now() }]);
    expect(Number((await db('payouts').where({ id: row.id }).first('created_at_ms'))?.['created_at_ms'])).toBe(daemon.now());
    const day = await reconciliationReport(
      config,
      { since: new Date(T0 - 1000).toISOString(), out: join(dir, 'day.csv') },
      new ManualClock(T0 + 86_400_000),
    );
    expect(await referencesIn(day.path)).toEqual(['INV-1']);
  });

  it('refuses an --until later than now, writing nothing: that period is not over', async () => {
    const { db, dir } = await store();
    await closeDatabase(db);
    const out = join(dir, 'jan.csv');
    const err: unknown = await reconciliationReport(
      configFor(dir),
      { since: '2026-01-01', until: '2026-02-01', out },
      new ManualClock(T0),
    ).catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: 'REPORT_PERIOD_NOT_OVER',
      message: expect.stringMatching(
        /^--until 2026-02-01T00:00:00\.000Z is later than now \(2026-01-10T12:00:00\.000Z\): the period is not over/,
      ),
    });
    expect(exitCodeOf(err)).toBe(2);
    await expect(access(out)).rejects.toMatchObject({ code: 'ENOENT' });
    // Up to now, it is written, named for the period it holds.
    const r = await reconciliationReport(configFor(dir), { since: '2026-01-01', until: '2026-01-10T12:00:00Z', out }, new ManualClock(T0));
    expect(r.period).toEqual({ sinceMs: Date.UTC(2026, 0, 1), untilMs: T0 });
  });
});
