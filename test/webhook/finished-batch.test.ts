/**
 * The daemon as `payoutd run` wires it (real work loops, real outbox) with the webhook receiver waking its
 * poller: a batch finished with CANCELLED rows and its retry file written, then the payout service reverses one
 * of them to PAID and says so in a signed payout.updated event. The query confirms it: the batch's result file is
 * written again naming it, its retry file no longer offers it (and goes once it offers no row), `payoutd retry-file`
 * leaves it out saying why, and `payoutd status --batch` shows it.
 */
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterEach, expect, it } from 'vitest';
import { retryFile } from '../../src/cli/commands/finance.js';
import { status } from '../../src/cli/commands/status.js';
import { loadConfig, type ResolvedConfig } from '../../src/config/index.js';
import { TEST_DATABASE_FILE } from '../support/database.js';
import { printed } from '../support/output.js';
import { firstAcceptedBatch, outboxFile, pipelineDaemon, stopPipelineDaemons } from '../pipeline/daemon-world.js';
import { closePipelines, csvFile, csvRow, startPipeline, waitFor, type Pipeline } from '../pipeline/harness.js';
import { closeAll } from './helpers.js';
import { daemonReceiver, deliver } from './final-rows-world.js';

afterEach(async () => {
  await closeAll();
  await stopPipelineDaemons();
  await closePipelines();
});

/** The config the CLI commands read: the pipeline's database and the daemon's outbox. */
function cliConfig(p: Pipeline): ResolvedConfig {
  return loadConfig(
    { env: {}, cwd: p.dir },
    {
      paths: { stateDir: join(p.dir, 'state'), outbox: join(p.dir, 'outbox'), inbox: join(p.dir, 'inbox') },
      database: { filename: join(p.dir, TEST_DATABASE_FILE) },
    },
  );
}

/** The batch's retry files in the outbox (`<name>.retry.csv`, `<name>.retry.corrected-<n>.csv`), by name. */
async function retryFiles(outbox: string, batchId: string): Promise<string[]> {
  return (await readdir(outbox)).filter((f) => f.startsWith(batchId) && /\.retry\.(corrected-\d+\.)?csv$/.test(f)).sort();
}

/** The batch's latest corrected result file (`<name>.result.corrected-<n>.csv`, the highest n), null when none. */
async function latestCorrection(outbox: string, batchId: string): Promise<string | null> {
  const n = (name: string): number => Number(/\.result\.corrected-(\d+)\.csv$/.exec(name)?.[1] ?? 0);
  const [latest] = (await readdir(outbox)).filter((f) => f.startsWith(batchId) && n(f) > 0).sort((a, b) => n(b) - n(a));
  return latest ? readFile(join(outbox, latest), 'utf8') : null;
}

