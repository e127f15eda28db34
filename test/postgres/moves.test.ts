/**
 * PostgreSQL: the row moves and claims of test/store on this engine
 * (grouped UPDATE … RETURNING, multi-row history INSERT, claims with
 * FOR UPDATE SKIP LOCKED per batch).
 */
import { afterAll, beforeAll, beforeEach, describe, it } from 'vitest';
import { migrateToLatest, openDatabase, type Database } from '../../src/store/db.js';
import { checkClaimOrder, checkGroupedMoves, checkMovesOfOneRowInOrder } from '../store/moves.js';
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
});
