/**
 * PostgreSQL, known bug: instances started together on a fresh database
 * race to create knex's migration tables, and all but one may fail —
 * `payoutd run` / `payoutd migrate` exit 1 with `create table
 * "payoutd_migrations" … - relation "payoutd_migrations" already exists`
 * (seen with 4 `payoutd migrate` at once; knex may also answer "Migration
 * table is already locked"). Under systemd the failed one is restarted and
 * then finds the schema current, but a first start of several instances
 * should not depend on that. Here several migrateToLatest calls run at once
 * (each its own knex instance, as each process has one), on a fresh schema
 * per round; the race hits most rounds, so eight rounds make the failure
 * all but certain.
 *
 * Fix (src, for the lead): src/store/db.ts migrateToLatest(): on
 * PostgreSQL, run `db.migrate.latest()` while holding a transaction-level
 * advisory lock, taken in a transaction of its own on another pooled
 * connection:
 *   return db.transaction(async (trx) => {
 *     await trx.raw('select pg_advisory_xact_lock(hashtext(current_schema() || ?))', ['.payoutd_migrations']);
 *     return latest();
 *   });
 * (needs database.poolMax >= 2; the default is 10).
 */
import { describe, expect, it } from 'vitest';
import { migrateToLatest, openDatabase } from '../../src/store/db.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { PG_URL, pgQuery, pgReachable, withSearchPath } from './pg.js';

const ROUNDS = 8;
const INSTANCES = 4;

describe.skipIf(!pgReachable)('postgres: instances starting together on a fresh database', () => {
  // Fails until the fix above is made: remove `.fails` then.
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
        await Promise.all(dbs.map((db) => db.destroy()));
        await pgQuery(PG_URL, `drop schema if exists ${schema} cascade`);
      }
    }
    expect(failures).toEqual([]);
  });
});
