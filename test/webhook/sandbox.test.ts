/**
 * The receiver against the real sandbox: real signed `payout.updated`
 * deliveries for payouts created through the real client, through a
 * recording proxy that keeps every exchange (to replay one as an attacker
 * would, and to check the receiver's logs against every signature seen).
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { PayoutApiClient } from '../../src/api/index.js';
import { createLogger } from '../../src/log/index.js';
import { SettlementPoller } from '../../src/poll/index.js';
import { startSandbox, type SandboxOptions, type SandboxServer } from '../../src/sandbox/index.js';
import { API_KEY, MERCHANT, clientOptions, payoutRequest, testKeys } from '../api/helpers.js';
import { merchant } from '../sandbox/harness.js';
import {
  SECRET,
  START_MS,
  closeAll,
  eventRows,
  insertPendingRow,
  onClose,
  payoutRow,
  send,
  signedHeaders,
  startReceiver,
  startRecorder,
  type Harness,
  type HarnessOptions,
  type Recorder,
} from './helpers.js';

const HOUR = 3_600_000;
const allLogs: string[][] = [];
const allRecorders: Recorder[] = [];

afterEach(closeAll);

interface World {
  h: Harness;
  sandbox: SandboxServer;
  client: PayoutApiClient;
  recorder: Recorder;
}

/** Receiver <- recorder <- sandbox (settling at once unless told), and a client on the same clock. */
async function world(receiver: HarnessOptions = {}, sandboxOptions: Partial<SandboxOptions> = {}): Promise<World> {
  const h = await startReceiver(receiver);
  allLogs.push(h.logs.lines);
  const recorder = await startRecorder(h.url);
  allRecorders.push(recorder);
  const { main } = testKeys();
  const sandbox = await startSandbox({
    merchants: [
      merchant(main, {
        merchantCode: MERCHANT,
        apiKey: API_KEY,
        webhookUrl: recorder.url,
        webhookSecret: SECRET,
        balances: { USDT: '100000' },
      }),
    ],
    clock: h.clock,
    seed: 7,
    settlement: { minDelayMs: 0, maxDelayMs: 5 },
    webhook: { retryScheduleMs: [50, 50], timeoutMs: 5000 },
    ...sandboxOptions,
  });
  onClose(() => sandbox.close());
  const client = new PayoutApiClient(clientOptions(sandbox.url, main.privateKey, { clock: h.clock }));
  return { h, sandbox, client, recorder };
}

function eventIdOf(body: string): string {
  return (JSON.parse(body) as { eventId: string }).eventId;
}

