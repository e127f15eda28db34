// What every scenario sets up around the daemon: a merchant key pair and API
// key on disk, the payout sandbox in its own process (`payoutd sandbox`), the
// daemon's config file, batch files, and payout requests and ledgers made
// directly for the scenarios that start from a state already reached.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PayoutdProcess, ROOT, dist } from './processes.mjs';

export const MERCHANT = 'BENCH-MERCHANT';
/** Ample for any run: a balance never holds a batch. */
const BALANCE = '1000000000000';
export const CREATE_PATH = '/apis/v1/fiat-payout/create';
export const QUERY_PATH = '/apis/v1/fiat-payout/query';

/** Key pair and API key under `dir` (the private key mode 0600, as payoutd requires). */
export async function writeMerchantFiles(dir) {
  const { generateMerchantKeyPair } = await dist('signing');
  mkdirSync(dir, { recursive: true });
  const pair = generateMerchantKeyPair(2048);
  const merchant = {
    apiKey: randomBytes(18).toString('hex'),
    publicKeyBase64: pair.publicKeyBase64,
    privateKeyFile: join(dir, 'merchant.pem'),
    apiKeyFile: join(dir, 'api-key'),
  };
  writeFileSync(merchant.privateKeyFile, pair.privateKeyPem, { mode: 0o600 });
  writeFileSync(merchant.apiKeyFile, `${merchant.apiKey}\n`, { mode: 0o600 });
  return merchant;
}

/** The payout sandbox (docs/sandbox.md) in its own process, with its admin endpoints. */
export class Sandbox {
  /** `latencyMs` is added to every call; `stateFile` starts it from a ledger (writeLedgerFile). */
  static async start(dir, merchant, { latencyMs = 0, settlement = {}, stateFile } = {}) {
    const config = join(dir, 'sandbox.json');
    const balances = { USDT: BALANCE, USDC: BALANCE };
    writeFileSync(
      config,
      JSON.stringify({
        port: 0,
        seed: 1,
        merchants: [{ merchantCode: MERCHANT, apiKey: merchant.apiKey, publicKey: merchant.publicKeyBase64, balances }],
        settlement: { minDelayMs: 2000, maxDelayMs: 10000, ...settlement },
        faults: { latencyMs },
        ...(stateFile ? { stateFile } : {}),
      }),
      { mode: 0o600 },
    );
    const proc = new PayoutdProcess(['sandbox', '--config', config], dir);
    const hit = await proc.waitForLine(/listening on http:\/\/\S+/, 30_000);
    return new Sandbox(proc, /listening on (http:\/\/\S+)/.exec(hit.line)[1]);
  }

  constructor(proc, url) {
    this.proc = proc;
    this.url = url;
  }

  async admin(path) {
    const envelope = await (await fetch(`${this.url}${path}`)).json();
    if (envelope.code !== '0000') throw new Error(`sandbox ${path}: ${envelope.code} ${envelope.msg}`);
    return envelope.data;
  }

  stats() {
    return this.admin('/__sandbox/stats');
  }

  stop() {
    return this.proc.stop();
  }
}

/** The daemon's folders under `dir`, made. */
export function daemonPaths(dir) {
  const paths = { inbox: join(dir, 'var', 'inbox'), outbox: join(dir, 'var', 'outbox'), stateDir: join(dir, 'var', 'state') };
  for (const p of Object.values(paths)) mkdirSync(p, { recursive: true });
  return paths;
}

/** payoutd.yaml (JSON is YAML) against `baseUrl`, `over` merged per section; returns its path and the folders. */
export function writeDaemonConfig(dir, merchant, baseUrl, over = {}) {
  const paths = daemonPaths(dir);
  const config = {
    ...over,
    api: { baseUrl, merchantCode: MERCHANT, apiKeyFile: merchant.apiKeyFile, privateKeyFile: merchant.privateKeyFile, ...over.api },
    // A file is taken soon after it lands: the wait for a finished upload is not what is measured.
    inbox: { stableForMs: 200, rescanIntervalMs: 1000, ...over.inbox },
    paths,
    log: { level: 'info' },
  };
  const file = join(dir, 'payoutd.yaml');
  writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  return { file, ...paths, databaseFile: join(paths.stateDir, 'payoutd.sqlite') };
}

