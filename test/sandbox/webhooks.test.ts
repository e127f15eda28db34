import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/domain/clock.js';
import { startSandbox, type SandboxOptions, type SandboxServer } from '../../src/sandbox/index.js';
import { makeKeys, merchant, payoutBody, startWebhookReceiver, str, TestCaller, type TestKeys, type WebhookReceiver } from './harness.js';

const CREATE = '/apis/v1/fiat-payout/create';
const SECRET = 'whsec-test-secret';

let keys: TestKeys;
const cleanups: (() => Promise<void>)[] = [];
beforeAll(() => {
  keys = makeKeys();
});
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

async function setup(
  extra: Partial<SandboxOptions> = {},
): Promise<{ sandbox: SandboxServer; caller: TestCaller; receiver: WebhookReceiver }> {
  const receiver = await startWebhookReceiver(SECRET);
  cleanups.push(() => receiver.close());
  const clock = new ManualClock(Date.UTC(2026, 0, 1, 12));
  const sandbox = await startSandbox({
    merchants: [merchant(keys, { webhookUrl: receiver.url, webhookSecret: SECRET })],
    clock,
    seed: 5,
    settlement: { minDelayMs: 0, maxDelayMs: 5 },
    webhook: { retryScheduleMs: [10, 10], timeoutMs: 2000 },
    ...extra,
  });
  cleanups.push(() => sandbox.close());
  const caller = new TestCaller({ url: sandbox.url, apiKey: 'api-key-M001', merchantCode: 'M001', privateKey: keys.privateKey, clock });
  await caller.accessToken();
  return { sandbox, caller, receiver };
}

describe('sandbox webhooks', () => {
  it('POSTs a signed payout.updated event whose body is the canonical text', async () => {
    const { caller, receiver, sandbox } = await setup();
    const body = payoutBody();
    const created = await caller.business(CREATE, body);
    const [hook] = await receiver.waitFor(1);
    expect(hook!.signatureValid).toBe(true);
    expect(hook!.path).toBe('/hooks/payout');
    expect(hook!.headers['content-type']).toBe('application/json');
    expect(hook!.headers['x-timestamp']).toBe(String(Date.UTC(2026, 0, 1, 12) / 1000));
    expect(hook!.headers['x-nonce']).toMatch(/^[0-9a-f]{32}$/);
    expect(hook!.json).toEqual({
      event: 'payout.updated',
      eventId: expect.stringMatching(/^EV/),
      timestamp: '2026-01-01T12:00:00.000Z',
      data: {
        payoutId: str(created.data, 'payoutId'),
        merchantReferenceId: body['merchantReferenceId'],
        status: 'PAID',
        completeTime: '2026-01-01T12:00:00.000Z',
      },
    });
    // Canonical: keys sorted, no whitespace.
    expect(hook!.body.startsWith('{"data":{"completeTime":')).toBe(true);
    // The receiver saw it before the sandbox read the answer: wait for the count.
    await expect.poll(() => sandbox.stats().webhooksDelivered, { timeout: 3000, interval: 5 }).toBe(1);
    expect(sandbox.stats()).toMatchObject({ webhooksSent: 1, webhookAttemptsFailed: 0 });
  });

  it('announces a cancellation too', async () => {
    const { caller, receiver } = await setup();
    await caller.business(CREATE, payoutBody({}, '12340000'));
    const [hook] = await receiver.waitFor(1);
    expect(hook!.json.data['status']).toBe('CANCELLED');
  });

  it('retries after a 500 with the same eventId and a fresh nonce, and gives up after the schedule', async () => {
    const { caller, receiver, sandbox } = await setup();
    receiver.statuses.push(500);
    await caller.business(CREATE, payoutBody());
    const [first, second] = await receiver.waitFor(2);
    expect(second!.json.eventId).toBe(first!.json.eventId);
    expect(second!.body).toBe(first!.body);
    expect(second!.headers['x-nonce']).not.toBe(first!.headers['x-nonce']);
    expect(second!.signatureValid).toBe(true);
    await expect.poll(() => sandbox.stats().webhooksDelivered, { timeout: 3000, interval: 5 }).toBe(1);
    expect(sandbox.stats()).toMatchObject({ webhooksSent: 2, webhookAttemptsFailed: 1, webhooksFailed: 0 });

    receiver.statuses.push(503, 503, 503);
    await caller.business(CREATE, payoutBody());
    await receiver.waitFor(5);
    // 1 attempt + 2 retries, all refused: given up.
    await expect.poll(() => sandbox.stats().webhooksFailed, { timeout: 3000, interval: 5 }).toBe(1);
    expect(receiver.received).toHaveLength(5);
  });

  it('retries when the receiver does not answer in time', async () => {
    const { caller, receiver, sandbox } = await setup({ webhook: { retryScheduleMs: [10], timeoutMs: 50 } });
    receiver.statuses.push(-1);
    await caller.business(CREATE, payoutBody());
    await receiver.waitFor(2);
    await expect.poll(() => sandbox.stats().webhooksDelivered, { timeout: 3000, interval: 5 }).toBe(1);
    expect(sandbox.stats().webhookAttemptsFailed).toBe(1);
  });

  it('duplicates and loses events on request', async () => {
    const { caller, receiver, sandbox } = await setup({ faults: { webhookDuplicateRate: 1 } });
    await caller.business(CREATE, payoutBody());
    const [a, b] = await receiver.waitFor(2);
    expect(a!.json.eventId).toBe(b!.json.eventId);
    expect(sandbox.stats().webhooksDuplicated).toBe(1);

    sandbox.setFaults({ webhookDuplicateRate: 0, webhookLossRate: 1 });
    await caller.business(CREATE, payoutBody());
    await expect.poll(() => sandbox.stats().webhooksLost, { timeout: 3000, interval: 5 }).toBe(1);
    expect(sandbox.stats().paid).toBe(2);
    expect(receiver.received).toHaveLength(2);
  });
});

describe('sandbox close', () => {
  it('clears pending retries, settlement and latency timers', async () => {
    const { caller, receiver, sandbox } = await setup({
      settlement: { minDelayMs: 600_000, maxDelayMs: 600_000 },
      webhook: { retryScheduleMs: [600_000], timeoutMs: 2000 },
    });
    receiver.statuses.push(500);
    const held = payoutBody({}, '9999');
    await caller.business(CREATE, held);
    expect(sandbox.settle({ merchantReferenceId: held['merchantReferenceId'] as string }, 'PAID')).toBe(1);
    await expect.poll(() => sandbox.stats().webhookAttemptsFailed, { timeout: 3000, interval: 5 }).toBe(1);
    await caller.business(CREATE, payoutBody());
    sandbox.setFaults({ latencyMs: 600_000 });
    void caller.business(CREATE, payoutBody()).catch(() => undefined);
    // Queued: the two unsettled payouts; timers: the webhook retry and the latency wait.
    await expect.poll(() => sandbox.stats().scheduled, { timeout: 3000, interval: 5 }).toEqual({ settlements: 2, timers: 2 });
    await sandbox.close();
    expect(sandbox.stats().scheduled).toEqual({ settlements: 0, timers: 0 });
  });
});
