/**
 * A final answer older than a webhook: a query is answered PAID by the real sandbox, and while that answer is still
 * on its way back (held by a proxy) the service reverses the payout to CANCELLED and says so in a signed
 * payout.updated event, which the real receiver follows up and commits before answering 200. The answer was read
 * before the event: it must not settle the row. Shown for the poller's query of a PENDING row (the row made due),
 * and for the submitter's query of the reference of a row waiting on an unknown create outcome, no payout id yet
 * (its reference asked again). The row stays as it was and due, and the next pass records what the service says
 * now; with leased claims, it is due at once although the pass claimed again while its query was out. Run on SQLite
 * and PostgreSQL.
 */
import { expect } from 'vitest';
import { PayoutApiClient } from '../../src/api/index.js';
import { requestOfText } from '../../src/domain/request-values.js';
import { SettlementPoller, type PollerOptions } from '../../src/poll/index.js';
import { claimDueRows, claimReadyRows, markInterruptedCreatesUnknown } from '../../src/store/index.js';
import { startMitm, type Mitm } from '../api/mitm.js';
import { deliver, receiverLines } from '../webhook/final-rows-world.js';
import { PATH, startReceiver, type Harness } from '../webhook/helpers.js';
import { QUERY_PATH, linesContaining, payoutRequest, serviceLike, submitterVia, type Pipeline } from './harness.js';

/** The receiver, and a client reaching the sandbox through a proxy that holds the first query's answer on its way back. */
interface HeldQuery {
  h: Harness;
  proxy: Mitm;
  client: PayoutApiClient;
  /** The held answer's text, once the sandbox has answered. */
  answer: Promise<string>;
  release(): void;
}

async function heldQuery(p: Pipeline): Promise<HeldQuery> {
  const h = await startReceiver({ db: p.db, clock: p.clock, defaultFollowUp: true, path: PATH });
  const proxy = await startMitm(p.sandbox.url);
  let answered!: (text: string) => void;
  const answer = new Promise<string>((r) => (answered = r));
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  proxy.holdAnswer = (path, text) => {
    if (path !== QUERY_PATH) return null;
    proxy.holdAnswer = null;
    answered(text);
    return released;
  };
  return { h, proxy, client: new PayoutApiClient({ ...p.clientOptions, baseUrl: proxy.url }), answer, release };
}

/**
 * Once the held answer says PAID: the service reverses the payout and its event is followed up (then `meanwhile`
 * runs), then the answer lands.
 */
async function reversedWhileHeld(
  p: Pipeline,
  held: HeldQuery,
  pass: Promise<unknown>,
  payoutId: string,
  ref: string,
  meanwhile?: () => Promise<unknown>,
): Promise<void> {
  expect(await held.answer).toContain('"status":"PAID"');
  expect(p.sandbox.reverse(payoutId, 'CANCELLED')).toBe(true);
  await deliver(held.h, { payoutId, merchantReferenceId: ref, status: 'CANCELLED' });
  await meanwhile?.();
  held.release();
  await pass;
}

export async function finalAnswerBeforeWebhook(p: Pipeline, poller: Partial<PollerOptions>): Promise<void> {
  const batchId = await p.insertReadyBatch([payoutRequest('FA-1')]);
  await p.submit();
  const payoutId = (await p.row('FA-1')).payoutId as string;
  expect(p.sandbox.settle({ payoutId }, 'PAID')).toBe(1);
  const held = await heldQuery(p);
  try {
    const polling = new SettlementPoller(
      { db: p.db, service: held.client, clock: p.clock, logger: p.logger },
      { ...p.pollerOptions, ...poller },
    );
    p.clock.advance(p.pollerOptions.maxIntervalMs);
    await reversedWhileHeld(p, held, polling.runPass(p.signal), payoutId, 'FA-1');

    // Read before the event, the answer settles nothing: the row stays PENDING, due for a query now.
    const row = await p.row('FA-1');
    expect(row.state).toBe('PENDING');
    expect(row.nextPollAt).toBeLessThanOrEqual(p.clock.now());
    expect(await p.events('FA-1')).not.toContain('settled');

    // The next pass asks again and records the service's latest word.
    await polling.runPass(p.signal);
    expect(await p.states(batchId)).toEqual(['CANCELLED']);
    expect(p.logLines.filter((l) => l.includes('was not recorded: the row changed while the query was out'))).toHaveLength(1);
  } finally {
    held.release();
    await held.proxy.close();
  }
}

/**
 * With `claimedAgain`, another instance claims the row in the same millisecond as the claim and the event, so the
 * row's due time is again the one the first claim set: only the event's round tells the answer is older.
 */
