/**
 * PostgreSQL: the row moves and claims of test/store on this engine
 * (grouped UPDATE … RETURNING, multi-row history INSERT, claims with
 * FOR UPDATE SKIP LOCKED per batch), the beneficiary of a batch's rows
 * read from the stored request with this engine's JSON operators, and
 * answers committed without waiting for the WAL flush.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Knex } from 'knex';
import { migrateToLatest, openDatabase, type Database } from '../../src/store/db.js';
import { reproducibleTransaction } from '../../src/store/reproducible.js';
import { checkClaimOrder, checkGroupedMoves, checkMovesOfOneRowInOrder } from '../store/moves.js';
import { checkBeneficiaryFromRequest } from '../store/result-rows.js';
import { pgReachable, useTestSchema } from './pg.js';

describe.skipIf(!pgReachable)('postgres: row moves and claims', () => {
  const schema = useTestSchema();
  let db: Database;
  beforeAll(async () => {
    db = openDatabase({ client: 'pg', filename: '', url: schema.url, poolMax: 2, busyTimeoutMs: 5000, synchronous: 'FULL' });
    await migrateToLatest(db);
  });
  // Each check starts from empty tables, as on its own SQLite file.
  beforeEach(async () => {
    await db.raw('truncate payout_history, payouts, batch_errors, batches cascade');
  });
  afterAll(async () => {
    await db.destroy();
  });

  it('groups moves sharing a patch, keeps per-row patches, skips a moved row, one history row per row moved', async () => {
    await checkGroupedMoves(db);
  });

  it('applies two moves of one row in the order given', async () => {
    await checkMovesOfOneRowInOrder(db);
  });

  it('claims the older batch first, in line order, by the hold rules', async () => {
    await checkClaimOrder(db);
  });

  it('reads the beneficiary and empty columns out of the stored request as JSON.parse does', async () => {
    await checkBeneficiaryFromRequest(db);
  });
});

describe.skipIf(!pgReachable)('postgres: reproducible transactions', () => {
  const schema = useTestSchema();
  let db: Database;
  beforeAll(async () => {
    db = openDatabase({ client: 'pg', filename: '', url: schema.url, poolMax: 2, busyTimeoutMs: 5000, synchronous: 'FULL' });
  });
  afterAll(async () => {
    await db.destroy();
  });

  it('commits without waiting for the WAL flush, for that transaction only', async () => {
    const setting = async (q: Database | Knex.Transaction): Promise<string> =>
      ((await q.raw('show synchronous_commit')) as { rows: { synchronous_commit: string }[] }).rows[0]?.synchronous_commit ?? '';
    expect(await reproducibleTransaction(db, (trx) => setting(trx))).toBe('off');
    expect(await db.transaction((trx) => setting(trx))).toBe('on');
  });
});
