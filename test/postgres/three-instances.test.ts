/**
 * PostgreSQL 3: three `payoutd run` instances share one database, one inbox
 * polled as a shared folder, and one outbox; 10,000 rows in five files; one
 * instance is killed outright (SIGKILL) once a third of the payouts exist.
 * The sandbox creates a second payout for a repeated reference
 * (duplicatePolicy 'allow'), so any double create would show in its ledger.
 * Expected: every row paid exactly once, every file claimed by one instance
 * and its result written once, the dead instance's creates in flight taken
 * over (UNKNOWN, then resolved by query), and the balance debited exactly
 * for what is PAID or PENDING.
 */
import { describe, expect, it } from 'vitest';
import { Decimal } from '../../src/domain/money.js';
import { isCancelRow, makeRows, toCsv, type BatchRow } from '../e2e/batch-files.js';
import { ledgerByReference, startE2e, waitFor, type E2e } from '../e2e/harness.js';
import { dropFile, startInstances, type Instances } from './instances.js';
import { pgQuery, pgReachable, useTestSchema } from './pg.js';

const FILES = 5;
const ROWS_PER_FILE = 2000;
const TOTAL = FILES * ROWS_PER_FILE;
const CANCEL_EVERY = 25;
const VICTIM = 'b';

/** Opening balance minus what PAID and PENDING payouts deducted (CANCELLED ones were refunded). */
function expectedBalances(e2e: E2e): Record<string, string> {
  const out: Record<string, Decimal> = {};
  for (const [currency, amount] of Object.entries(e2e.openingBalances)) out[currency] = new Decimal(amount);
  for (const p of e2e.ledger()) {
    if (p.status === 'CANCELLED') continue;
    out[p.deductionCurrency] = (out[p.deductionCurrency] ?? new Decimal(0)).minus(new Decimal(p.deductionAmount));
  }
  return Object.fromEntries(Object.entries(out).map(([c, d]) => [c, d.toFixed()]));
}

function normalized(balances: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(balances).map(([c, a]) => [c, new Decimal(a).toFixed()]));
}

/** Throws at the first sign the run went wrong (a batch rejected or finished with rows still moving, a failed work loop pass). */
async function failFast(url: string, instances: Instances): Promise<void> {
  const broken = await pgQuery<{ file_name: string; state: string; moving: number }>(
    url,
    `select b.file_name, b.state,
            (select count(*)::int from payouts p where p.batch_id = b.id and p.state not in ('PAID', 'CANCELLED')) as moving
       from batches b where b.state in ('REJECTED', 'DUPLICATE', 'COMPLETE')`,
  );
  const bad = broken.filter((b) => b.state !== 'COMPLETE' || b.moving > 0);
  if (bad.length > 0) throw new Error(`batches gone wrong: ${JSON.stringify(bad)}`);
  const failed = instances.logs('work loop pass failed')[0];
  if (failed) {
    // A database error's message starts with the whole statement: its code and the end say what went wrong.
    const err = (failed.line.err ?? {}) as { code?: string; message?: string };
    throw new Error(`${failed.instance}: work loop pass failed: ${err.code ?? ''} …${String(err.message ?? '').slice(-300)}`);
  }
}

