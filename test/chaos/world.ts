/**
 * Shared pieces of the chaos, service-fault and hostile-input tests, built
 * on the e2e harness (test/e2e/harness.ts): a seeded random source, a daemon
 * spawner that can pass PAYOUTD_FAULT_KILL_AT (the harness strips every
 * PAYOUTD_* variable from its children, rightly for its own tests), and the
 * checks of the exactly-once verdict — one payout per valid row in the
 * sandbox ledger, the balance moved once per payout, every row final in one
 * result file, and a sound SQLite file.
 *
 * Checks return failure strings instead of throwing, so a long run can print
 * every broken promise of a seed at once; tests assert the list is empty.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { openSqlite } from '../../src/store/sqlite-driver.js';
import { onTestFinished } from 'vitest';
import { Decimal } from '../../src/domain/money.js';
import type { LedgerEntry } from '../../src/sandbox/index.js';
import type { BatchRow } from '../e2e/batch-files.js';
import { BIN, DaemonProcess, ledgerByReference, readOutboxCsv, type BatchStatus, type E2e } from '../e2e/harness.js';

// ---------------------------------------------------------------- seeded randomness

/** mulberry32: a tiny, well-mixed 32-bit PRNG; the same seed gives the same run plan. */
export class Rng {
  private state: number;

  constructor(readonly seed: number) {
    this.state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    const item = items[Math.floor(this.next() * items.length)];
    if (item === undefined) throw new Error('pick from an empty list');
    return item;
  }
}

// ---------------------------------------------------------------- daemons with an environment of our choosing

/** The environment of a child: ours minus anything that would override the config file (as the harness does). */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('PAYOUTD_') || k === 'CREDENTIALS_DIRECTORY') continue;
    env[k] = v;
  }
  return env;
}

const spawned = new WeakMap<E2e, DaemonProcess[]>();

/**
 * Spawns `payoutd run` on the world's config with extra environment
 * variables (PAYOUTD_FAULT_KILL_AT). Killed when the test ends; on failure
 * its transcript is written into the world's folder (kept by the harness).
 */
