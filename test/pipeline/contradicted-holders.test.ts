import { afterEach, describe, expect, it } from 'vitest';
import { reasonText } from '../../src/report/format.js';
import { closePipelines, csvFile, csvRow, startPipeline, type Pipeline } from './harness.js';

afterEach(closePipelines);

/** Each row's reason by its reference. */
async function reasons(p: Pipeline, batchId: string): Promise<Map<string, string>> {
  return new Map((await p.rows(batchId)).map((r) => [r.merchantReferenceId, reasonText(r.reasonCode, r.reason) ?? '']));
}

const TAKEN =
  "the payout service holds payout PO9 under this reference, so payoutd does not count it as this row's payment; check payout PO9 with the payout service before paying this row again";
const NOTE = 'the payout service now reports CANCELLED for payout PO1, recorded PAID here: do not send this row again';

describe('rows whose reference an earlier row holds that the payout service contradicts', () => {
  it('are told to check with the service before sending again under any reference', async () => {
    const p = await startPipeline({ onInvalidRows: 'skip-rows', retryFileOf: (b) => `${b.id}.retry.csv` });
    const first = await p.receive(
      'first.csv',
      csvFile([csvRow('N-PAID'), csvRow('N-TAKEN'), csvRow('N-REJ'), csvRow('N-CAN'), csvRow('N-CAN-R1'), csvRow('N-OK')]),
    );
    const set = (reference: string, patch: Record<string, unknown>): Promise<number> =>
      p.db('payouts').where({ merchant_reference_id: reference }).update(patch);
    await set('N-PAID', { state: 'PAID', payout_id: 'PO1', service_note: NOTE });
    await set('N-TAKEN', { state: 'REJECTED', reason_code: 'REFERENCE_TAKEN', reason: TAKEN });
    await set('N-REJ', {
      state: 'REJECTED',
      reason_code: 'AMOUNT_LIMIT',
      service_note: 'do not send this row again until every payout is checked',
    });
    await set('N-CAN', { state: 'CANCELLED', payout_id: 'PO3' });
    // Its retry round, recorded CANCELLED, but reported otherwise since: not a spent round.
    await set('N-CAN-R1', { state: 'CANCELLED', payout_id: 'PO4', service_note: 'the payout service now reports PAID for payout PO4' });
    await set('N-OK', { state: 'REJECTED', reason_code: 'AMOUNT_LIMIT', reason: 'too much' });
    await p.db('batches').where({ id: first.id }).update({ state: 'COMPLETE' });
    p.clock.advance(60_000);
    const again = await p.receive(
      'again.csv',
      csvFile([csvRow('N-PAID'), csvRow('N-TAKEN'), csvRow('N-REJ'), csvRow('N-CAN'), csvRow('N-OK')]),
    );
    const r = await reasons(p, again.id);
    for (const ref of ['N-PAID', 'N-TAKEN', 'N-REJ', 'N-CAN']) {
      const text = r.get(ref) ?? '';
      expect(text, ref).toContain('before sending this row again under any reference');
      expect(text, ref).not.toMatch(/new reference|nothing to do|send it again as/);
    }
    expect(r.get('N-TAKEN')).toContain('the payout service holds a payout under N-TAKEN (REFERENCE_TAKEN');
    expect(r.get('N-CAN')).toContain('N-CAN-R1');
    expect(r.get('N-OK')).toContain('give it a new reference');

    p.clock.advance(60_000);
    const dup = await p.receive(
      'first.csv',
      csvFile([csvRow('N-PAID'), csvRow('N-TAKEN'), csvRow('N-REJ'), csvRow('N-CAN'), csvRow('N-CAN-R1'), csvRow('N-OK')]),
    );
    const said = dup.rejectReason ?? '';
    expect(said).toContain('4 the payout service contradicts');
    expect(said).not.toContain('paid must never');
    expect(said).toContain('1 refused by the payout service (REJECTED)');
    expect(said).toContain('the 1 row REJECTED needs a new reference');
    expect(said).toContain('the 1 row CANCELLED is sent again');
    expect(said).toContain('unless sent again since');
  });

  it('a cancelled holder whose next retry rounds are all spent is sent to its retry file, never to a new reference', async () => {
    const p = await startPipeline({ onInvalidRows: 'skip-rows', retryFileOf: (b) => `${b.id}.retry.csv` });
    const rounds = ['M-CAN', 'M-CAN-R1', 'M-CAN-R2', 'M-CAN-R3', 'M-CAN-R4'];
    const first = await p.receive('first.csv', csvFile(rounds.map((ref) => csvRow(ref))));
    for (const [i, ref] of rounds.entries())
      await p
        .db('payouts')
        .where({ merchant_reference_id: ref })
        .update({ state: 'CANCELLED', payout_id: `PC${i}` });
    await p.db('batches').where({ id: first.id }).update({ state: 'COMPLETE' });
    p.clock.advance(60_000);
    const again = await p.receive('again.csv', csvFile([csvRow('M-CAN')]));
    const text = (await reasons(p, again.id)).get('M-CAN') ?? '';
    expect(text).toContain(`payoutd retry-file --batch ${first.id}`);
    expect(text).not.toContain('give it a new reference');
  });
});
