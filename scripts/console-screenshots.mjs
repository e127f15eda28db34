#!/usr/bin/env node
// Makes the console screenshots of docs/console.md (docs/console-batches.png,
// docs/console-batch.png): runs the built `payoutd run` on the embedded
// sandbox in a temp folder with the console on, adds two users, uploads a few
// batches through the console as a user would, and photographs the batch list
// (one batch still being paid) and a finished batch with Debian's Chromium.
//
//   npm run build && node scripts/console-screenshots.mjs [--chromium /usr/bin/chromium]
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const BIN = join(ROOT, 'bin', 'payoutd.js');
const { values } = parseArgs({ options: { chromium: { type: 'string', default: '/usr/bin/chromium' } } });
const PASSWORD = 'screenshot password';

const dir = await mkdtemp(join(tmpdir(), 'payoutd-screenshots-'));
const config = join(dir, 'payoutd.yaml');
await writeFile(
  config,
  [
    `paths: { inbox: ${dir}/inbox, outbox: ${dir}/outbox, stateDir: ${dir}/state, create: true }`,
    'inbox: { stableForMs: 300, rescanIntervalMs: 500 }',
    'outbox: { xlsx: true }',
    'console: { enabled: true, port: 0, refreshMs: 1000 }',
    // Slow settlement, so one batch is still being paid when the list is photographed.
    'sandbox: { settlementMinDelayMs: 500, settlementMaxDelayMs: 20000 }',
    'log: { level: info }',
  ].join('\n'),
);

function cli(args, input) {
  return new Promise((resolve, reject) => {
    const child = execFile(process.execPath, [BIN, ...args, '--config', config], { cwd: dir }, (err, stdout, stderr) =>
      err ? reject(new Error(`payoutd ${args.join(' ')}: ${stderr}`)) : resolve(stdout),
    );
    child.stdin.end(input ?? '');
  });
}

async function until(probe, what, timeoutMs = 180_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

await cli(['user', 'add', 'maria.santos', '--role', 'uploader'], `${PASSWORD}\n`);
await cli(['user', 'add', 'li.wei', '--role', 'approver'], `${PASSWORD}\n`);

const daemon = spawn(process.execPath, [BIN, 'run', '--config', config], { cwd: dir, stdio: ['ignore', 'pipe', 'inherit'] });
let log = '';
daemon.stdout.on('data', (chunk) => (log += chunk));
const base = await until(() => /"url":"([^"]+)","msg":"finance console listening"/.exec(log)?.[1], 'the console to listen');

const browser = await chromium.launch({ executablePath: values.chromium, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.goto(`${base}/sign-in`);
  await page.fill('input[name=name]', 'maria.santos');
  await page.fill('input[name=password]', PASSWORD);
  await page.press('input[name=password]', 'Enter');
  await page.waitForURL(`${base}/batches`);

  const upload = async (path, name) => {
    await page.setInputFiles('#upload-file', { name, mimeType: 'text/csv', buffer: await readFile(path) });
    await until(async () => ((await page.textContent('#upload-status')) ?? '').includes('in the inbox'), `the upload of ${name}`);
  };
  await upload(join(ROOT, 'samples', 'payouts-valid.csv'), 'payouts-2026-11-26.csv');
  await upload(join(ROOT, 'samples', 'payouts-with-errors.csv'), 'payouts-2026-11-26-fixes.csv');
  await until(
    async () => /payouts-2026-11-26\.csv\s+maria\.santos\s+COMPLETE/.test((await page.textContent('#batch-rows')) ?? ''),
    'the first batch to be paid',
  );
  const big = join(dir, 'big.csv');
  await new Promise((resolve, reject) =>
    execFile(process.execPath, [join(ROOT, 'samples', 'generate-batch.mjs'), '--rows', '120', '--prefix', 'NOV27', '--out', big], (e) =>
      e ? reject(e) : resolve(),
    ),
  );
  await upload(big, 'payouts-2026-11-27.csv');

  // The list once the big batch is under way and the first one is complete.
  await page.goto(`${base}/batches`);
  let seen = '';
  await until(async () => {
    const text = (seen = (await page.textContent('#batch-rows')) ?? '');
    return /payouts-2026-11-27\.csv[\s\S]*ACTIVE[\s\S]*left/.test(text);
  }, 'a batch under way beside a finished one').catch((e) => {
    throw new Error(`${e.message}; the list shows: ${seen.replace(/\s+/g, ' ')}`);
  });
  await page.screenshot({ path: join(ROOT, 'docs', 'console-batches.png'), fullPage: true });

  await page.getByRole('link', { name: 'payouts-2026-11-26.csv', exact: true }).click();
  await page.waitForURL(/\/batches\/[^/]+$/);
  await until(async () => ((await page.textContent('main')) ?? '').includes('.result.xlsx'), 'the result files');
  await page.screenshot({ path: join(ROOT, 'docs', 'console-batch.png'), fullPage: true });
  console.log('wrote docs/console-batches.png and docs/console-batch.png');
} finally {
  await browser.close();
  daemon.kill('SIGTERM');
  await new Promise((r) => daemon.once('exit', r));
  await rm(dir, { recursive: true, force: true });
}
