/**
 * PostgreSQL: instances started together on a fresh database all migrate
 * it. They used to race to create knex's migration tables, and all but one
 * failed ("relation "payoutd_migrations" already exists", or "Migration
 * table is already locked"); migrateToLatest (src/store/db.ts) now runs the
 * migrations under a transaction-level advisory lock. Several
 * migrateToLatest calls run at once (each its own knex instance, as each
 * process has one) on a fresh schema per round; without the lock the race
 * hit most rounds, so eight rounds make a regression all but certain to show.
 */
import { describe, expect, it } from 'vitest';
import { closeDatabase, migrateToLatest, openDatabase } from '../../src/store/db.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { PG_URL, pgQuery, pgReachable, withSearchPath } from './pg.js';

const ROUNDS = 8;
const INSTANCES = 4;

describe.skipIf(!pgReachable)('postgres: instances starting together on a fresh database', () => {
  it('all migrate it, one after the other', async () => {
    const failures: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const schema = `payoutd_t_start_${process.pid}_${round}`;
      await pgQuery(PG_URL, `drop schema if exists ${schema} cascade`);
      await pgQuery(PG_URL, `create schema ${schema}`);
      const dbs = Array.from({ length: INSTANCES }, () =>
        openDatabase({
          client: 'pg',
          url: withSearchPath(PG_URL, schema),
          filename: '',
          poolMax: 4,
          busyTimeoutMs: 5000,
          synchronous: 'FULL',
        }),
      );
      try {
        const outcomes = await Promise.allSettled(dbs.map((db) => migrateToLatest(db)));
        for (const o of outcomes)
          if (o.status === 'rejected') failures.push(`round ${round}: ${String((o.reason as Error).message).slice(0, 160)}`);
        const [applied] = await pgQuery<{ n: number }>(withSearchPath(PG_URL, schema), 'select count(*)::int as n from payoutd_migrations');
        expect(applied?.n, `round ${round}: migrations recorded once each`).toBe(MIGRATIONS.length);
      } finally {
        await Promise.all(dbs.map((db) => closeDatabase(db)));
        await pgQuery(PG_URL, `drop schema if exists ${schema} cascade`);
      }
    }
    expect(failures).toEqual([]);
  });
});
