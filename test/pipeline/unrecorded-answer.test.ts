/**
 * A create's answer the database could not record: another process (`payoutd approve`, say) holds SQLite's
 * write lock past database.busyTimeoutMs just as the answer comes, so its group commit fails DATABASE_BUSY and
 * the pass fails. The row stays CREATING under its lease; once the lease runs out a later pass of the same
 * daemon takes it over and resolves it by query, with no restart. Before, only a start did that, so the
 * batch never finished while the daemon ran.
 */
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import type { PayoutService } from '../../src/domain/payout.js';
import { openSqlite } from '../../src/store/sqlite-driver.js';
import { PayoutSubmitter } from '../../src/submit/index.js';
import { openTestDatabase, TEST_DATABASE_FILE } from '../support/database.js';
import { closePipelines, payoutRequest, startPipeline } from './harness.js';

afterEach(closePipelines);

it('a create answer left unrecorded by a busy database is resolved by query once its lease runs out', async () => {
  const p = await startPipeline({
    // A short busy timeout: the lock below outlasts it at once.
    database: (dir) => openTestDatabase(dir, 50),
  });
  // The real create, its answer handed back only once the test has taken the write lock.
  let answered!: () => void;
  const answer = new Promise<void>((resolve) => (answered = resolve));
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const service: PayoutService = Object.create(p.client) as PayoutService;
  service.createPayout = async (req, signal, trail) => {
    const created = await p.client.createPayout(req, signal, trail);
    answered();
    await released;
    return created;
  };
  const submitter = new PayoutSubmitter(
    { db: p.db, service, clock: p.clock, monotonic: p.monotonic, logger: p.logger, holds: p.holds, random: () => 0.5 },
    p.submitterOptions,
  );
  await p.insertReadyBatch([payoutRequest('REF-BUSY-1')]);

  const pass = submitter.runOnce(p.signal);
  await answer;
  const other = openSqlite(join(p.dir, TEST_DATABASE_FILE));
  other.exec('BEGIN IMMEDIATE');
  release();
  const err = await pass.then(
    () => null,
    (e: unknown) => e,
  );
  other.exec('ROLLBACK');
  other.close();
  expect(err).toMatchObject({ code: 'DATABASE_BUSY' });
  expect(p.ledgerCount('REF-BUSY-1')).toBe(1);

  // Within the lease the row is still taken for in flight.
  await submitter.runOnce(p.signal);
  expect((await p.row('REF-BUSY-1')).state).toBe('CREATING');

  p.clock.advance(p.submitterOptions.claimant.leaseMs + 1);
  await submitter.runOnce(p.signal);
  const row = await p.row('REF-BUSY-1');
  expect(row.state).toBe('PENDING');
  expect(row.payoutId).toBe(p.sandbox.ledger().find((e) => e.merchantReferenceId === 'REF-BUSY-1')?.payoutId);
  expect(p.ledgerCount('REF-BUSY-1')).toBe(1);
  expect(await p.events('REF-BUSY-1')).toEqual(['intent', 'interrupted', 'reconciled-found']);
});