export function spawnPayoutd(e2e: E2e, label: string, env: Record<string, string> = {}): DaemonProcess {
  const child = spawn(process.execPath, [BIN, 'run', '--config', e2e.configPath], {
    cwd: e2e.dir,
    env: { ...cleanEnv(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const d = new DaemonProcess(label, child);
  let list = spawned.get(e2e);
  if (!list) {
    const mine: DaemonProcess[] = [];
    spawned.set(e2e, mine);
    list = mine;
    onTestFinished(async (ctx) => {
      await Promise.all(mine.map((p) => p.kill()));
      if (ctx.task.result?.state === 'fail' && existsSync(e2e.dir)) {
        await Promise.all(mine.map((p) => writeFile(join(e2e.dir, `${p.label}.log`), p.transcript()).catch(() => undefined)));
      }
    });
  }
  list.push(d);
  return d;
}

// ---------------------------------------------------------------- the verdict

/** What the test expects of one dropped file. */
export interface DroppedFile {
  name: string;
  /** References that must end with exactly one payout each. */
  paid: string[];
  /** Of those, the ones the sandbox cancels (account ends in 0000). */
  cancelled: string[];
  /** References that must have no payout (the file is refused as a whole, or is a re-drop whose rows belong to another file). */
  unpaid: string[];
  /** The batch state the file must end in. */
  finalState: BatchStatus['state'];
  /** The rows of a file to be paid, as written: each payout must carry their money and account. */
  rows?: readonly BatchRow[];
}

/** Opening balance minus what PAID and PENDING payouts deducted (CANCELLED ones were refunded). */
export function expectedBalances(opening: Record<string, string>, ledger: readonly LedgerEntry[]): Record<string, string> {
  const out: Record<string, Decimal> = {};
  for (const [currency, amount] of Object.entries(opening)) out[currency] = new Decimal(amount);
  for (const p of ledger) {
    if (p.status === 'CANCELLED') continue;
    out[p.deductionCurrency] = (out[p.deductionCurrency] ?? new Decimal(0)).minus(new Decimal(p.deductionAmount));
  }
  return Object.fromEntries(Object.entries(out).map(([c, d]) => [c, d.toFixed()]));
}

export function normalizedBalances(balances: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(balances).map(([c, a]) => [c, new Decimal(a).toFixed()]));
}

/**
 * Every reference of `files` that should be paid has exactly one payout, for the amount, currencies and account its
 * row asked; every other reference none.
 */
export function checkLedger(files: readonly DroppedFile[], ledger: readonly LedgerEntry[]): string[] {
  const failures: string[] = [];
  const perRef = ledgerByReference(ledger);
  const toPay = new Set(files.flatMap((f) => f.paid));
  for (const f of files) {
    for (const ref of f.paid) {
      const n = perRef.get(ref)?.length ?? 0;
      if (n !== 1) failures.push(`${f.name}: ${ref} has ${n} payouts in the ledger (expected 1)`);
    }
    for (const row of f.rows ?? []) {
      const p = perRef.get(row.merchantReferenceId)?.[0];
      if (p === undefined) continue;
      const asked = `${row.payoutAmount} ${row.payoutCurrency} from ${row.deductionCurrency} to ${row.accountNumber}`;
      const made = `${p.payoutAmount} ${p.payoutCurrency} from ${p.deductionCurrency} to ${p.accountNumber}`;
      const same =
        new Decimal(p.payoutAmount).eq(row.payoutAmount) &&
        p.payoutCurrency === row.payoutCurrency &&
        p.deductionCurrency === row.deductionCurrency &&
        p.accountNumber === row.accountNumber;
      if (!same) failures.push(`${f.name}: ${row.merchantReferenceId} asked ${asked}; the service paid ${made}`);
    }
    for (const ref of f.cancelled) {
      const p = perRef.get(ref)?.[0];
      if (p && p.status !== 'CANCELLED') failures.push(`${f.name}: ${ref} should be CANCELLED by the sandbox, is ${p.status}`);
    }
  }
  for (const [ref, payouts] of perRef) {
    if (!toPay.has(ref)) failures.push(`the ledger holds ${payouts.length} payout(s) for ${ref}, which no file may pay`);
  }
  return failures;
}

/**
 * No create repeated a reference with another body, or after its payout was final: the sandbox's duplicate policy
 * may answer either as if nothing changed, so only its count shows the daemon sent one.
 */
export function checkRepeatedCreates(e2e: E2e): string[] {
  const { mismatched, afterFinal } = e2e.sandbox.stats().repeatedCreates;
  return [
    ...(mismatched > 0 ? [`${mismatched} create(s) repeated a reference with another amount, currency or account`] : []),
    ...(afterFinal > 0 ? [`${afterFinal} create(s) were sent for a reference whose payout was already final`] : []),
  ];
}

/** The merchant balance moved exactly once per payout that holds its debit. */
export function checkBalances(e2e: E2e): string[] {
  const want = expectedBalances(e2e.openingBalances, e2e.ledger());
  const have = normalizedBalances(e2e.balances());
  const failures: string[] = [];
  for (const c of new Set([...Object.keys(want), ...Object.keys(have)])) {
    if (want[c] !== have[c])
      failures.push(`balance ${c} is ${have[c] ?? '(none)'}, expected ${want[c] ?? '(none)'} (opening minus PAID and PENDING)`);
  }
  return failures;
}

const FINAL_OUTCOMES = new Set(['PAID', 'CANCELLED', 'REJECTED', 'DUPLICATE', 'NOT_SUBMITTED']);

/**
 * One batch per dropped file, in its final state; exactly one result file
 * per batch that read rows, every row in it with a final status that agrees
 * with the ledger; nothing half-written left in the outbox.
 */
export async function checkBatchesAndFiles(e2e: E2e, files: readonly DroppedFile[], batches: BatchStatus[]): Promise<string[]> {
  const failures: string[] = [];
  const names = await e2e.outboxNames();
  const perRef = ledgerByReference(e2e.ledger());
  for (const f of files) {
    const mine = batches.filter((b) => b.fileName === f.name);
    if (mine.length !== 1) {
      failures.push(`${f.name}: ${mine.length} batches (expected exactly 1): ${mine.map((b) => `${b.id} ${b.state}`).join(', ')}`);
      continue;
    }
    const b = mine[0] as BatchStatus;
    if (b.state !== f.finalState)
      failures.push(`${f.name}: batch ${b.id} is ${b.state} (expected ${f.finalState}; ${b.rejectReason ?? b.holdReason ?? ''})`);
    const results = names.filter((n) => n.startsWith(`${b.id}_`) && n.endsWith('.result.csv'));
    const acks = names.filter((n) => n.startsWith(`${b.id}_`) && n.endsWith('.ack.csv'));
    if (acks.length !== 1) failures.push(`${f.name}: ${acks.length} ack files (expected 1)`);
    if (b.state === 'DUPLICATE' || (b.state === 'REJECTED' && b.rowCount === 0)) continue;
    if (results.length !== 1) {
      failures.push(`${f.name}: ${results.length} result files (expected 1)`);
      continue;
    }
    const result = await readOutboxCsv(join(e2e.outbox, results[0] as string));
    // Each row of the file once, and no other.
    const lines = new Map<string, number>();
    for (const row of result.rows) lines.set(row['merchant_reference_id'] ?? '', (lines.get(row['merchant_reference_id'] ?? '') ?? 0) + 1);
    for (const ref of [...f.paid, ...f.unpaid])
      if (lines.get(ref) !== 1) failures.push(`${f.name}: ${ref} is in the result file ${lines.get(ref) ?? 0} times (expected once)`);
    const ours = new Set([...f.paid, ...f.unpaid]);
    for (const ref of lines.keys()) if (!ours.has(ref)) failures.push(`${f.name}: the result file holds ${ref}, which is not in the file`);
    for (const row of result.rows) {
      const ref = row['merchant_reference_id'] ?? '';
      const status = row['status'] ?? '';
      if (!FINAL_OUTCOMES.has(status)) failures.push(`${f.name}: ${ref} is ${status} in the result file (not final)`);
      if (f.paid.includes(ref)) {
        const p = perRef.get(ref)?.[0];
        if (!p || p.status !== status || p.payoutId !== row['payout_id'] || p.deductionAmount !== row['deduction_amount']) {
          failures.push(
            `${f.name}: ${ref} says ${status} ${row['payout_id'] ?? ''} ${row['deduction_amount'] ?? ''}; the service says ${p ? `${p.status} ${p.payoutId} ${p.deductionAmount}` : 'nothing'}`,
          );
        }
      } else if (status === 'PAID' || status === 'CANCELLED') {
        failures.push(`${f.name}: ${ref} is ${status} in the result file but must not be paid`);
      }
    }
  }
  const known = new Set(batches.map((b) => b.id));
  for (const n of names) {
    const id = n.split('_')[0] ?? '';
    if (!known.has(id)) failures.push(`outbox file ${n} belongs to no batch`);
  }
  return failures;
}

/** Temp files of atomic writes left in the outbox (a write cut off by SIGKILL leaves its `.name.random.tmp`). */
export async function leftoverTempFiles(outbox: string): Promise<string[]> {
  return (await readdir(outbox).catch(() => [] as string[])).filter((n) => n.startsWith('.') && n.endsWith('.tmp'));
}

/** Opens the state database read-only (the daemon must have stopped): integrity, and every row and batch final. */
export function checkDatabase(file: string): string[] {
  const failures: string[] = [];
  const db = openSqlite(file, { readonly: true, fileMustExist: true });
  try {
    const integrity = db.pragma('integrity_check', { simple: true });
    if (integrity !== 'ok') failures.push(`PRAGMA integrity_check says ${String(integrity)}`);
    const open = db
      .prepare(
        `SELECT state, COUNT(*) AS n FROM payouts WHERE state NOT IN ('PAID','CANCELLED','REJECTED','INVALID','DUPLICATE','NOT_SUBMITTED') GROUP BY state`,
      )
      .all() as { state: string; n: number }[];
    for (const o of open) failures.push(`${o.n} rows still ${o.state} in the database`);
    const batches = db
      .prepare(`SELECT state, COUNT(*) AS n FROM batches WHERE state NOT IN ('COMPLETE','REJECTED','DUPLICATE') GROUP BY state`)
      .all() as { state: string; n: number }[];
    for (const b of batches) failures.push(`${b.n} batches still ${b.state} in the database`);
    const twice = db
      .prepare(
        `SELECT merchant_reference_id AS ref, COUNT(*) AS n FROM payouts WHERE payout_id IS NOT NULL GROUP BY merchant_reference_id HAVING COUNT(*) > 1`,
      )
      .all() as { ref: string; n: number }[];
    for (const t of twice) failures.push(`${t.ref} is held by ${t.n} rows with a payoutId`);
  } finally {
    db.close();
  }
  return failures;
}

/** For a failed run: the rows not final in the database, with their history, next to what the service says of them. */
export function describeStuckRows(file: string, ledger: readonly LedgerEntry[], limit = 5): string[] {
  const out: string[] = [];
  const perRef = ledgerByReference(ledger);
  const db = openSqlite(file, { readonly: true, fileMustExist: true });
  try {
    const rows = db
      .prepare(
        `SELECT id, batch_id, merchant_reference_id AS ref, state, payout_id, next_attempt_at, next_poll_at, poll_count, create_attempts
         FROM payouts WHERE state NOT IN ('PAID','CANCELLED','REJECTED','INVALID','DUPLICATE','NOT_SUBMITTED') ORDER BY id LIMIT ?`,
      )
      .all(limit) as { id: number; ref: string; [k: string]: unknown }[];
    for (const r of rows) {
      const service = (perRef.get(r.ref) ?? []).map((p) => `${p.payoutId} ${p.status}`).join(', ') || 'nothing';
      out.push(`row ${JSON.stringify(r)}; the service has: ${service}`);
      const history = db
        .prepare('SELECT at, event, from_state, to_state, outcome, detail FROM payout_history WHERE payout_row_id = ? ORDER BY id')
        .all(r.id);
      for (const h of history) out.push(`    ${JSON.stringify(h)}`);
    }
  } finally {
    db.close();
  }
  return out;
}
