/**
 * A batch from CSV to final status through the real core: intake, the
 * submitter's intent-before-effect, the poller, the finished-batch query,
 * and the row history that tells the story in order.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { CreatedPayout, CreateRequest, PayoutService } from '../../src/domain/payout.js';
import { historyOf } from '../../src/store/moves.js';
import { resultRowPages } from '../../src/store/results.js';
import { listFinishedActiveBatches } from '../../src/store/settlement.js';
import { claimReadyRows } from '../../src/store/claims.js';
import { PayoutSubmitter } from '../../src/submit/index.js';
import { API_KEY, closePipelines, csvFile, csvRow, linesContaining, startPipeline, waitFor } from './harness.js';

afterEach(closePipelines);

describe('pipeline: happy path', () => {
  it('takes a CSV to PAID/CANCELLED, each row created once, and the batch is finished', async () => {
    const p = await startPipeline({ sandbox: { settlement: { minDelayMs: 0, maxDelayMs: 5 } } });
    const batch = await p.receive(
      'payouts.csv',
      csvFile([
        csvRow('HP-1'),
        csvRow('HP-2', { payoutAmount: '2500', 'beneficiary.accountNumber': '5555666677' }),
        csvRow('HP-3', { 'beneficiary.accountNumber': '1111110000' }), // '0000': the sandbox cancels it
      ]),
    );
    expect(batch.state).toBe('ACTIVE');
    expect(await p.states(batch.id)).toEqual(['READY', 'READY', 'READY']);
    expect(await listFinishedActiveBatches(p.db)).toEqual([]);

    expect(await p.submit()).toBe(3);
    expect(await p.states(batch.id)).toEqual(['PENDING', 'PENDING', 'PENDING']);
    for (const ref of ['HP-1', 'HP-2', 'HP-3']) expect(p.ledgerCount(ref)).toBe(1);
    expect(p.createRequests()).toBe(3);
    const pending = await p.rows(batch.id);
    const ledger = p.sandbox.ledger();
    for (const r of pending) {
      const entry = ledger.find((e) => e.merchantReferenceId === r.merchantReferenceId);
      expect(r.payoutId).toBe(entry?.payoutId);
      expect(r.deductionAmount).toBe(entry?.deductionAmount);
    }
    // The amount went to the wire in normal form, as decimal text end to end.
    expect(ledger.find((e) => e.merchantReferenceId === 'HP-1')?.payoutAmount).toBe('100.5');
    expect(ledger.find((e) => e.merchantReferenceId === 'HP-2')?.payoutAmount).toBe('2500');

    // A second pass has nothing to do: nothing is created twice.
    expect(await p.submit()).toBe(0);
    expect(p.createRequests()).toBe(3);

    await waitFor(() => p.sandbox.stats().pending === 0, 'the sandbox to settle every payout');
    // Not due yet: the first poll waits firstPollDelayMs.
    expect(await p.poll()).toBe(0);
    p.clock.advance(p.submitterOptions.firstPollDelayMs);
    expect(await p.poll()).toBe(3);
    expect(await p.states(batch.id)).toEqual(['PAID', 'PAID', 'CANCELLED']);

    const cancelled = await p.row('HP-3');
    expect(cancelled.reasonCode).toBe('CANCELLED');
    expect(cancelled.reason).toBe('BENEFICIARY_ACCOUNT_CLOSED');
    const paid = await p.row('HP-1');
    expect(paid.serviceStatus).toBe('PAID');
    expect(paid.completeTime).not.toBeNull();

    expect(await listFinishedActiveBatches(p.db)).toEqual([batch.id]);

    for (const ref of ['HP-1', 'HP-2', 'HP-3']) {
      const history = await historyOf(p.db, (await p.row(ref)).id);
      expect(history.map((h) => [h.event, h.fromState, h.toState])).toEqual([
        ['intent', 'READY', 'CREATING'],
        ['created', 'CREATING', 'PENDING'],
        ['settled', 'PENDING', ref === 'HP-3' ? 'CANCELLED' : 'PAID'],
      ]);
      const times = history.map((h) => h.at);
      expect([...times].sort((a, b) => a - b)).toEqual(times);
    }

    // Logs name rows but never a full account number or the API key.
    expect(p.logLines.length).toBeGreaterThan(0);
    for (const secret of ['1234567890', '5555666677', '1111110000', API_KEY]) {
      expect(linesContaining(p.logLines, secret)).toEqual([]);
    }
  });

  it('keeps a money cell only where it was written otherwise than the request; the result rows show each as written', async () => {
    const p = await startPipeline();
    const batch = await p.receive(
      'written.csv',
      csvFile([
        csvRow('WR-1', { payoutAmount: '152000' }),
        csvRow('WR-2', { payoutAmount: '1001.50' }), // sent as 1001.5
        csvRow('WR-3', { payoutAmount: ' 13 ' }), // kept as written means trimmed
        csvRow('WR-4', { payoutAmount: 'x' }), // invalid: no request, so what was written is kept
      ]),
    );
    const kept = (await p.rows(batch.id)).map((r) => [r.merchantReferenceId, r.payoutCurrency, r.payoutAmount, r.deductionCurrency]);
    expect(kept).toEqual([
      ['WR-1', null, null, null],
      ['WR-2', null, '1001.50', null],
      ['WR-3', null, null, null],
      ['WR-4', 'PHP', 'x', 'USDT'],
    ]);
    const shown = [];
    for await (const page of resultRowPages(p.db, batch.id)) shown.push(...page);
    expect(shown.map((r) => [r.payoutCurrency, r.payoutAmount, r.deductionCurrency])).toEqual([
      ['PHP', '152000', 'USDT'],
      ['PHP', '1001.50', 'USDT'],
      ['PHP', '13', 'USDT'],
      ['PHP', 'x', 'USDT'],
    ]);
  });

  it('records the intent (READY -> CREATING, history "intent") before any create is sent', async () => {
    const p = await startPipeline();
    const batch = await p.receive('intent.csv', csvFile([csvRow('IN-1'), csvRow('IN-2'), csvRow('IN-3')]));

    const claimed = await claimReadyRows(p.db, 10, p.clock.now());
    expect(claimed.map((r) => r.merchantReferenceId)).toEqual(['IN-1', 'IN-2', 'IN-3']);
    expect(claimed.every((r) => r.createAttempts === 1)).toBe(true);
    expect(await p.states(batch.id)).toEqual(['CREATING', 'CREATING', 'CREATING']);
    for (const ref of ['IN-1', 'IN-2', 'IN-3']) {
      const history = await historyOf(p.db, (await p.row(ref)).id);
      expect(history.map((h) => [h.event, h.fromState, h.toState])).toEqual([['intent', 'READY', 'CREATING']]);
    }
    expect(p.sandbox.ledger()).toEqual([]);
    expect(p.createRequests()).toBe(0);
    // A claimed row is not claimable again.
    expect(await claimReadyRows(p.db, 10, p.clock.now())).toEqual([]);
  });

  it('every create the submitter sends finds its row already CREATING with its intent committed', async () => {
    const p = await startPipeline();
    const seen: string[] = [];
    // The real client, observed: at the moment of each create, read what the database holds.
    const observed: PayoutService = {
      createPayout: async (req: CreateRequest, signal?: AbortSignal): Promise<CreatedPayout> => {
        const row = await p.row(req.merchantReferenceId);
        const events = await p.events(req.merchantReferenceId);
        seen.push(`${req.merchantReferenceId}:${row.state}:${events.join('>')}:ledger=${p.ledgerCount(req.merchantReferenceId)}`);
        return p.client.createPayout(req, signal);
      },
      queryByReferences: (ids, s) => p.client.queryByReferences(ids, s),
      queryByPayoutIds: (ids, s) => p.client.queryByPayoutIds(ids, s),
      balances: (s) => p.client.balances(s),
      exchangeRates: (c, s) => p.client.exchangeRates(c, s),
    };
    const submitter = new PayoutSubmitter(
      { db: p.db, service: observed, clock: p.clock, monotonic: p.monotonic, logger: p.logger, holds: p.holds },
      p.submitterOptions,
    );
    const batch = await p.receive('observed.csv', csvFile(['OB-1', 'OB-2', 'OB-3', 'OB-4', 'OB-5'].map((r) => csvRow(r))));
    await submitter.runOnce(p.signal);
    expect(seen.sort()).toEqual(['OB-1', 'OB-2', 'OB-3', 'OB-4', 'OB-5'].map((r) => `${r}:CREATING:intent:ledger=0`));
    expect(await p.states(batch.id)).toEqual(['PENDING', 'PENDING', 'PENDING', 'PENDING', 'PENDING']);
  });
});
