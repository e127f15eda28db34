/**
 * The ack's cancel line says "no row of this file is paid" only when no row of the batch was ever sent: judged by
 * the rows, not by comparing the CLI's clock (the cancel's time) with the daemon's (the acceptance's).
 */
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { BatchOutbox } from '../../src/daemon/outbox.js';
import { getBatch, updateBatch, type BatchRecord } from '../../src/store/index.js';
import { T0, addBatch, addRows, request, setRow, useStore, validRow } from './helpers.js';

const store = useStore();

/** A batch accepted at T0 and cancelled by a CLI whose clock was a minute behind, its ack written afterwards. */
async function ackOfCancelled(sent: boolean): Promise<string> {
  const { db, dir } = await store();
  await addBatch(db, 'B1', 'jan.csv');
  await addRows(db, [validRow('B1', 2, request('INV-1')), validRow('B1', 3, request('INV-2'))]);
  await setRow(db, 'B1', 3, { state: 'NOT_SUBMITTED' });
  if (sent) await setRow(db, 'B1', 2, { state: 'PAID', payoutId: 'P-1', createAttempts: 1 });
  else await setRow(db, 'B1', 2, { state: 'NOT_SUBMITTED' });
  await updateBatch(db, 'B1', { state: 'ACTIVE', acceptedAt: T0, cancelledAt: T0 - 60_000, cancelReason: 'wrong file' }, T0);
  const batch = (await getBatch(db, 'B1')) as BatchRecord;
  return readFile(await new BatchOutbox(db, dir, false).writeAck(batch), 'utf8');
}

describe('the ack of a cancelled batch', () => {
  it('with a row already sent, never says no row is paid, whatever the clocks say', async () => {
    const ack = await ackOfCancelled(true);
    expect(ack).toContain('wrong file (while the batch was being paid)');
    expect(ack).not.toContain('no row of this file is paid');
  });

  it('with no row ever sent, says none is paid and how to pay them', async () => {
    expect(await ackOfCancelled(false)).toContain('no row of this file is paid; to pay any of its rows, send them again in a new file');
  });
});
