/**
 * A real SQLite state database in a temp directory for the finance report
 * tests, filled through the store functions (insertBatch, insertRows) and
 * raw updates for what the submitter and poller would have written.
 * Temp directories are kept when a test fails, for the evidence.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import type { PayoutRequest } from '../../src/domain/payout.js';
import { encodeRequest } from '../../src/domain/request-values.js';
import { insertBatch, receivedBatch } from '../../src/store/batches.js';
import { closeDatabase, type Database } from '../../src/store/db.js';
import { insertRows, type NewPayoutRow } from '../../src/store/insert-rows.js';
import { toColumns, type PayoutRow } from '../../src/store/payouts.js';
import { openTestDatabase } from '../support/database.js';
import { payoutRequest } from '../support/rows.js';

export const T0 = Date.UTC(2026, 0, 10, 12, 0, 0);
export const DAY = 24 * 3600 * 1000;

export interface TestStore {
  dir: string;
  db: Database;
}

/** A fresh temp dir and migrated database per test; both closed and removed after it (kept on failure). */
export function useStore(): () => Promise<TestStore> {
  const open: TestStore[] = [];
  afterEach(async (ctx) => {
    const keep = ctx.task.result?.state === 'fail';
    for (const s of open.splice(0)) {
      await closeDatabase(s.db);
      if (keep) console.error(`kept temp dir of failed test: ${s.dir}`);
      else await rm(s.dir, { recursive: true, force: true });
    }
  });
  return async () => {
    const dir = await mkdtemp(join(tmpdir(), 'payoutd-finance-'));
    const db = await openTestDatabase(dir);
    const s = { dir, db };
    open.push(s);
    return s;
  };
}

export async function addBatch(db: Database, id: string, fileName: string, receivedAt = T0): Promise<void> {
  const file = {
    id,
    fileName,
    storedPath: `/claimed/${id}`,
    controlPath: null,
    doneMarker: false,
    sha256: id.padEnd(64, '0').slice(0, 64),
    size: 1,
    mtimeMs: receivedAt,
  };
  await insertBatch(db, { ...receivedBatch(file, receivedAt), state: 'ACTIVE', delimiter: ',', acceptedAt: receivedAt });
}

/** The valid PHP request of test/support/rows.ts for 1500.5, to an account with leading zeros (passes the default rules). */
export function request(
  ref: string,
  over: Partial<PayoutRequest> = {},
  beneficiary: Partial<PayoutRequest['beneficiary']> = {},
): PayoutRequest {
  const base = payoutRequest(ref, { payoutAmount: '1500.5' });
  return { ...base, beneficiary: { ...base.beneficiary, accountNumber: '0001234567', ...beneficiary }, ...over };
}

/**
 * Rows as the reader stores them (VALIDATED, with the request's values): a money cell kept only where
 * `written` gives it otherwise than the request has it.
 */
export function validRow(
  batchId: string,
  line: number,
  req: PayoutRequest,
  written: Partial<Pick<NewPayoutRow, 'payoutCurrency' | 'payoutAmount' | 'deductionCurrency'>> = {},
): NewPayoutRow {
  return {
    batchId,
    line,
    merchantReferenceId: req.merchantReferenceId,
    state: 'VALIDATED',
    requestValues: encodeRequest(req),
    payoutCurrency: null,
    payoutAmount: null,
    deductionCurrency: null,
    ...written,
    reasonCode: null,
    reason: null,
  };
}

export async function addRows(db: Database, rows: NewPayoutRow[]): Promise<void> {
  await db.transaction((trx) => insertRows(trx, rows, T0));
}

/**
 * Sets what the submitter and poller would have written (state, payout id, amounts, a creation's time as it was
 * read when written), bypassing the lifecycle.
 */
export async function setRow(db: Database, batchId: string, line: number, patch: Partial<PayoutRow>): Promise<void> {
  const n = await db('payouts').where({ batch_id: batchId, line }).update(toColumns(patch));
  if (n !== 1) throw new Error(`no row ${batchId}:${line}`);
}

export async function listDir(dir: string): Promise<string[]> {
  return (await readdir(dir)).sort();
}
