/**
 * PostgreSQL: a reader that lost its batch's lease writes nothing more to it. Instance A stalls past its
 * lease after storing its first chunk; B takes the batch over, clears it and reads it again. A's next chunk
 * used to renew the lease with a result nobody looked at and insert anyway, and A went on to accept the batch
 * with B's reading and its own mixed (its first chunk gone with B's clear): rows missing from a batch made
 * ACTIVE. Now each of A's transactions fails with BATCH_LEASE_LOST and rolls back, A stops, and only B
 * moves the batch out of VALIDATING.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/domain/clock.js';
import { BatchIntake } from '../../src/ingest/index.js';
import { DEFAULT_BATCH_FORMAT } from '../../src/ingest/csv/index.js';
import { DEFAULT_VALIDATION_RULES } from '../../src/ingest/rules/index.js';
import type { ClaimedFile } from '../../src/ingest/inbox/index.js';
import { createLogger } from '../../src/log/index.js';
import { acceptBatchRows } from '../../src/store/acceptance.js';
import { claimBatchLease, clearBatchContents, holdReaderLease, insertBatch, receivedBatch, updateBatch } from '../../src/store/batches.js';
import type { Database } from '../../src/store/db.js';
import { insertRowsWhileReading } from '../../src/store/insert-rows.js';
import { payoutRowsOf } from '../store/held-references.js';
import { csvFile, csvRow } from '../pipeline/harness.js';
import { pgReachable, useEmptySchema, useTestSchema } from './pg.js';

const LEASE_MS = 1000;
const T = 1_700_000_000_000;

async function readingBatch(db: Database, id: string, owner: string): Promise<void> {
  const batch = receivedBatch(
    { id, fileName: 'f.csv', storedPath: `/nowhere/${id}.csv`, controlPath: null, sha256: id, size: 1, mtimeMs: T, doneMarker: false },
    T,
  );
  await insertBatch(db, { ...batch, state: 'VALIDATING', leaseOwner: owner, leaseExpiresAt: T + LEASE_MS });
}

const countRows = async (db: Database, id: string): Promise<number> =>
  Number(((await db('payouts').where({ batch_id: id }).count({ n: '*' }).first()) as { n: string }).n);

/** An intake as the daemon builds it, on its own clock, with no outbox (its acks are not looked at here). */
function intakeOf(db: Database, instanceId: string, clock: ManualClock, afterChunkStored?: () => Promise<void>): BatchIntake {
  return new BatchIntake(
    {
      db,
      clock,
      logger: createLogger('silent'),
      effects: {
        writeAck: async () => '',
        draftAck: async () => ({ ready: null, write: async () => '', discard: async () => undefined }),
        writeFileRejection: async () => '',
        writeResult: async () => undefined,
      },
      holds: { atAcceptance: async () => null },
      afterChunkStored,
    },
    {
      format: DEFAULT_BATCH_FORMAT,
      rules: DEFAULT_VALIDATION_RULES,
      onInvalidRows: 'reject-file',
      rejectedDir: '/nowhere/rejected',
      instanceId,
      leaseMs: LEASE_MS,
    },
  );
}

