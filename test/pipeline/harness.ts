/**
 * The payment core under test, assembled for real: a SQLite file in a temp
 * dir (migrated), the sandbox on 127.0.0.1, a PayoutApiClient with fast
 * retries, and the intake, submitter and poller built directly so each test
 * drives every pass itself (runOnce) on a ManualClock. Also CSV builders,
 * store shortcuts and log capture (every line kept, to prove none leaks an
 * account number or a secret).
 *
 * The client and the sandbox run on the system clock (signatures, tokens);
 * the daemon's decisions (backoff, grace, holds, polls) run on the
 * ManualClock, so moving time never breaks authentication. Settlement in the
 * sandbox runs on real timers: tests either hold payouts (account ending in
 * '9999') and settle them by hand, or make settlement immediate and wait for
 * the sandbox to report nothing pending.
 *
 * With `proxy`, the client reaches the sandbox through a TCP proxy a test
 * can switch off (the service unreachable); with `breaker`, the client has
 * a circuit breaker on the ManualClock (deterministic jitter).
 */
import { createHash, createPrivateKey, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  PayoutApiClient,
  ServiceBreaker,
  type ApiCallRecord,
  type BreakerOptions,
  type PayoutApiClientOptions,
} from '../../src/api/index.js';
import { ManualClock } from '../../src/domain/clock.js';
import type { PayoutRequest, PayoutService } from '../../src/domain/payout.js';
import { encodeRequest } from '../../src/domain/request-values.js';
import type { RowState } from '../../src/domain/lifecycle.js';
import { BatchIntake } from '../../src/ingest/index.js';
import { BatchHolds, type BalanceCheck } from '../../src/holds/index.js';
import { DEFAULT_BATCH_FORMAT } from '../../src/ingest/csv/index.js';
import { DEFAULT_VALIDATION_RULES } from '../../src/ingest/rules/index.js';
import type { ClaimedFile } from '../../src/ingest/inbox/index.js';
import { createLogger, type Logger } from '../../src/log/index.js';
import { SettlementPoller, type PollerOptions } from '../../src/poll/index.js';
import { startSandbox, type SandboxOptions, type SandboxServer } from '../../src/sandbox/index.js';
import { generateMerchantKeyPair } from '../../src/signing/index.js';
import { acceptBatchRows, type InvalidRowsPolicy } from '../../src/store/acceptance.js';
import { getBatch, insertBatch, receivedBatch, type BatchRecord } from '../../src/store/batches.js';
import { closeDatabase, type Database } from '../../src/store/db.js';
import { fromColumns, rowsByReference, type PayoutRow } from '../../src/store/payouts.js';
import { insertRows } from '../../src/store/insert-rows.js';
import { historyOf } from '../../src/store/moves.js';
import { PayoutSubmitter, type SubmitterOptions } from '../../src/submit/index.js';
import { FIELD_PATHS } from '../../src/ingest/rules/index.js';
import { payoutRequest, validCsvRow } from '../support/rows.js';
import { openTestDatabase } from '../support/database.js';
import { TcpProxy } from '../chaos/proxy.js';

export const MERCHANT = 'M001';
/** Distinctive, so a leak into a log line is found by a plain substring search. */
export const API_KEY = 'ak-pipeline-Zq81Lk5Vw3';
export const CREATE_PATH = '/apis/v1/fiat-payout/create';
export const QUERY_PATH = '/apis/v1/fiat-payout/query';
export const START_MS = Date.UTC(2026, 0, 5, 9);

export const HEADER_FIELDS = FIELD_PATHS;
export const HEADER = HEADER_FIELDS.join(',');

/** A valid PHP row (100.50 PHP, account 1234567890); overrides by field path. */
export const csvRow = validCsvRow;

export function csvFile(rows: string[]): string {
  return `${[HEADER, ...rows].join('\n')}\n`;
}

export { payoutRequest };

let keyCache: { privateKeyPem: string; publicKeyBase64: string } | undefined;