export async function unknownAnswerBeforeWebhook(p: Pipeline, claimedAgain = false): Promise<void> {
  const batchId = await p.insertReadyBatch([payoutRequest('UA-1')]);
  // The create reaches the service, but its answer is never recorded: at the next start the row is UNKNOWN.
  const [claimed] = await claimReadyRows(p.db, 10, p.clock.now());
  const { payoutId } = await p.client.createPayout(requestOfText(claimed!.requestValues ?? ''));
  expect(p.sandbox.settle({ payoutId }, 'PAID')).toBe(1);
  expect(await markInterruptedCreatesUnknown(p.db, p.clock.now())).toBe(1);
  const held = await heldQuery(p);
  try {
    const leaseMs = p.submitterOptions.reconcileLeaseMs ?? p.submitterOptions.claimant.leaseMs;
    const claimAgain = async (): Promise<void> => {
      expect(await claimDueRows(p.db, 'UNKNOWN', 'next_attempt_at', p.clock.now(), 10, leaseMs)).toHaveLength(1);
    };
    const pass = submitterVia(p, held.client).runOnce(p.signal);
    await reversedWhileHeld(p, held, pass, payoutId, 'UA-1', claimedAgain ? claimAgain : undefined);

    // Read before the event, the answer settles nothing: the row stays UNKNOWN, due for a query of its reference now
    // (or once the other instance's claim runs out).
    const row = await p.row('UA-1');
    expect(row.state).toBe('UNKNOWN');
    expect(row.payoutId).toBeNull();
    if (claimedAgain) p.clock.advance(leaseMs);
    expect(row.nextAttemptAt).toBeLessThanOrEqual(p.clock.now());
    expect(await p.events('UA-1')).not.toContain('reconciled-found');
    expect((await receiverLines(held.h, 'UA-1')).map((l) => l['msg'])).toContain(
      'webhook accepted: a create under this reference awaits its outcome; its reference is asked again at the next submit ' +
        'pass, as an answer already on its way may be older than this event',
    );

    // The next pass asks again and adopts the service's latest word.
    await p.submit();
    expect(await p.states(batchId)).toEqual(['CANCELLED']);
    expect((await p.row('UA-1')).payoutId).toBe(payoutId);
  } finally {
    held.release();
    await held.proxy.close();
  }
}

/**
 * Leased claims (instances share the database): two queries out, one row each. A webhook makes the first row due
 * in a new round while its query is out; the second's answer lands and the pass claims again. That claim must leave
 * the row already being asked alone: the row's own answer, older than the event, is not recorded, and the row must
 * then be due at once, not after a lease taken by a claim that never asked about it.
 */
export async function droppedAnswerDueAtOnce(p: Pipeline): Promise<void> {
  const batchId = await p.insertReadyBatch([payoutRequest('DA-1'), payoutRequest('DA-2')]);
  await p.submit();
  const payoutId = (await p.row('DA-1')).payoutId as string;
  expect(p.sandbox.settle({ payoutId }, 'PAID')).toBe(1);
  const h = await startReceiver({ db: p.db, clock: p.clock, defaultFollowUp: true, path: PATH });
  const proxy = await startMitm(p.sandbox.url);
  const held = new Map<string, () => void>();
  let bothHeld!: () => void;
  const holding = new Promise<void>((r) => (bothHeld = r));
  proxy.holdAnswer = (path, text) => {
    if (path !== QUERY_PATH) return null;
    return new Promise<void>((go) => {
      held.set(text.includes('"DA-1"') ? 'DA-1' : 'DA-2', go);
      if (held.size === 2) bothHeld();
    });
  };
  // Each claim first asks whether the service is available: the claim after DA-2's answer is told by that.
  let claimed: (() => void) | null = null;
  const client = new PayoutApiClient({ ...p.clientOptions, baseUrl: proxy.url });
  const service = {
    ...serviceLike(client, {}),
    available: () => {
      claimed?.();
      return true;
    },
  };
  try {
    const polling = new SettlementPoller(
      { db: p.db, service, clock: p.clock, logger: p.logger },
      { ...p.pollerOptions, exclusive: false, queryMaxIds: 1, concurrency: 2 },
    );
    p.clock.advance(p.pollerOptions.maxIntervalMs);
    const pass = polling.runPass(p.signal);
    await holding;

    // The event agrees with the answer on its way (PAID), but the row is now in a new round.
    await deliver(h, { payoutId, merchantReferenceId: 'DA-1', status: 'PAID' });
    const claimedAgain = new Promise<void>((r) => (claimed = r));
    held.get('DA-2')?.();
    // The pass records DA-2's answer and claims again before it records anything else (one loop).
    await claimedAgain;
    proxy.holdAnswer = null;
    held.get('DA-1')?.();
    await pass;

    const row = await p.row('DA-1');
    expect(row.state).toBe('PENDING');
    expect(row.nextPollAt).toBeLessThanOrEqual(p.clock.now());
    expect(linesContaining(p.logLines, 'a final answer to a query of this payout was not recorded')).toHaveLength(1);

    // The next pass, at the same time, asks again and records PAID.
    await polling.runPass(p.signal);
    expect(await p.states(batchId)).toEqual(['PAID', 'PENDING']);
  } finally {
    proxy.holdAnswer = null;
    for (const go of held.values()) go();
    await proxy.close();
  }
}
