/**
 * E2E 5: the daemon stopped in the middle of a batch — killed outright
 * (SIGKILL, creates possibly on the wire) or asked to stop (SIGTERM) — and
 * started again on the same config finishes the batch with exactly one
 * payout per row, a final status for every row, and the merchant balance
 * debited exactly once for what was paid. And killed while a file is being
 * read: the next start reads it again from the start, every row once, and
 * judges its end as the first read did (a `.done` marker taken with it is
 * in the batch record), and counts the file once in payoutd_files_total.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Decimal } from '../../src/domain/money.js';
import { spawnPayoutd } from '../chaos/world.js';
import { isCancelRow, makeRows, toCsv } from './batch-files.js';
import { ledgerByReference, outboxFileName, startE2e, waitFor, type DaemonProcess, type E2e } from './harness.js';

const ROWS = 300;

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

/** The samples of payoutd_files_total a daemon's /metrics shows, by outcome. */
async function filesTotal(metricsUrl: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${metricsUrl}/metrics`)).text();
  const samples = [...text.matchAll(/^payoutd_files_total\{outcome="(\w+)"\} (\S+)$/gm)];
  return Object.fromEntries(samples.map(([, outcome, n]) => [outcome, Number(n)]));
}

function normalized(balances: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(balances).map(([c, a]) => [c, new Decimal(a).toFixed()]));
}

async function restartMidBatch(interrupt: (daemon: DaemonProcess) => Promise<void>): Promise<void> {
  const e2e = await startE2e({
    config: { submit: { concurrency: 4 } },
    sandbox: { settlement: { minDelayMs: 100, maxDelayMs: 600 }, faults: { latencyMs: 50 } },
  });
  const rows = makeRows('E2E-RESTART', ROWS, { cancelEvery: 10 });
  const first = await e2e.startDaemon();
  await e2e.drop('big-batch.csv', toCsv(rows));

  // Interrupt once about a third of the rows have been created.
  await waitFor(() => e2e.ledger().length >= ROWS / 3, `${ROWS / 3} payouts in the ledger`, 20_000, 5);
  await interrupt(first);
  const createdBeforeRestart = e2e.ledger().length;
  expect(createdBeforeRestart).toBeLessThan(ROWS);

  const second = await e2e.startDaemon();
  const batch = await e2e.waitForBatch('big-batch.csv', ['COMPLETE'], 40_000);
  const result = await e2e.waitForOutbox(batch, 'result', 5_000);

  // Exactly one payout per row.
  const ledger = e2e.ledger();
  const perRef = ledgerByReference(ledger);
  const counts = rows.map((r) => perRef.get(r.merchantReferenceId)?.length ?? 0);
  expect(
    counts.filter((n) => n !== 1),
    'references without exactly one payout',
  ).toEqual([]);
  expect(ledger).toHaveLength(ROWS);

  // Every row final in the result file, matching the service.
  expect(result.rows).toHaveLength(ROWS);
  for (const out of result.rows) {
    const ref = out['merchant_reference_id'] as string;
    const payout = perRef.get(ref)?.[0];
    expect(['PAID', 'CANCELLED'], ref).toContain(out['status']);
    expect([out['status'], out['payout_id'], out['deduction_amount']], ref).toEqual([
      payout?.status,
      payout?.payoutId,
      payout?.deductionAmount,
    ]);
  }
  expect(result.rows.filter((r) => r['status'] === 'CANCELLED')).toHaveLength(rows.filter(isCancelRow).length);

  // The balance moved exactly once per paid payout, and no create the restart led to changed a row or came too late.
  expect(normalized(e2e.balances())).toEqual(expectedBalances(e2e));
  expect(e2e.sandbox.stats().repeatedCreates).toEqual({ mismatched: 0, afterFinal: 0 });
  expect(second.exited).toBeNull();
}

describe('e2e: a restart in the middle of a batch', () => {
  it('after SIGKILL, the next start finishes the batch: one payout per row, balance debited once', async () => {
    await restartMidBatch(async (daemon) => {
      await daemon.kill();
      expect(daemon.exited?.signal).toBe('SIGKILL');
    });
  });

  it('after SIGTERM, the daemon exits 0 within seconds, and the next start finishes the batch', async () => {
    await restartMidBatch(async (daemon) => {
      const code = await daemon.stop(8_000);
      expect(code).toBe(0);
      expect(daemon.logs.some((l) => l.msg === 'stopped cleanly')).toBe(true);
    });
  });
});

describe('e2e: killed while a file is read', () => {
  it('reads the file again from the start at the next start: every row once, in line order', async () => {
    const rows = 7_000;
    const e2e = await startE2e({ config: { batch: { balanceCheck: { enabled: false } }, metrics: { enabled: true, port: 0 } } });
    // Killed right after the first transaction of rows (5,000) is committed.
    const first = spawnPayoutd(e2e, 'killed', { PAYOUTD_FAULT_KILL_AT: 'mid-read:1' });
    await first.running();
    await e2e.drop('big.csv', toCsv(makeRows('BIG', rows)));
    expect((await first.exit).signal).toBe('SIGKILL');
    expect((await e2e.batches())[0]?.state).toBe('VALIDATING');

    const second = await e2e.startDaemon();
    const metricsUrl = String((await second.waitForLog((l) => l.msg === 'metrics, /healthz and /readyz listening'))['url']);
    const batch = await e2e.waitForBatch('big.csv', ['ACTIVE', 'COMPLETE', 'REJECTED'], 60_000);
    expect(batch.state).not.toBe('REJECTED');
    // The process that resumed the reading counts the file as seen and its outcome, each once (counted a moment
    // after the batch is stored ACTIVE).
    const counted = await waitFor(async () => {
      const files = await filesTotal(metricsUrl);
      return files['accepted'] !== undefined ? files : null;
    }, 'the resumed reading counted in payoutd_files_total');
    expect(counted).toEqual({ seen: 1, accepted: 1 });
    await e2e.waitForOutbox(batch, 'ack');
    const ack = await readFile(join(e2e.outbox, outboxFileName(batch, 'ack')), 'utf8');
    const lines = ack.split('\r\n').filter((l) => l.includes(',ACCEPTED,'));
    expect(lines).toHaveLength(rows);
    // Line order, each line once: line k + 1 holds BIG-k.
    lines.forEach((l, k) => expect(l.split(',').slice(2, 4)).toEqual([String(k + 2), `BIG-${String(k + 1).padStart(4, '0')}`]));
  });

  it('a file without a final line break taken with its .done marker: read again at the next start, still vouched for, every row paid once', async () => {
    const e2e = await startE2e({
      config: { batch: { balanceCheck: { enabled: false } } },
      balances: { USDT: '1000000000', USDC: '1000000000' },
    });
    // One row more than a transaction of the reader: the kill comes after the first commit. Every row is
    // paid through the sandbox, which can outlast the default limit on a busy machine.
    const rows = makeRows('DONE', 5_001);
    const first = spawnPayoutd(e2e, 'killed', { PAYOUTD_FAULT_KILL_AT: 'mid-read:1' });
    await first.running();
    // The marker after its file, as a sender must send it: one older than the file vouches for nothing.
    await e2e.drop('vouched.csv', toCsv(rows).trimEnd());
    await e2e.drop('vouched.csv.done', '');
    expect((await first.exit).signal).toBe('SIGKILL');
    expect((await e2e.batches())[0]?.state).toBe('VALIDATING');

    await e2e.startDaemon();
    const batch = await e2e.waitForBatch('vouched.csv', ['ACTIVE', 'COMPLETE', 'REJECTED'], 60_000);
    expect(batch.state, batch.rejectReason ?? '').not.toBe('REJECTED');
    expect(batch.validCount).toBe(rows.length);
    const byReference = await waitFor(
      () => {
        const seen = ledgerByReference(e2e.ledger());
        return seen.size === rows.length ? seen : undefined;
      },
      'a payout for every row',
      60_000,
      500,
    );
    expect([...byReference.values()].filter((entries) => entries.length !== 1)).toEqual([]);
  }, 180_000);
});