/** One merchant key pair per test file (RSA generation is the slow part of setup). */
function merchantKeys(): { privateKeyPem: string; publicKeyBase64: string } {
  keyCache ??= generateMerchantKeyPair(2048);
  return keyCache;
}

export interface EffectCall {
  kind: 'ack' | 'file-rejection' | 'result';
  batchId: string;
  reason?: string;
  /** The batch's stored state when the file was written (an ack: VALIDATING, so nothing of it could be sent yet). */
  storedState?: string;
}

export interface PipelineOptions {
  /** Start of the ManualClock (default START_MS); Date.now() when a test mixes in the system clock. */
  startMs?: number;
  /** The submitter's steady clock (default: the ManualClock's reading, so moving it is time passing, not a jump). */
  monotonic?: () => number;
  sandbox?: Partial<SandboxOptions>;
  /** USDT balance of the merchant (decimal text). */
  balance?: string;
  client?: Partial<Omit<PayoutApiClientOptions, 'retry'>> & { retry?: Partial<PayoutApiClientOptions['retry']> };
  submitter?: Partial<SubmitterOptions>;
  poller?: Partial<PollerOptions>;
  onInvalidRows?: InvalidRowsPolicy;
  /** Called after each HTTP exchange of the client (besides recording it in `calls`). */
  onApiCall?: (call: ApiCallRecord) => void;
  /** The balance check of the holds (at acceptance, and when a balance hold falls due); none by default. */
  checkBalance?: BalanceCheck['check'];
  /** The client talks to the sandbox through a TcpProxy (`Pipeline.proxy`) a test can switch off and on. */
  proxy?: boolean;
  /** A circuit breaker for the client, on the ManualClock with jitter fixed at 0.5 (`Pipeline.breaker`). */
  breaker?: Pick<BreakerOptions, 'failureThreshold' | 'probe'>;
  /** Opens the migrated state database (default: a SQLite file in the pipeline's folder); closed with the pipeline. */
  database?: (dir: string) => Promise<Database>;
  /** The outbox name of a batch's retry file, as the daemon gives the intake (none: retry files off). */
  retryFileOf?: (batch: { id: string; fileName: string }) => string;
}

export interface Pipeline {
  dir: string;
  db: Database;
  sandbox: SandboxServer;
  client: PayoutApiClient;
  /** The options `client` was made with: another instance's client is `new PayoutApiClient(clientOptions)`. */
  clientOptions: PayoutApiClientOptions;
  /** With `proxy`: between the client and the sandbox. */
  proxy: TcpProxy | null;
  /** With `breaker`: the client's. */
  breaker: ServiceBreaker | null;
  clock: ManualClock;
  /** The submitter's steady clock: a submitter a test builds on this pipeline's clock takes it as `monotonic`. */
  monotonic: () => number;
  logger: Logger;
  /** Every log line written, as text. */
  logLines: string[];
  /** Every HTTP exchange of the client. */
  calls: ApiCallRecord[];
  /** What the intake asked the outbox to write. */
  effects: EffectCall[];
  intake: BatchIntake;
  holds: BatchHolds;
  submitter: PayoutSubmitter;
  poller: SettlementPoller;
  submitterOptions: SubmitterOptions;
  pollerOptions: PollerOptions;
  signal: AbortSignal;
  /** Writes a file under claimed/ and returns its ClaimedFile record. */
  claim(name: string, content: string): Promise<ClaimedFile>;
  /** claim + intake.receive. */
  receive(name: string, content: string): Promise<BatchRecord>;
  /** An ACTIVE batch with these requests as READY rows, put straight into the store (bypassing CSV validation). */
  insertReadyBatch(requests: PayoutRequest[]): Promise<string>;
  /**
   * A batch still being read (VALIDATING), its rows stored as the reader stores them (READY, holding their
   * references, or VALIDATED when a reference is held already), not accepted.
   */
  insertReadingBatch(requests: PayoutRequest[]): Promise<string>;
  submit(): Promise<number>;
  poll(): Promise<number>;
  rows(batchId: string): Promise<PayoutRow[]>;
  row(ref: string): Promise<PayoutRow>;
  states(batchId: string): Promise<RowState[]>;
  batch(id: string): Promise<BatchRecord>;
  events(ref: string): Promise<string[]>;
  /** Sandbox payouts holding this reference. */
  ledgerCount(ref: string): number;
  createRequests(): number;
  queryRequests(): number;
  close(): Promise<void>;
}