describe.skipIf(!pgReachable)('postgres: three instances, one killed mid-run', () => {
  const schema = useTestSchema();

  // A broken run fails within seconds of the first broken batch (failFast), not at the timeout.
  // About 90 s on an idle 2-core machine; the generous waits only matter on a loaded one.
  it('pays 10,000 rows exactly once and writes each result once', { timeout: 400_000 }, async () => {
    const e2e = await startE2e({
      balances: { USDT: '100000000', USDC: '100000000' },
      sandbox: { settlement: { minDelayMs: 50, maxDelayMs: 300 }, faults: { latencyMs: 20 }, duplicatePolicy: 'allow' },
    });
    const instances = await startInstances(e2e, schema, {
      inbox: { usePolling: true, stableForMs: 300, rescanIntervalMs: 500 },
      submit: { concurrency: 8, notFoundGraceMs: 1000 },
      poll: { tickMs: 100, firstPollDelayMs: 200, minIntervalMs: 200, maxIntervalMs: 1000 },
      instance: { leaseMs: 3000 },
      api: { timeoutMs: 1400 }, // under half the lease (config refuses more)
    });
    for (const name of ['a', 'b', 'c']) await instances.configure(name);
    expect((await instances.cli('a', ['migrate'])).code).toBe(0);
    const [a, b, c] = await Promise.all(['a', 'b', 'c'].map((n) => instances.start(n)));
    if (!a || !b || !c) throw new Error('three instances expected');

    const files = Array.from({ length: FILES }, (_, k) => ({
      name: `ha-${k + 1}.csv`,
      rows: makeRows(`PG3-${k + 1}`, ROWS_PER_FILE, { cancelEvery: CANCEL_EVERY }),
    }));
    for (const f of files) await dropFile(e2e, f.name, toCsv(f.rows));
    const allRows: BatchRow[] = files.flatMap((f) => f.rows);

    // SIGKILL one instance once a third of the payouts exist.
    let checkedAt = 0;
    await waitFor(
      async () => {
        if (Date.now() - checkedAt >= 500) {
          checkedAt = Date.now();
          await failFast(schema.url, instances);
        }
        // The sandbox's counter, not a copy of its ledger: cheap enough to ask every 20 ms.
        return e2e.sandbox.stats().creates >= TOTAL / 3;
      },
      `${Math.ceil(TOTAL / 3)} payouts created`,
      150_000,
      20,
    );
    await b.kill();
    const createdAtKill = e2e.ledger().length;
    expect(createdAtKill).toBeLessThan(TOTAL);
    // Its creates in flight: nobody else may touch them until their lease runs out.
    const orphaned = await pgQuery<{ id: number; merchant_reference_id: string }>(
      schema.url,
      `select id, merchant_reference_id from payouts where state = 'CREATING' and lease_owner = $1`,
      [VICTIM],
    );

    await waitFor(
      async () => {
        await failFast(schema.url, instances);
        const [r] = await pgQuery<{ n: number }>(schema.url, `select count(*)::int as n from batches where state = 'COMPLETE'`);
        return (r?.n ?? 0) >= FILES;
      },
      `${FILES} complete batches`,
      200_000,
      250,
    );
    // A graceful stop lets every pass already started finish: a second result writer would have logged by now.
    expect(await a.stop(), 'a stops cleanly').toBe(0);
    expect(await c.stop(), 'c stops cleanly').toBe(0);

    // Every row paid exactly once, though the service would have accepted a second create.
    const ledger = e2e.ledger();
    const perRef = ledgerByReference(ledger);
    const notOnce = allRows.filter((r) => perRef.get(r.merchantReferenceId)?.length !== 1).map((r) => r.merchantReferenceId);
    expect(notOnce.slice(0, 20), `${notOnce.length} references without exactly one payout`).toEqual([]);
    expect(ledger).toHaveLength(TOTAL);
    expect(ledger.filter((p) => p.status === 'PENDING')).toHaveLength(0);

    // Every file read into exactly one batch (claim rows are forgotten once older than a lease), all rows final.
    const batches = await e2e.batches();
    expect(batches.map((x) => x.fileName).sort()).toEqual(files.map((f) => f.name).sort());
    const cancelsPerFile = files[0]?.rows.filter(isCancelRow).length ?? 0;
    expect(cancelsPerFile).toBe(ROWS_PER_FILE / CANCEL_EVERY);
    for (const x of batches) {
      expect([x.fileName, x.state, x.counts]).toEqual([
        x.fileName,
        'COMPLETE',
        { PAID: ROWS_PER_FILE - cancelsPerFile, CANCELLED: cancelsPerFile },
      ]);
    }

    // One result file per batch, and one "batch complete" per batch across all three instances' logs.
    const names = await e2e.outboxNames();
    expect(names.filter((n) => n.endsWith('.result.csv')).sort()).toEqual(batches.map((x) => `${x.id}_${x.fileName}.result.csv`).sort());
    const completes = instances.logs('batch complete').map((l) => String(l.line.batchId));
    expect(completes.sort()).toEqual(batches.map((x) => x.id).sort());
    for (const x of batches) {
      const result = await e2e.waitForOutbox(x, 'result', 1000);
      expect(result.rows).toHaveLength(ROWS_PER_FILE);
      const wrong = result.rows.filter((row) => {
        const p = perRef.get(row['merchant_reference_id'] as string)?.[0];
        return !p || row['status'] !== p.status || row['payout_id'] !== p.payoutId || row['deduction_amount'] !== p.deductionAmount;
      });
      expect(wrong.slice(0, 5), `${x.fileName}: result rows that disagree with the service`).toEqual([]);
    }

    // The dead instance's creates in flight became UNKNOWN once its lease ran out and were resolved by query.
    expect(orphaned.length, 'creates in flight when the instance was killed').toBeGreaterThan(0);
    const resolved = await pgQuery<{ id: number; state: string; interrupted: number }>(
      schema.url,
      `select p.id, p.state,
              (select count(*)::int from payout_history h where h.payout_row_id = p.id and h.event = 'interrupted') as interrupted
         from payouts p where p.id = any($1)`,
      [orphaned.map((o) => o.id)],
    );
    expect(resolved.filter((r) => !['PAID', 'CANCELLED'].includes(r.state) || r.interrupted !== 1)).toEqual([]);
    const takeovers = instances.logs('took over creates').filter((l) => l.instance !== VICTIM);
    // At least those: a live instance's create slower than the lease would be taken over too (and resolved the same way).
    expect(takeovers.reduce((n, l) => n + Number(l.line.rows), 0)).toBeGreaterThanOrEqual(orphaned.length);
    const [left] = await pgQuery<{ n: number }>(
      schema.url,
      `select count(*)::int as n from payouts where state not in ('PAID', 'CANCELLED')`,
    );
    expect(left?.n).toBe(0);

    // The balance moved exactly once per payout that is PAID (CANCELLED ones refunded).
    expect(normalized(e2e.balances())).toEqual(expectedBalances(e2e));
  });
});
