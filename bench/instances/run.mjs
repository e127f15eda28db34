#!/usr/bin/env node
// Capacity with several payoutd instances on one PostgreSQL database:
// creates per second with 1, 2 and 3 `payoutd run` processes sharing one
// schema and one inbox, against the payout sandbox in its own process
// (`payoutd sandbox --config`) with added latency, each instance with the
// same fixed submit.concurrency. Each run pays the same number of rows
// (one file), checks every reference was paid exactly once (the sandbox
// runs with duplicatePolicy "allow", so a double create would show), and
// prints a table. Plain Node ESM against the compiled dist/ of --root; not
// part of `npm test`.
//
//   node bench/instances/run.mjs [--root DIR] [--pg URL] [--rows 3000]
//     [--latency 50] [--concurrency 4] [--instances 1,2,3] [--json FILE]
//
// PostgreSQL: --pg, else PAYOUTD_BENCH_PG_URL, else PAYOUTD_TEST_PG_URL,
// else postgres://postgres@127.0.0.1:5432/test. Each run makes its own
// schema and drops it afterwards.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { parseFlags } from '../lib/flags.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const MERCHANT = 'BENCH-HA-MERCHANT';
const BALANCE = '1000000000000';

const USAGE = `usage: node bench/instances/run.mjs [--root DIR] [--pg URL] [--rows 3000] [--latency 50] [--concurrency 4]
    [--instances 1,2,3] [--json FILE]
  --root         the payoutd checkout whose dist/ runs (default: this one)
  --pg           PostgreSQL URL (default: PAYOUTD_BENCH_PG_URL, else PAYOUTD_TEST_PG_URL, else the local test database)
  --rows         rows of the one file each run pays
  --latency      ms the sandbox adds to each answer
  --concurrency  submit.concurrency of each instance
  --instances    the instance counts to run, one run each
  --json         also write the figures to this file
(docs/performance.md)`;

const args = parseFlags(
  {
    root: { type: 'string', default: resolve(HERE, '..', '..') },
    pg: { type: 'string' },
    rows: { type: 'string', default: '3000' },
    latency: { type: 'string', default: '50' },
    concurrency: { type: 'string', default: '4' },
    instances: { type: 'string', default: '1,2,3' },
    json: { type: 'string' },
  },
  USAGE,
);
const ROOT = resolve(args.root);
const PG_URL = args.pg ?? process.env.PAYOUTD_BENCH_PG_URL ?? process.env.PAYOUTD_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const ROWS = Number.parseInt(args.rows, 10);
const LATENCY_MS = Number.parseInt(args.latency, 10);
const CONCURRENCY = Number.parseInt(args.concurrency, 10);
const COUNTS = args.instances.split(',').map((n) => Number.parseInt(n, 10));
const BIN = join(ROOT, 'bin', 'payoutd.js');

if (!existsSync(join(ROOT, 'dist', 'cli', 'main.js'))) {
  console.error(`${join(ROOT, 'dist', 'cli', 'main.js')} is missing: run \`npm run build\` in ${ROOT} first`);
  process.exit(2);
}

/** The URL as it may be printed: never a password. */
function redact(url) {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparsable URL)';
  }
}

