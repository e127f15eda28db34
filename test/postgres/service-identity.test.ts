/**
 * PostgreSQL: the payout service a database pays through (migration 0033) is recorded once, the first record
 * wins over a second instance's (the start that loses is refused: src/daemon/service-identity.ts), it is
 * replaced only on purpose, and what the database holds is counted for the refusal. The same on SQLite.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  payoutsToVerify,
  recordedServiceIdentity,
  recordServiceIdentity,
  replaceServiceIdentity,
  serviceHistory,
  type Database,
} from '../../src/store/index.js';
import { closeDatabase } from '../../src/store/db.js';
import { openTestDatabase } from '../support/database.js';
import { addBatch } from '../store/held-references.js';
import { pgReachable, useEmptySchema, useTestSchema } from './pg.js';

const REAL = { service: 'https://payouts.example.com/gw', merchantCode: 'M123456' };
const EMBEDDED = { service: 'embedded', merchantCode: null };

async function recordsOnce(db: Database): Promise<void> {
  expect(await recordedServiceIdentity(db)).toBeNull();
  expect(await recordServiceIdentity(db, REAL, 1000)).toEqual({ ...REAL, recordedAt: 1000 });
  // A second instance's record does not replace the first's: it is told the first.
  expect(await recordServiceIdentity(db, EMBEDDED, 2000)).toEqual({ ...REAL, recordedAt: 1000 });
  expect(await serviceHistory(db)).toEqual({ batches: 0, openPayouts: 0 });
  await replaceServiceIdentity(db, EMBEDDED, 3000);
  expect(await recordedServiceIdentity(db)).toEqual({ ...EMBEDDED, recordedAt: 3000 });
}

/** The payouts asked about before a database without a record records its service: the newest not final, else final. */
async function picksPayoutsToVerify(db: Database): Promise<void> {
  await addBatch(db, 'B1');
  const row = (line: number, state: string, payoutId: string | null): Record<string, unknown> => ({
    batch_id: 'B1',
    line,
    merchant_reference_id: `R-${line}`,
    state,
    payout_id: payoutId,
    updated_at: 1,
  });
  // Rows never sent leave nothing to ask about: the first start records its service as on a fresh database.
  await db('payouts').insert([row(1, 'INVALID', null), row(2, 'READY', null)]);
  expect(await payoutsToVerify(db, 2)).toEqual({ made: 0, sample: [] });
  await db('payouts').insert([row(3, 'PAID', 'P3'), row(4, 'CANCELLED', 'P4'), row(5, 'PAID', 'P5')]);
  expect(await payoutsToVerify(db, 2)).toEqual({ made: 3, sample: ['P5', 'P4'] });
  await db('payouts').insert([row(6, 'PENDING', 'P6'), row(7, 'PAID', 'P7')]);
  expect(await payoutsToVerify(db, 2)).toEqual({ made: 5, sample: ['P6'] });
}

describe.skipIf(!pgReachable)('postgres: the recorded payout service', () => {
  const schema = useTestSchema();
  const pg = useEmptySchema(schema, { latest: true });

  it('is recorded once, kept over a later record, replaced only on purpose', async () => {
    await recordsOnce(pg.db);
  });

  it('asks about the newest payouts not final, else the newest final ones', async () => {
    await picksPayoutsToVerify(pg.db);
  });
});

describe('sqlite: the recorded payout service', () => {
  it('is recorded once, kept over a later record, replaced only on purpose', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'payoutd-service-identity-'));
    const db = await openTestDatabase(dir);
    try {
      await recordsOnce(db);
      await picksPayoutsToVerify(db);
    } finally {
      await closeDatabase(db);
      await rm(dir, { recursive: true, force: true });
    }
  });
});
