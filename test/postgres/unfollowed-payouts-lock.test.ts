/**
 * PostgreSQL: what a late create or a webhook makes of a row without its payout is decided on the row locked.
 * Another transaction (a reconcile's answer, a claim, a poll) holding the row when they come must not leave it
 * unmoved: a row left READY or claimed would be created again while a payout of it exists.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Knex } from 'knex';
import { closePipelines, payoutRequest, startPipeline, waitFor, type Pipeline } from '../pipeline/harness.js';
import { noteLateCreate, triedRowsNamed } from '../../src/store/index.js';
import { PG_URL, latestSchema, pgQuery, pgReachable, useTestSchema } from './pg.js';

/** Runs `step` while `change` holds the row, committing `change` only once `step` waits on that lock. */
async function whileHeld<T>(
  p: Pipeline,
  id: number,
  change: (trx: Knex.Transaction) => Promise<unknown>,
  step: () => Promise<T>,
): Promise<T> {
  const trx = await p.db.transaction();
  await trx('payouts').where({ id }).forUpdate().first('id');
  const stepped = step();
  // Asked on a connection of its own: the pipeline's pool is busy with both transactions.
  const waiting = async (): Promise<boolean> =>
    ((await pgQuery<{ n: number }>(PG_URL, 'select count(*)::int as n from pg_locks where not granted'))[0]?.n ?? 0) > 0;
  await waitFor(waiting, 'the step waiting on the row lock');
  await change(trx);
  await trx.commit();
  return stepped;
}

describe.skipIf(!pgReachable)('postgres: a row without its payout, moved by another transaction meanwhile', () => {
  const schema = useTestSchema();
  afterEach(closePipelines);

  const start = async (ref: string, state: 'UNKNOWN' | 'READY'): Promise<{ p: Pipeline; id: number; x: string; now: number }> => {
    const p = await startPipeline({ sandbox: { duplicatePolicy: 'allow' }, database: latestSchema(schema) });
    await p.insertReadyBatch([payoutRequest(ref)]);
    const id = (await p.row(ref)).id;
    const now = p.clock.now();
    // A create of the row made payout X; the row as its holder has it: querying the reference, or found it absent.
    const x = (await p.client.createPayout(payoutRequest(ref))).payoutId;
    await p
      .db('payouts')
      .where({ id })
      .update({ state, create_attempts: 1, unknown_since: state === 'UNKNOWN' ? now : null, next_attempt_at: now });
    return { p, id, x, now };
  };
  const note = (h: string) => ({ event: 'created-after-takeover', outcome: 'OK', detail: h });
  // Another instance's claim of the row, as claimReadyRows makes it.
  const claimedByB = (id: number, now: number) => (trx: Knex.Transaction) =>
    trx('payouts')
      .where({ id })
      .update({ state: 'CREATING', lease_owner: 'B', lease_expires_at: now + 120_000, create_attempts: 2 });

  it('a late create: a reconcile finding the reference absent meanwhile leaves the row UNKNOWN', async () => {
    const { p, id, x, now } = await start('UF-1', 'UNKNOWN');
    const how = await whileHeld(
      p,
      id,
      (trx) => trx('payouts').where({ id }).update({ state: 'READY', unknown_since: null }),
      () => noteLateCreate(p.db, id, x, note, now),
    );
    expect([how, (await p.row('UF-1')).state]).toEqual(['resolving', 'UNKNOWN']);
  });

  it('a late create: a claim meanwhile ends, the row UNKNOWN', async () => {
    const { p, id, x, now } = await start('UF-2', 'READY');
    const how = await whileHeld(p, id, claimedByB(id, now), () => noteLateCreate(p.db, id, x, note, now));
    expect([how, (await p.row('UF-2')).state, (await p.row('UF-2')).leaseOwner]).toEqual(['resolving', 'UNKNOWN', null]);
  });

  it('a late create: the row settled meanwhile still owes the query of its reference', async () => {
    const { p, id, x, now } = await start('UF-3', 'READY');
    const y = (await p.client.createPayout(payoutRequest('UF-3'))).payoutId;
    await p.db('payouts').where({ id }).update({ state: 'PENDING', payout_id: y, next_poll_at: now });
    await whileHeld(
      p,
      id,
      (trx) => trx('payouts').where({ id }).update({ state: 'PAID' }),
      () => noteLateCreate(p.db, id, x, note, now),
    );
    expect(await p.row('UF-3')).toMatchObject({ state: 'PAID', payoutId: y, serviceCheck: 'REFERENCE' });
  });

  it('a webhook: a READY row claimed meanwhile is made UNKNOWN', async () => {
    const { p, id, x, now } = await start('UF-4', 'READY');
    const out = await whileHeld(p, id, claimedByB(id, now), () =>
      triedRowsNamed(p.db, { payoutId: x, status: 'PENDING', merchantReferenceId: 'UF-4' }, now),
    );
    expect([out.unknown, (await p.row('UF-4')).state]).toEqual([1, 'UNKNOWN']);
  });
});
