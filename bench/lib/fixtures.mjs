// What every scenario needs around the daemon: a merchant key pair and API
// key on disk, the sandbox config (its own process), the daemon config
// (YAML; JSON is valid YAML), and deterministic valid payout requests.
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dist } from './common.mjs';

export const MERCHANT = 'BENCH-MERCHANT';
/** Ample for any run: balances never hold a batch. */
export const BALANCE = '1000000000000';

/** Key pair + API key under `dir` (private key mode 0600, as payoutd requires). */
export async function writeMerchantFiles(root, dir) {
  const { generateMerchantKeyPair } = await dist(root, 'signing/index.js');
  mkdirSync(dir, { recursive: true });
  const pair = generateMerchantKeyPair(2048);
  const apiKey = randomBytes(18).toString('hex');
  const privateKeyFile = join(dir, 'merchant.pem');
  const apiKeyFile = join(dir, 'api-key');
  writeFileSync(privateKeyFile, pair.privateKeyPem, { mode: 0o600 });
  writeFileSync(apiKeyFile, `${apiKey}\n`, { mode: 0o600 });
  return { apiKey, privateKeyPem: pair.privateKeyPem, publicKeyBase64: pair.publicKeyBase64, privateKeyFile, apiKeyFile };
}

/** sandbox.json for `payoutd sandbox --config` (money as decimal text). */
export function writeSandboxConfig(dir, merchant, { latencyMs = 0, settlement = {}, seed = 1, stateFile } = {}) {
  const file = join(dir, 'sandbox.json');
  const config = {
    port: 0,
    seed,
    merchants: [
      { merchantCode: MERCHANT, apiKey: merchant.apiKey, publicKey: merchant.publicKeyBase64, balances: { USDT: BALANCE, USDC: BALANCE } },
    ],
    settlement: { minDelayMs: 2000, maxDelayMs: 10000, ...settlement },
    faults: { latencyMs },
    ...(stateFile ? { stateFile } : {}),
  };
  writeFileSync(file, JSON.stringify(config, null, 2), { mode: 0o600 });
  return file;
}

/** The daemon's folders under `dir` (made) and its SQLite file. */
export function daemonPaths(dir) {
  const paths = { inbox: join(dir, 'var', 'inbox'), outbox: join(dir, 'var', 'outbox'), stateDir: join(dir, 'var', 'state') };
  for (const p of Object.values(paths)) mkdirSync(p, { recursive: true });
  return { ...paths, databaseFile: join(paths.stateDir, 'payoutd.sqlite') };
}

/**
 * The ingest scenarios' store: `dir` made afresh (a re-run, as with --profile, starts clean) with the
 * daemon's folders, the build's configuration for them (`batch` merged into its batch section) and its
 * SQLite database, migrated and opened in this process as the daemon opens it (default settings).
 */
export async function openIngestStore(root, dir, batch = {}) {
  rmSync(dir, { recursive: true, force: true });
  const { loadConfig } = await dist(root, 'config/index.js');
  const { openStore } = await dist(root, 'daemon/runtime.js');
  const { migrateToLatest } = await dist(root, 'store/db.js');
  const { inbox, outbox, stateDir } = daemonPaths(dir);
  const config = loadConfig({ env: {}, cwd: dir }, { paths: { inbox, outbox, stateDir }, batch });
  const db = openStore(config);
  await migrateToLatest(db);
  return { config, db };
}

/** payoutd.yaml against `baseUrl`; `over` is merged per section. Returns the config path and the folders. */
export function writeDaemonConfig(dir, merchant, baseUrl, over = {}) {
  const { databaseFile, ...paths } = daemonPaths(dir);
  const config = {
    ...over,
    api: { baseUrl, merchantCode: MERCHANT, apiKeyFile: merchant.apiKeyFile, privateKeyFile: merchant.privateKeyFile, ...over.api },
    paths,
    log: { level: 'info', ...over.log },
  };
  const file = join(dir, 'payoutd.yaml');
  writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  return { file, ...paths, databaseFile };
}

const FIRST = ['Maria', 'Juan', 'Ana', 'Jose', 'Budi', 'Siti', 'John', 'Emily'];
const LAST = ['Santos', 'Reyes', 'Cruz', 'Santoso', 'Rahayu', 'Smith', 'Johnson', 'Silva'];

/**
 * The i-th valid PHP payout request, as the intake stores it (amount as
 * decimal text). `hold` makes the account end in the sandbox's hold suffix
 * (stays PENDING until settled by hand); otherwise it never ends in 0000/9999.
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

/** Create-response fields the sandbox would give the i-th request (any plain decimals do: nothing sums them but reports). */
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
 * A sandbox ledger file (its stateFile) holding these payouts as PENDING,
 * so a sandbox starts with 10^5 payouts in a second instead of 10^5 creates.
 * `items`: [{ request, answer }].
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

/**
 * The stored forms of a payoutRequest(), written directly. From migration
 * 0008 a row keeps the request's values as a JSON array (`request_values`);
 * older builds kept its canonical JSON (`request_json`: keys sorted, no
 * whitespace). The fields are plain ASCII strings, so JSON.stringify gives
 * the build's own bytes (checked once per run by storedRequestForm).
 */
export function requestValues(r) {
  const b = r.beneficiary;
  const s = r.sender;
  return JSON.stringify([
    r.merchantReferenceId,
    r.deductionCurrency,
    r.payoutCurrency,
    r.payoutAmount,
    s.firstName,
    s.lastName,
    s.country,
    s.idType,
    s.idValue,
    b.accountName,
    b.accountNumber,
    b.bankCode,
  ]);
}

export function requestJson(r) {
  const b = r.beneficiary;
  const s = r.sender;
  return JSON.stringify({
    beneficiary: { accountName: b.accountName, accountNumber: b.accountNumber, bankCode: b.bankCode },
    deductionCurrency: r.deductionCurrency,
    merchantReferenceId: r.merchantReferenceId,
    payoutAmount: r.payoutAmount,
    payoutCurrency: r.payoutCurrency,
    sender: { country: s.country, firstName: s.firstName, idType: s.idType, idValue: s.idValue, lastName: s.lastName },
  });
}

/**
 * How the build at `root` keeps a request: its column and the text of a
 * payoutRequest() in it. Throws unless that text is the build's own.
 */
export async function storedRequestForm(root) {
  const values = await dist(root, 'domain/request-values.js').catch(() => null);
  const r = payoutRequest('CHECK', 12345);
  if (values) {
    if (requestValues(r) !== values.encodeRequest(r)) throw new Error('bench requestValues() no longer matches encodeRequest');
    return { column: 'request_values', text: requestValues };
  }
  const { canonicalStringify } = await dist(root, 'json/index.js');
  if (requestJson(r) !== canonicalStringify(r)) throw new Error('bench requestJson() no longer matches canonicalStringify');
  return { column: 'request_json', text: requestJson };
}