/** A CSV batch of `rows` valid rows from samples/generate-batch.mjs. */
export function generateBatch(file, rows, prefix = 'GEN') {
  const args = [join(ROOT, 'samples', 'generate-batch.mjs'), '--rows', String(rows), '--prefix', prefix, '--out', file];
  const gen = spawnSync(process.execPath, args, { stdio: 'inherit' });
  if (gen.status !== 0) throw new Error('samples/generate-batch.mjs failed');
}

/** Puts `file` into the inbox as an upload finished elsewhere: linked beside the inbox, then renamed in. */
export function dropInInbox(file, inbox, name) {
  const staged = join(inbox, '..', `staged-${name}`);
  linkSync(file, staged);
  renameSync(staged, join(inbox, name));
  return join(inbox, name);
}

/** The outbox file whose name ends with `suffix` (written whole, by rename), or undefined. */
export function outboxFile(outbox, suffix) {
  return readdirSync(outbox).find((n) => n.endsWith(suffix) && !n.startsWith('.'));
}

const FIRST = ['Maria', 'Juan', 'Ana', 'Jose', 'Budi', 'Siti', 'John', 'Emily'];
const LAST = ['Santos', 'Reyes', 'Cruz', 'Santoso', 'Rahayu', 'Smith', 'Johnson', 'Silva'];

/**
 * The i-th valid PHP payout request (amounts as decimal text). `hold` makes the
 * account end in the sandbox's hold suffix (PENDING until settled by hand);
 * otherwise it never ends in 0000 or 9999.
 */
export function payoutRequest(prefix, i, { hold = false } = {}) {
  const core = String(1_000_000 + (i % 8_000_000)).padStart(8, '0');
  const accountNumber = hold ? `${core}9999` : `${core}${String(1000 + (i % 8000)).padStart(4, '0')}`;
  return {
    merchantReferenceId: `${prefix}-${String(i).padStart(9, '0')}`,
    deductionCurrency: i % 2 === 0 ? 'USDT' : 'USDC',
    payoutCurrency: 'PHP',
    payoutAmount: `${100 + (i % 4900)}.${String(i % 100).padStart(2, '0')}`,
    sender: { firstName: FIRST[i % FIRST.length], lastName: LAST[i % LAST.length], country: 'PH', idType: 'PASSPORT', idValue: `P${core}` },
    beneficiary: { accountName: `${FIRST[(i + 3) % FIRST.length]} ${LAST[(i + 5) % LAST.length]}`, accountNumber, bankCode: 'BOPIPHMM' },
  };
}

/** What the service answered to the i-th create (plain decimals: nothing sums them but reports). */
export function createdAnswer(i) {
  return {
    payoutId: `PBENCH${String(i).padStart(10, '0')}`,
    rate: '56.25',
    deductionAmount: `${2 + (i % 80)}.5`,
    totalFee: '0.5',
    feeCurrency: 'USDT',
  };
}

/**
 * A sandbox ledger file (its stateFile) holding these payouts as PENDING, so
 * a sandbox starts with 100,000 payouts in a second instead of 100,000
 * creates. `items`: [{ request, answer }].
 */
export function writeLedgerFile(dir, items, createdAt) {
  const createTime = new Date(createdAt).toISOString();
  const payouts = items.map(({ request, answer }) => ({
    entry: {
      payoutId: answer.payoutId,
      merchantReferenceId: request.merchantReferenceId,
      status: 'PENDING',
      payoutCurrency: request.payoutCurrency,
      payoutAmount: request.payoutAmount,
      deductionCurrency: request.deductionCurrency,
      deductionAmount: answer.deductionAmount,
      rate: answer.rate,
      totalFee: answer.totalFee,
      feeCurrency: answer.feeCurrency,
      createTime,
      completeTime: null,
      failureReason: null,
      merchantCode: MERCHANT,
      accountNumber: request.beneficiary.accountNumber,
    },
    created: { merchantReferenceId: request.merchantReferenceId, ...answer },
  }));
  const file = join(dir, 'sandbox-ledger.json');
  writeFileSync(file, JSON.stringify({ balances: { [MERCHANT]: { USDT: BALANCE, USDC: BALANCE } }, payouts }));
  return file;
}