function withSearchPath(url, schema) {
  const u = new URL(url);
  u.searchParams.delete('options');
  return `${u.toString()}${u.search ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
}

async function pgQuery(url, sql, params = []) {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows;
  } finally {
    await client.end();
  }
}

async function waitFor(probe, what, timeoutMs, intervalMs = 50) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}

/** A payoutd process whose stdout lines are kept (the last 5000). */
class Proc {
  constructor(label, cliArgs, cwd) {
    this.label = label;
    this.lines = [];
    this.stderr = [];
    this.exitInfo = null;
    this.child = spawn(process.execPath, [BIN, ...cliArgs], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    this.exited = new Promise((res) =>
      this.child.once('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        res(this.exitInfo);
      }),
    );
    createInterface({ input: this.child.stdout }).on('line', (l) => {
      this.lines.push(l);
      if (this.lines.length > 5000) this.lines.shift();
    });
    createInterface({ input: this.child.stderr }).on('line', (l) => this.stderr.push(l));
  }

  waitForLine(re, timeoutMs) {
    return waitFor(
      () => {
        const hit = this.lines.find((l) => re.test(l));
        if (hit) return hit;
        if (this.exitInfo) throw new Error(`${this.label} exited (${JSON.stringify(this.exitInfo)}): ${this.stderr.slice(-3).join(' | ')}`);
        return null;
      },
      `${this.label}: ${re}`,
      timeoutMs,
      20,
    );
  }

  async stop() {
    if (this.exitInfo) return this.exitInfo;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 30_000);
    const info = await this.exited;
    clearTimeout(timer);
    return info;
  }
}

const pad = (n, w) => String(n).padStart(w, '0');

/** `n` valid PHP rows; no account ends in the sandbox's cancel (0000) or hold (9999) suffix. */
function batchCsv(prefix, n) {
  const header =
    'merchantReferenceId,deductionCurrency,payoutCurrency,payoutAmount,sender.firstName,sender.lastName,sender.country,sender.idType,sender.idValue,beneficiary.accountName,beneficiary.accountNumber,beneficiary.bankCode';
  const lines = [header];
  for (let i = 1; i <= n; i++) {
    const account = `00${pad(i, 6)}${pad(1000 + (i % 8000), 4)}`;
    lines.push(
      `${prefix}-${pad(i, 6)},USDT,PHP,${1000 + (i % 500)}.50,Maria,Santos,PH,PASSPORT,P${pad(i, 7)}A,Juan Dela Cruz,${account},BOPIPHMM`,
    );
  }
  return `${lines.join('\n')}\n`;
}

async function sandboxAdmin(url, path) {
  const res = await fetch(`${url}${path}`);
  const envelope = await res.json();
  if (envelope.code !== '0000') throw new Error(`sandbox ${path}: ${envelope.code} ${envelope.msg}`);
  return envelope.data;
}

/** Throws when the batch went wrong (rejected, or finished with rows still moving), so a broken build fails fast instead of timing out. */
async function assertBatchSound(url) {
  const bad = await pgQuery(
    url,
    `select b.file_name, b.state, b.reject_reason,
            (select count(*)::int from payouts p where p.batch_id = b.id and p.state not in ('PAID', 'CANCELLED')) as moving
       from batches b where b.state in ('REJECTED', 'DUPLICATE') or (b.state = 'COMPLETE' and exists
            (select 1 from payouts p where p.batch_id = b.id and p.state not in ('PAID', 'CANCELLED')))`,
  );
  if (bad.length > 0) throw new Error(`the batch went wrong: ${JSON.stringify(bad)}`);
}

/** One measurement: `n` instances, ROWS rows. */
async function runOnce(n, merchant) {
  const dir = mkdtempSync(join(tmpdir(), `payoutd-bench-ha-${n}-`));
  const schema = `payoutd_bench_${randomBytes(4).toString('hex')}`;
  const url = withSearchPath(PG_URL, schema);
  const procs = [];
  let sandbox = null;
  try {
    await pgQuery(PG_URL, `create schema ${schema}`);
    writeFileSync(join(dir, 'merchant.pem'), merchant.privateKeyPem, { mode: 0o600 });
    writeFileSync(join(dir, 'api-key'), `${merchant.apiKey}\n`, { mode: 0o600 });
    const sandboxConfig = {
      port: 0,
      seed: 7,
      duplicatePolicy: 'allow',
      merchants: [
        {
          merchantCode: MERCHANT,
          apiKey: merchant.apiKey,
          publicKey: merchant.publicKeyBase64,
          balances: { USDT: BALANCE, USDC: BALANCE },
        },
      ],
      settlement: { minDelayMs: 50, maxDelayMs: 200 },
      faults: { latencyMs: LATENCY_MS },
    };
    writeFileSync(join(dir, 'sandbox.json'), JSON.stringify(sandboxConfig), { mode: 0o600 });
    sandbox = new Proc('sandbox', ['sandbox', '--config', join(dir, 'sandbox.json')], dir);
    const sandboxUrl = /listening on (http:\/\/\S+)/.exec(await sandbox.waitForLine(/listening on http:\/\/\S+/, 30_000))[1];

    const inbox = join(dir, 'inbox');
    const outbox = join(dir, 'outbox');
    for (const d of [inbox, outbox, join(dir, 'staging')]) mkdirSync(d, { recursive: true });
    const configFor = (name) => {
      const file = join(dir, `${name}.yaml`);
      const config = {
        api: { baseUrl: sandboxUrl, merchantCode: MERCHANT, apiKeyFile: join(dir, 'api-key'), privateKeyFile: join(dir, 'merchant.pem') },
        paths: { inbox, outbox, stateDir: join(dir, `state-${name}`), create: true },
        database: { client: 'pg', url },
        instance: { id: name, leaseMs: 40_000 },
        inbox: { stableForMs: 200, rescanIntervalMs: 300 },
        submit: { concurrency: CONCURRENCY },
        poll: { tickMs: 100, firstPollDelayMs: 200, minIntervalMs: 200, maxIntervalMs: 1000 },
        batch: { balanceCheck: { enabled: false } },
        log: { level: 'info' },
      };
      // JSON is valid YAML.
      writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
      return file;
    };
    const names = Array.from({ length: n }, (_, i) => `i${i + 1}`);
    const configs = names.map(configFor);
    const migrate = new Proc('migrate', ['migrate', '--config', configs[0]], dir);
    const migrated = await migrate.exited;
    if (migrated.code !== 0) throw new Error(`payoutd migrate failed: ${migrate.stderr.join(' | ')}`);
    for (const [i, name] of names.entries()) procs.push(new Proc(name, ['run', '--config', configs[i]], dir));
    await Promise.all(procs.map((p) => p.waitForLine(/"msg":"payoutd running"/, 30_000)));

    // One file, written beside the inbox and renamed in (whole-second mtime: see docs/high-availability.md).
    const staged = join(dir, 'staging', 'bench.csv');
    writeFileSync(staged, batchCsv(`HA${n}`, ROWS));
    const secs = Math.floor(Date.now() / 1000);
    utimesSync(staged, secs, secs);
    const dropped = performance.now();
    renameSync(staged, join(inbox, 'bench.csv'));

    // Creates as the sandbox counts them: first and last seen, polled every 10 ms.
    let first = null;
    let checked = 0;
    const last = await waitFor(
      async () => {
        const stats = await sandboxAdmin(sandboxUrl, '/__sandbox/stats');
        const t = performance.now();
        if (t - checked > 1000) {
          checked = t;
          await assertBatchSound(url);
        }
        if (first === null && stats.creates > 0) first = { t, creates: stats.creates };
        return stats.creates >= ROWS ? { t, creates: stats.creates } : null;
      },
      `${ROWS} creates`,
      600_000,
      10,
    );
    await waitFor(
      async () => {
        await assertBatchSound(url);
        return (await pgQuery(url, `select count(*)::int as n from batches where state = 'COMPLETE'`))[0].n === 1;
      },
      'the batch to complete',
      300_000,
      100,
    );
    const completed = performance.now();

    const ledger = await sandboxAdmin(sandboxUrl, '/__sandbox/ledger');
    const entries = ledger.payouts;
    const perRef = new Map();
    for (const e of entries) perRef.set(e.merchantReferenceId, (perRef.get(e.merchantReferenceId) ?? 0) + 1);
    const doubles = [...perRef.values()].filter((c) => c > 1).length;
    const byInstance = await pgQuery(
      url,
      `select h.detail, count(*)::int as n from payout_history h where h.event = 'intent' group by h.detail order by h.detail`,
    );
    const errors = procs.flatMap((p) =>
      p.lines.filter((l) => /"level":"(error|fatal)"/.test(l)).map((l) => `${p.label}: ${l.slice(0, 200)}`),
    );
    // Creates between the first and the last seen: the window's rate, unaffected by reading the file.
    const windowS = (last.t - first.t) / 1000;
    return {
      instances: n,
      rows: ROWS,
      payouts: entries.length,
      distinctReferences: perRef.size,
      doubles,
      createsPerSecond: (last.creates - first.creates) / windowS,
      createWindowS: windowS,
      dropToCompleteS: (completed - dropped) / 1000,
      intentsByInstance: Object.fromEntries(byInstance.map((r) => [r.detail.replace(/^create about to be sent by /, ''), r.n])),
      errors: errors.slice(0, 5),
    };
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
    await sandbox?.stop();
    await pgQuery(PG_URL, `drop schema if exists ${schema} cascade`).catch((err) =>
      console.error(`could not drop schema ${schema}: ${err.message}`),
    );
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main() {
  const { generateMerchantKeyPair } = await import(pathToFileURL(join(ROOT, 'dist', 'signing', 'index.js')).href);
  const pair = generateMerchantKeyPair(2048);
  const merchant = { apiKey: randomBytes(18).toString('hex'), privateKeyPem: pair.privateKeyPem, publicKeyBase64: pair.publicKeyBase64 };
  console.log(
    `payoutd instances bench: ${ROWS} rows per run, sandbox latency ${LATENCY_MS} ms, submit.concurrency ${CONCURRENCY} per instance, ` +
      `PostgreSQL ${redact(PG_URL)}, ${cpus().length} CPUs, build ${ROOT}`,
  );
  const results = [];
  for (const n of COUNTS) {
    process.stdout.write(`  ${n} instance(s)… `);
    const r = await runOnce(n, merchant);
    results.push(r);
    console.log(`${r.createsPerSecond.toFixed(1)} creates/s`);
  }
  const base = results[0]?.createsPerSecond ?? 1;
  const ceiling = (n) => (n * CONCURRENCY * 1000) / LATENCY_MS;
  const head = [
    'instances',
    'creates/s',
    'x vs first',
    'latency bound',
    'create window s',
    'drop→result s',
    'payouts',
    'doubles',
    'creates by instance',
  ];
  const rows = results.map((r) => [
    String(r.instances),
    r.createsPerSecond.toFixed(1),
    (r.createsPerSecond / base).toFixed(2),
    ceiling(r.instances).toFixed(0),
    r.createWindowS.toFixed(1),
    r.dropToCompleteS.toFixed(1),
    `${r.payouts}/${r.rows}`,
    String(r.doubles),
    Object.entries(r.intentsByInstance)
      .map(([k, v]) => `${k}:${v}`)
      .join(' '),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  console.log('');
  console.log(line(head));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const r of rows) console.log(line(r));
  console.log('');
  console.log('latency bound = instances × concurrency × 1000 / latency: what the sandbox latency alone would allow.');
  let failed = false;
  for (const r of results) {
    if (r.doubles > 0 || r.payouts !== r.rows) {
      failed = true;
      console.error(`${r.instances} instance(s): ${r.payouts} payouts for ${r.rows} rows, ${r.doubles} references paid twice`);
    }
    for (const e of r.errors) {
      failed = true;
      console.error(`${r.instances} instance(s): error logged: ${e}`);
    }
  }
  if (args.json)
    writeFileSync(args.json, `${JSON.stringify({ rows: ROWS, latencyMs: LATENCY_MS, concurrency: CONCURRENCY, results }, null, 2)}\n`);
  if (failed) process.exitCode = 1;
}

main().catch((err) => {
  console.error(`bench failed: ${err.stack ?? err}`);
  process.exitCode = 1;
});
