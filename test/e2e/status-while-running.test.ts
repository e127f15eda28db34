/**
 * E2E (extra): `payoutd status` is what an operator runs while the daemon
 * works; it is a separate process on the same SQLite file, so it must only
 * read. A write from it can land between a daemon transaction's read and its
 * write, and that transaction then fails with SQLITE_BUSY ("database is
 * locked"). Seen in these e2e runs: `work loop pass failed; backing off:
 * SqliteError ... update payouts set state = 'CREATING' ... database is locked`.
 */
import { join } from 'node:path';
import { openSqlite } from '../../src/store/sqlite-driver.js';
import { describe, expect, it } from 'vitest';
import { makeRows, toCsv } from './batch-files.js';
import { startE2e } from './harness.js';

describe('e2e: payoutd status next to a running daemon', () => {
  it('reports the batch of a running daemon', async () => {
    const e2e = await startE2e();
    await e2e.startDaemon();
    await e2e.drop('watched.csv', toCsv(makeRows('E2E-STATUS', 5)));
    const batch = await e2e.waitForBatch('watched.csv', ['COMPLETE'], 30_000);
    expect(batch).toMatchObject({ rowCount: 5, validCount: 5, invalidCount: 0, holdCode: null });
    expect(batch.counts).toEqual({ PAID: 5 });
  });

  // `payoutd status` opens the database read-only: SQLite's data_version, seen from another connection,
  // must not change across a status call (a write there once collided with the daemon's claims).
  it('`payoutd status` does not write to the state database', async () => {
    const e2e = await startE2e();
    expect((await e2e.cli(['migrate'])).code).toBe(0);
    const db = openSqlite(join(e2e.stateDir, 'payoutd.sqlite'), { readonly: true, fileMustExist: true });
    try {
      const version = (): unknown => db.pragma('data_version', { simple: true });
      const before = version();
      const r = await e2e.cli(['status', '--json']);
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual([]);
      expect(version(), 'data_version changed: another connection committed a write').toBe(before);
    } finally {
      db.close();
    }
  });
});