const open: Pipeline[] = [];

/** Closes every pipeline the current test started (call from afterEach). */
export async function closePipelines(): Promise<void> {
  await Promise.all(open.splice(0).map((p) => p.close()));
}

export async function startPipeline(o: PipelineOptions = {}): Promise<Pipeline> {
  const keys = merchantKeys();
  const dir = await mkdtemp(join(tmpdir(), 'payoutd-pipeline-'));
  const clock = new ManualClock(o.startMs ?? START_MS);
  const logLines: string[] = [];
  const logger = createLogger('debug', { write: (line: string) => void logLines.push(line) });

  const db = await (o.database ?? openTestDatabase)(dir);

  const sandbox = await startSandbox({
    seed: 7,
    merchants: [{ merchantCode: MERCHANT, apiKey: API_KEY, publicKey: keys.publicKeyBase64, balances: { USDT: o.balance ?? '1000000' } }],
    // Far away by default: payouts stay PENDING unless a test settles them.
    settlement: { minDelayMs: 600_000, maxDelayMs: 600_000 },
    ...o.sandbox,
  });

  const proxy = o.proxy === true ? await TcpProxy.start(sandbox.url) : null;
  const breaker = o.breaker ? new ServiceBreaker({ ...o.breaker, clock, random: () => 0.5 }) : null;
  const calls: ApiCallRecord[] = [];
  const { retry, ...clientRest } = o.client ?? {};
  const clientOptions: PayoutApiClientOptions = {
    baseUrl: proxy?.url ?? sandbox.url,
    breaker: breaker ?? undefined,
    merchantCode: MERCHANT,
    apiKey: API_KEY,
    privateKey: createPrivateKey(keys.privateKeyPem),
    auth: { mode: 'standard', grantType: 'client_credentials', refreshBeforeExpirySeconds: 60 },
    sortKeys: true,
    hmacKeyEncoding: 'utf8',
    timeoutMs: 3000,
    queryMaxIds: 100,
    random: () => 0.5,
    logger,
    onCall: (c) => {
      calls.push(c);
      o.onApiCall?.(c);
    },
    ...clientRest,
    retry: { maxAttempts: 3, baseMs: 2, maxMs: 10, ...retry },
  };
  const client = new PayoutApiClient(clientOptions);

  const submitterOptions: SubmitterOptions = {
    concurrency: 4,
    retry: { baseMs: 1000, maxMs: 60_000 },
    insufficientBalanceHoldMs: 60_000,
    notFoundGraceMs: 0,
    firstPollDelayMs: 2000,
    reconcileBatchSize: 100,
    claimant: { instanceId: 'test', leaseMs: 120_000 },
    ...o.submitter,
  };
  const pollerOptions: PollerOptions = {
    queryMaxIds: 100,
    concurrency: 4,
    maxCallsPerPass: 50,
    minIntervalMs: 2000,
    maxIntervalMs: 60_000,
    staleAfterMs: 3_600_000,
    deferWhileSendingMs: 30_000,
    leaseMs: 120_000,
    ...o.poller,
  };
  const holds = new BatchHolds(
    { db, clock, logger, balance: o.checkBalance ? { check: o.checkBalance } : undefined },
    {
      balanceRecheckMs: 60_000,
      watchTakenForMs: 86_400_000,
      patience: { stableForMs: 5000, maxStableForMs: 600_000, unterminatedStableForMs: 600_000 },
    },
  );
  const monotonic = o.monotonic ?? (() => clock.now());
  const submitter = new PayoutSubmitter({ db, service: client, clock, monotonic, logger, holds, random: () => 0.5 }, submitterOptions);
  const poller = new SettlementPoller({ db, service: client, clock, logger }, pollerOptions);

  const effects: EffectCall[] = [];
  const writeAck = async (b: BatchRecord, reason?: string): Promise<string> => {
    effects.push({ kind: 'ack', batchId: b.id, reason, storedState: (await getBatch(db, b.id))?.state });
    return '';
  };
  const intake = new BatchIntake(
    {
      db,
      clock,
      logger,
      effects: {
        writeAck,
        // The gates read the money themselves; the ack is recorded as the batch is when it is written.
        draftAck: async () => ({ ready: null, write: (b, reason) => writeAck(b, reason), discard: async () => undefined }),
        writeFileRejection: (b, reason) => {
          effects.push({ kind: 'file-rejection', batchId: b.id, reason });
          return Promise.resolve('');
        },
        writeResult: (b) => {
          effects.push({ kind: 'result', batchId: b.id });
          return Promise.resolve(undefined);
        },
      },
      holds,
    },
    {
      format: DEFAULT_BATCH_FORMAT,
      rules: DEFAULT_VALIDATION_RULES,
      onInvalidRows: o.onInvalidRows ?? 'reject-file',
      rejectedDir: join(dir, 'rejected'),
      instanceId: 'test',
      leaseMs: 120_000,
      retryFileOf: o.retryFileOf,
    },
  );

  const stop = new AbortController();
  const claimedDir = join(dir, 'claimed');

  const claim = async (name: string, content: string): Promise<ClaimedFile> => {
    await mkdir(claimedDir, { recursive: true });
    const claimId = randomBytes(6).toString('hex');
    const storedPath = join(claimedDir, `${claimId}__${name}`);
    await writeFile(storedPath, content);
    const st = await stat(storedPath);
    return {
      claimId,
      originalName: name,
      storedPath,
      size: st.size,
      mtimeMs: st.mtimeMs,
      sha256: createHash('sha256').update(content).digest('hex'),
      doneMarker: false,
    };
  };

  const rowOf = async (ref: string): Promise<PayoutRow> => {
    const rows = await rowsByReference(db, ref);
    if (rows.length !== 1) throw new Error(`expected one row for ${ref}, found ${rows.length}`);
    return rows[0] as PayoutRow;
  };

  /** A batch being read, its rows stored in `rowState`, straight into the store (bypassing CSV validation). */
  async function storeBatch(requests: PayoutRequest[], rowState: 'READY' | 'VALIDATED'): Promise<string> {
    const now = clock.now();
    const id = `BTEST-${randomBytes(4).toString('hex')}`;
    const received = receivedBatch(
      {
        id,
        fileName: `${id}.csv`,
        storedPath: join(claimedDir, `${id}.csv`),
        controlPath: null,
        doneMarker: false,
        sha256: randomBytes(32).toString('hex'),
        size: 1,
        mtimeMs: now,
      },
      now,
    );
    await insertBatch(db, { ...received, state: 'VALIDATING', rowCount: requests.length, validCount: requests.length, delimiter: ',' });
    await insertRows(
      db,
      requests.map((r, i) => ({
        batchId: id,
        line: i + 2,
        merchantReferenceId: r.merchantReferenceId,
        state: rowState,
        requestValues: encodeRequest(r),
        payoutCurrency: r.payoutCurrency,
        payoutAmount: r.payoutAmount,
        deductionCurrency: r.deductionCurrency,
        reasonCode: null,
        reason: null,
      })),
      now,
    );
    return id;
  }

  const pipeline: Pipeline = {
    dir,
    db,
    sandbox,
    client,
    clientOptions,
    proxy,
    breaker,
    clock,
    monotonic,
    logger,
    logLines,
    calls,
    effects,
    intake,
    holds,
    submitter,
    poller,
    submitterOptions,
    pollerOptions,
    signal: stop.signal,
    claim,
    receive: async (name, content) => intake.receive(await claim(name, content)),
    async insertReadyBatch(requests) {
      const id = await storeBatch(requests, 'VALIDATED');
      const verdict = await acceptBatchRows(db, id, 'skip-rows', clock.now());
      if (!verdict.accepted) throw new Error(`test batch not accepted: ${verdict.rejectReason}`);
      await db('batches').where({ id }).update({ state: 'ACTIVE', accepted_at: clock.now() });
      return id;
    },
    insertReadingBatch: (requests) => storeBatch(requests, 'READY'),
    submit: () => submitter.runOnce(stop.signal),
    poll: () => poller.runOnce(stop.signal),
    async rows(batchId) {
      const rows = (await db('payouts').where({ batch_id: batchId }).orderBy('line')) as Record<string, unknown>[];
      return rows.map(fromColumns);
    },
    row: rowOf,
    async states(batchId) {
      return (await pipeline.rows(batchId)).map((r) => r.state);
    },
    async batch(id) {
      const b = await getBatch(db, id);
      if (!b) throw new Error(`no batch ${id}`);
      return b;
    },
    async events(ref) {
      return (await historyOf(db, (await rowOf(ref)).id)).map((h) => h.event);
    },
    ledgerCount: (ref) => sandbox.ledger().filter((e) => e.merchantReferenceId === ref).length,
    createRequests: () => sandbox.stats().requests[CREATE_PATH] ?? 0,
    queryRequests: () => sandbox.stats().requests[QUERY_PATH] ?? 0,
    async close() {
      stop.abort(new Error('test over'));
      await proxy?.close();
      await sandbox.close();
      await closeDatabase(db);
      await rm(dir, { recursive: true, force: true });
    },
  };
  open.push(pipeline);
  return pipeline;
}