describe.skipIf(!pgReachable)('postgres: a reader fenced by its lease', () => {
  const schema = useTestSchema();
  const store = useEmptySchema(schema, { latest: true });
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'payoutd-lease-fence-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses the chunk, the acceptance and the move out of VALIDATING of a reader whose lease another took over', async () => {
    const { db } = store;
    await readingBatch(db, 'LF', 'A');
    const lease = { batchId: 'LF', instanceId: 'A', leaseMs: LEASE_MS };
    const rows = payoutRowsOf('LF', 3);
    await insertRowsWhileReading(db, lease, rows.slice(0, 1), T);

    // A stalls past its lease; B takes the batch over and clears it to read it again.
    expect(await claimBatchLease(db, 'LF', 'B', LEASE_MS, T + 5000, ['RECEIVED', 'VALIDATING'])).toBe(true);
    await clearBatchContents(db, 'LF');

    const lost = /batch LF is no longer being read by A/;
    await expect(insertRowsWhileReading(db, lease, rows.slice(1), T + 5001)).rejects.toThrow(lost);
    // B's lease running out does not give the batch back to A: A cannot tell what happened meanwhile.
    await expect(insertRowsWhileReading(db, lease, rows.slice(1), T + 60_000)).rejects.toThrow(lost);
    const fence = (trx: Database): Promise<void> => holdReaderLease(trx, lease, T + 60_000);
    await expect(acceptBatchRows(db, 'LF', 'skip-rows', T + 60_000, fence)).rejects.toThrow(lost);
    await expect(updateBatch(db, 'LF', { state: 'ACTIVE' }, T + 60_000, { type: 'accepted', data: {} }, 'A')).rejects.toThrow(lost);

    expect(await countRows(db, 'LF')).toBe(0);
    expect(await db('batches').where({ id: 'LF' }).first('state', 'lease_owner')).toEqual({ state: 'VALIDATING', lease_owner: 'B' });
    const accepted = (await db('batch_events').where({ batch_id: 'LF', type: 'accepted' }).count({ n: '*' }).first()) as { n: unknown };
    expect(Number(accepted.n)).toBe(0);
    // B's own reading goes on.
    await insertRowsWhileReading(db, { ...lease, instanceId: 'B' }, rows, T + 5002);
    expect(await countRows(db, 'LF')).toBe(3);
  });

  it('stops a reading whose batch was taken over between two chunks; the new reader accepts it with every row', async () => {
    const { db } = store;
    const refs = Array.from({ length: 6000 }, (_, i) => `LT-${i + 1}`);
    const content = csvFile(refs.map((r) => csvRow(r)));
    const storedPath = join(dir, 'taken-over.csv');
    await writeFile(storedPath, content);
    const claimed: ClaimedFile = {
      claimId: 'c1',
      originalName: 'taken-over.csv',
      storedPath,
      size: Buffer.byteLength(content),
      mtimeMs: T,
      sha256: createHash('sha256').update(content).digest('hex'),
      doneMarker: false,
    };
    const clockA = new ManualClock(T);
    const clockB = new ManualClock(T + 5000);
    const b = intakeOf(db, 'B', clockB);
    let takenOver = false;
    // After A's first chunk (the intake stores 5,000 rows a transaction) A stalls past its lease: B takes over.
    const a = intakeOf(db, 'A', clockA, async () => {
      if (takenOver) return;
      takenOver = true;
      const [batch] = (await db('batches').select('id')) as { id: string }[];
      expect(await claimBatchLease(db, batch?.id as string, 'B', LEASE_MS, clockB.now(), ['RECEIVED', 'VALIDATING'])).toBe(true);
      await clearBatchContents(db, batch?.id as string);
    });

    await expect(a.receive(claimed)).rejects.toThrow(/is no longer being read by A/);
    const [batch] = (await db('batches').select('id', 'state', 'lease_owner')) as { id: string; state: string; lease_owner: string }[];
    expect([batch?.state, batch?.lease_owner]).toEqual(['VALIDATING', 'B']);
    expect(await countRows(db, batch?.id as string)).toBe(0);

    const read = await b.process(batch?.id as string);
    expect([read.state, read.rowCount, read.validCount, read.invalidCount]).toEqual(['ACTIVE', 6000, 6000, 0]);
    const [stored] = await db('payouts')
      .where({ batch_id: read.id })
      .select(
        db.raw('count(*)::int as n'),
        db.raw('count(distinct line)::int as lines'),
        db.raw("count(*) filter (where state = 'READY')::int as ready"),
      );
    expect(stored).toEqual({ n: 6000, lines: 6000, ready: 6000 });
  });
});