it('a CANCELLED row of a finished batch the service now reports PAID: a corrected result file, left out of every retry file', async () => {
  const p = await startPipeline({ startMs: Date.now(), sandbox: { settlement: { minDelayMs: 0, maxDelayMs: 5 } } });
  const { daemon, inbox, outbox } = await pipelineDaemon(p, {
    inbox: { stableForMs: 20 },
    batch: { balanceCheck: { enabled: false } },
    poll: { tickMs: 20, firstPollDelayMs: 0, minIntervalMs: 20, maxIntervalMs: 100 },
    outbox: { retryFiles: true },
  });
  // Accounts ending 0000 are cancelled by the sandbox.
  await writeFile(
    join(inbox, 'wh.csv'),
    csvFile([
      csvRow('WC-1'),
      csvRow('WC-2', { 'beneficiary.accountNumber': '2222220000' }),
      csvRow('WC-3', { 'beneficiary.accountNumber': '3333330000' }),
    ]),
  );
  await daemon.start();
  const batchId = (await firstAcceptedBatch(p, daemon)).id;
  await waitFor(async () => (await p.batch(batchId)).state === 'COMPLETE', 'the batch to complete', 15_000);
  expect(await p.states(batchId)).toEqual(['PAID', 'CANCELLED', 'CANCELLED']);
  await waitFor(async () => (await outboxFile(outbox, batchId, '.retry.csv')) !== null, 'the retry file');
  expect(await outboxFile(outbox, batchId, '.retry.csv')).toContain('WC-2-R1');
  const booked = await outboxFile(outbox, batchId, '.result.csv');

  // The service reverses WC-2 and says so.
  const payoutId = (await p.row('WC-2')).payoutId as string;
  expect(p.sandbox.reverse(payoutId, 'PAID')).toBe(true);
  const h = await daemonReceiver(p, daemon);
  await deliver(h, { payoutId, merchantReferenceId: 'WC-2', status: 'PAID' });
  await waitFor(async () => (await p.row('WC-2')).serviceNote?.includes('now reports PAID') === true, 'the service to be asked', 10_000);
  // Never written again under its name: a new version leaves WC-2 out, and the first goes from the outbox.
  await waitFor(async () => (await outboxFile(outbox, batchId, '.retry.csv')) === null, 'the first retry file to be removed', 10_000);
  const [version] = await retryFiles(outbox, batchId);
  expect(version).toMatch(/\.retry\.corrected-\d+\.csv$/);
  expect(await readFile(join(outbox, version as string), 'utf8')).not.toContain('WC-2-R1');
  await waitFor(
    async () => (await latestCorrection(outbox, batchId))?.includes('now reports PAID') === true,
    'a corrected result file',
    10_000,
  );
  expect(await readFile(join(outbox, version as string), 'utf8')).toContain('WC-3-R1');
  await waitFor(() => p.logLines.some((l) => l.includes("a finished batch's result file corrected")), 'the correction to be told');

  // WC-3 too: no row is left to retry, and the retry file goes.
  const third = (await p.row('WC-3')).payoutId as string;
  expect(p.sandbox.reverse(third, 'PAID')).toBe(true);
  await deliver(h, { payoutId: third, merchantReferenceId: 'WC-3', status: 'PAID' });
  await waitFor(async () => (await retryFiles(outbox, batchId)).length === 0, 'every retry file to be removed', 10_000);
  await daemon.stop();

  // The result file finance may have booked is never written again under its name.
  expect(await outboxFile(outbox, batchId, '.result.csv')).toBe(booked);
  const result = parse((await latestCorrection(outbox, batchId)) as string, { columns: true }) as Record<string, string>[];
  const wc2 = result.find((r) => r['merchant_reference_id'] === 'WC-2');
  expect(wc2?.['status']).toBe('CANCELLED');
  expect(wc2?.['reason']).toContain(`the payout service now reports PAID for payout ${payoutId}`);
  expect(wc2?.['reason']).toContain('do not send this row again');
  expect(wc2?.['reason']).toContain('before booking');
  expect(result.find((r) => r['merchant_reference_id'] === 'WC-1')?.['correction']).toBe('');
  expect(result.find((r) => r['merchant_reference_id'] === 'WC-3')?.['correction']).toMatch(
    /^supersedes \S+\.result\.(corrected-\d+\.)?csv: /,
  );

  const config = cliConfig(p);
  const cli = await printed(() => retryFile(config, batchId, join(p.dir, 'again.retry.csv')));
  expect(cli).toContain(`batch ${batchId}: no retry file written: each CANCELLED row is left out, as follows`);
  expect(cli).toMatch(
    /line 3 WC-2: left out: the payout service now reports PAID for payout \S+, recorded CANCELLED here: do not send this row again/,
  );
  expect(cli).toMatch(/line 4 WC-3: left out: the payout service now reports PAID/);

  const shown = await printed(() => status(config, batchId, 20, false));
  expect(shown).toContain('SERVICE CONTRADICTS 2 row(s)');
  expect(shown).toMatch(/line 3 WC-2 \(CANCELLED, payout \S+\): the payout service now reports PAID/);
  expect(shown).toMatch(/latest result: \S+\.result\.corrected-\d+\.csv, correction \d+ of the result file/);
});