/** Polls a condition every few ms (for the sandbox's real-timer settlement); fails after the deadline. */
export async function waitFor(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** The log lines that contain `text` (for leak checks). */
export function linesContaining(lines: readonly string[], text: string): string[] {
  return lines.filter((l) => l.includes(text));
}

/** A gate a wrapped call waits at: `reached` once a call got there, `open` lets it through. */
export function gate(): { reached: () => boolean; at: () => Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  let reached = false;
  return {
    reached: () => reached,
    at: async () => {
      reached = true;
      await opened;
    },
    open,
  };
}

/** A service that is `client` but for the calls given: to hold or fail one call of a real client over HTTP. */
export function serviceLike(client: PayoutService, calls: Partial<PayoutService>): PayoutService {
  return {
    createPayout: (...a) => client.createPayout(...a),
    queryByReferences: (...a) => client.queryByReferences(...a),
    queryByPayoutIds: (...a) => client.queryByPayoutIds(...a),
    balances: (...a) => client.balances(...a),
    exchangeRates: (...a) => client.exchangeRates(...a),
    ...calls,
  };
}

/** A submitter of the pipeline's database, clock, logger and holds that reaches the payout service through `service`. */
export function submitterVia(p: Pipeline, service: PayoutService, o: Partial<SubmitterOptions> = {}): PayoutSubmitter {
  return new PayoutSubmitter(
    { db: p.db, service, clock: p.clock, monotonic: p.monotonic, logger: p.logger, holds: p.holds, random: () => 0.5 },
    { ...p.submitterOptions, ...o },
  );
}

/** A second submitter on the pipeline's database ("instance A") whose first matching reference query is held. */
export interface HeldReconciler {
  submitter: PayoutSubmitter;
  /** True once a matching query was answered and is held before A records it. */
  held(): boolean;
  /** Lets the held answer through. */
  release(): void;
}

/** Instance A, its reference query of `refs` matching `holds` answered by the real service, then held until release. */
export function heldReconciler(p: Pipeline, holds: (refs: string[]) => boolean = () => true): HeldReconciler {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let held = false;
  const service = serviceLike(p.client, {
    async queryByReferences(refs, signal) {
      const answer = await p.client.queryByReferences(refs, signal);
      if (!held && holds(refs)) {
        held = true;
        await gate;
      }
      return answer;
    },
  });
  const submitter = submitterVia(p, service, { claimant: { instanceId: 'A', leaseMs: 120_000 } });
  return { submitter, held: () => held, release };
}
