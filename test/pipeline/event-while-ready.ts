/**
 * A create that went out as the process stopped and lands only after the next start's reconcile asked its
 * reference, its event naming the payout under a row without one (./event-while-ready.test.ts; on PostgreSQL
 * while the reconcile records the reference absent: test/postgres/webhook-while-answer-recorded.test.ts).
 */
import { expect } from 'vitest';
import type { PayoutRequest } from '../../src/domain/payout.js';
import { requestOfText } from '../../src/domain/request-values.js';
import { claimReadyRows, markInterruptedCreatesUnknown } from '../../src/store/index.js';
import { deliver } from '../webhook/final-rows-world.js';
import type { Harness } from '../webhook/helpers.js';
import { payoutRequest, type Pipeline } from './harness.js';

/** A row whose create went out when the process stopped (not landed yet), UNKNOWN at the next start; its request. */
export async function interruptedCreate(p: Pipeline, ref: string): Promise<PayoutRequest> {
  await p.insertReadyBatch([payoutRequest(ref)]);
  const [claimed] = await claimReadyRows(p.db, 10, p.clock.now());
  expect(await markInterruptedCreatesUnknown(p.db, p.clock.now())).toBe(1);
  return requestOfText(claimed?.requestValues ?? '');
}

/** The interrupted create lands now, and its event reaches the receiver; its payout. */
export async function lateCreateLands(p: Pipeline, h: Harness, ref: string, request: PayoutRequest): Promise<string> {
  const { payoutId } = await p.client.createPayout(request);
  await deliver(h, { payoutId, merchantReferenceId: ref, status: 'PENDING' });
  return payoutId;
}

/** The row was made UNKNOWN, not left to be created again: the next submit pass adopts the payout, the only one. */
export async function adoptedNotCreatedAgain(p: Pipeline, ref: string, payoutId: string): Promise<void> {
  expect((await p.row(ref)).state).toBe('UNKNOWN');
  await p.submit();
  const row = await p.row(ref);
  expect([row.state, row.payoutId]).toEqual(['PENDING', payoutId]);
  expect(p.ledgerCount(ref)).toBe(1);
}