describe('deliveries from the sandbox', () => {
  it('verifies and records a delivery, answers 200, and only marks the payout due: the query decides', async () => {
    let wakes = 0;
    const { h, sandbox, client, recorder } = await world({ defaultFollowUp: true, wake: () => void wakes++ });
    // Held by the sandbox until settled by hand, so the row exists before the event.
    const req = payoutRequest({ beneficiary: { accountName: 'Ben Reyes', accountNumber: '5555559999', bankCode: 'BPI' } });
    const created = await client.createPayout(req);
    await insertPendingRow(h.db, created.payoutId, req.merchantReferenceId, START_MS + HOUR);
    expect(sandbox.settle({ payoutId: created.payoutId }, 'PAID')).toBe(1);

    await expect.poll(() => wakes, { timeout: 5000, interval: 5 }).toBe(1);
    await expect.poll(() => recorder.seen.map((r) => r.status), { timeout: 2000, interval: 5 }).toEqual([200]);
    expect(h.verdicts).toEqual(['accepted']);
    const [delivery] = recorder.seen;
    expect(await eventRows(h.db)).toEqual([
      {
        event_id: eventIdOf(delivery!.body),
        received_at: START_MS,
        payout_id: created.payoutId,
        merchant_reference_id: req.merchantReferenceId,
        status: 'PAID',
      },
    ]);
    // The webhook says PAID; the row is still PENDING, now due for a query.
    expect(await payoutRow(h.db, created.payoutId)).toMatchObject({ state: 'PENDING', next_poll_at: START_MS, service_status: null });

    // The poller's query (not the webhook) moves the row.
    const poller = new SettlementPoller(
      { db: h.db, service: client, clock: h.clock, logger: createLogger('silent') },
      {
        queryMaxIds: 100,
        concurrency: 4,
        maxCallsPerPass: 5,
        minIntervalMs: 1000,
        maxIntervalMs: 60_000,
        staleAfterMs: 24 * HOUR,
        deferWhileSendingMs: 30_000,
        leaseMs: 120_000,
      },
    );
    expect(await poller.runOnce(new AbortController().signal)).toBe(1);
    expect(await payoutRow(h.db, created.payoutId)).toMatchObject({ state: 'PAID', service_status: 'PAID' });
  });

  it('hands the payoutId to onPayoutUpdated when no local row matches', async () => {
    const { h, client } = await world();
    const created = await client.createPayout(
      payoutRequest({ beneficiary: { accountName: 'A B', accountNumber: '12340000', bankCode: 'BPI' } }),
    );
    await expect.poll(() => h.followUps, { timeout: 5000, interval: 5 }).toEqual([[created.payoutId]]);
    expect((await eventRows(h.db))[0]).toMatchObject({ payout_id: created.payoutId, status: 'CANCELLED' });
  });

  it('records a duplicated event once and acknowledges both copies', async () => {
    const { h, sandbox, client, recorder } = await world({}, { faults: { webhookDuplicateRate: 1 } });
    const created = await client.createPayout(payoutRequest());
    await expect.poll(() => sandbox.stats().webhooksDelivered, { timeout: 5000, interval: 5 }).toBe(2);
    expect(recorder.seen.map((r) => r.status)).toEqual([200, 200]);
    expect(eventIdOf(recorder.seen[0]!.body)).toBe(eventIdOf(recorder.seen[1]!.body));
    // Each copy carries its own nonce: only the eventId tells them apart as one event.
    expect(recorder.seen[0]!.headers['x-nonce']).not.toBe(recorder.seen[1]!.headers['x-nonce']);
    expect(await eventRows(h.db)).toHaveLength(1);
    expect([...h.verdicts].sort()).toEqual(['accepted', 'duplicate']);
    await expect.poll(() => h.followUps, { timeout: 2000, interval: 5 }).toEqual([[created.payoutId]]);
    expect(sandbox.stats()).toMatchObject({ webhooksDuplicated: 1, webhookAttemptsFailed: 0 });
  });

  it('takes duplicated, crossing deliveries in any order without changing any payout', async () => {
    const { h, sandbox, client, recorder } = await world({}, { faults: { webhookDuplicateRate: 1, webhookReorderMs: 150 } });
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const req = payoutRequest({ beneficiary: { accountName: 'Ben Reyes', accountNumber: `77${i}0009999`, bankCode: 'BPI' } });
      const created = await client.createPayout(req);
      await insertPendingRow(h.db, created.payoutId, req.merchantReferenceId, START_MS + HOUR);
      ids.push(created.payoutId);
    }
    // Settled newest first, two of them cancelled.
    for (const [i, id] of [...ids].reverse().entries()) sandbox.settle({ payoutId: id }, i % 3 === 0 ? 'CANCELLED' : 'PAID');

    await expect.poll(() => sandbox.stats().webhooksDelivered, { timeout: 5000, interval: 10 }).toBe(12);
    expect(recorder.seen.every((r) => r.status === 200)).toBe(true);
    expect(h.verdicts.filter((v) => v === 'accepted')).toHaveLength(6);
    expect(h.verdicts.filter((v) => v === 'duplicate')).toHaveLength(6);
    const ledger = new Map(sandbox.ledger().map((e) => [e.payoutId, e.status]));
    const rows = await eventRows(h.db);
    expect(rows.map((r) => r.payout_id).sort()).toEqual([...ids].sort());
    for (const r of rows) expect(r.status).toBe(ledger.get(r.payout_id));
    await expect.poll(() => h.followUps.flat().sort(), { timeout: 2000, interval: 5 }).toEqual([...ids].sort());
    for (const id of ids) expect(await payoutRow(h.db, id)).toMatchObject({ state: 'PENDING', service_status: null });
  });

  it('answers once its follow-up is done, so an event acknowledged has been followed up', async () => {
    const order: string[] = [];
    const { sandbox, client, recorder } = await world({
      onPayoutUpdated: async () => {
        order.push('follow-up started');
        await new Promise((resolve) => setTimeout(resolve, 50));
        order.push('follow-up done');
      },
    });
    recorder.onAnswer = (r) => order.push(`answered ${r.status}`);
    await client.createPayout(payoutRequest());
    await expect.poll(() => sandbox.stats().webhooksDelivered, { timeout: 5000, interval: 5 }).toBe(1);
    await expect.poll(() => order.length, { timeout: 3000, interval: 5 }).toBe(3);
    expect(order).toEqual(['follow-up started', 'follow-up done', 'answered 200']);
    expect(sandbox.stats()).toMatchObject({ webhookAttemptsFailed: 0, webhooksSent: 1 });
  });

  it('refuses a captured delivery replayed by an attacker, and the same eventId re-signed without the secret', async () => {
    const { h, client, recorder } = await world();
    await client.createPayout(payoutRequest());
    await expect.poll(() => recorder.seen.length, { timeout: 5000, interval: 5 }).toBe(1);
    expect(h.verdicts).toEqual(['accepted']);
    const captured = recorder.seen[0]!;

    // Byte-for-byte replay: same nonce.
    const replay = await send(h.url, { headers: captured.headers, body: captured.body });
    expect(replay.status).toBe(401);
    // Same eventId and body, fresh nonce and timestamp, but the captured signature (no secret to re-sign).
    const reused = await send(h.url, {
      headers: { ...captured.headers, 'x-nonce': 'f'.repeat(32), 'x-timestamp': String(START_MS / 1000 + 1) },
      body: captured.body,
    });
    expect(reused.status).toBe(401);
    // Re-signed with a guessed secret.
    const guessed = await send(h.url, { headers: signedHeaders(captured.body, h.clock, { secret: 'whsec-guess' }), body: captured.body });
    expect(guessed.status).toBe(401);
    // After the nonce window the captured delivery is also too old.
    h.clock.advance(601_000);
    expect((await send(h.url, { headers: captured.headers, body: captured.body })).status).toBe(401);

    expect(h.verdicts).toEqual(['accepted', 'replayed', 'bad_signature', 'bad_signature', 'stale']);
    expect(await eventRows(h.db)).toHaveLength(1);
    expect(h.followUps).toHaveLength(1);
  });
});

afterAll(() => {
  // No secret and no signature seen on the wire ever reached a log line.
  const secrets = [SECRET, ...allRecorders.flatMap((r) => r.seen.map((s) => s.headers['x-signature'] ?? ''))].filter((s) => s.length >= 8);
  const lines = allLogs.flat();
  expect(lines.length).toBeGreaterThan(0);
  for (const line of lines) for (const s of secrets) expect(line.includes(s), `log line leaks a secret: ${line}`).toBe(false);
});
