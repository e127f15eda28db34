/**
 * The sandbox server: each request through one pipeline (route, request faults, authentication, handler,
 * commit-then-* faults, latency, envelope). It owns every socket and timer it creates and releases them on close().
 */
import { randomInt } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { systemClock } from '../domain/clock.js';
import { canonicalStringify, type CanonicalOptions } from '../json/canonical.js';
import { parsePublicKey } from '../signing/keys.js';
import { handleAdmin, ADMIN_ROUTES } from './admin.js';
import {
  createPayout,
  issueAccessToken,
  queryBalance,
  queryPayouts,
  queryRates,
  refreshAccessToken,
  type ApiState,
  type HandlerResult,
} from './api.js';
import { authenticateBusinessCall, authenticateTokenCall, type AuthDeps, type MerchantState, type SignedRequest } from './auth.js';
import { CredentialStore } from './credentials.js';
import { API_CODES, ApiFailure, SandboxError } from './errors.js';
import { faultsTarget, latencyFor, TokenBucket } from './faults.js';
import { MAX_BODY_BYTES, parseBody, readBody, writeJson, type Envelope } from './http.js';
import { Ledger, type LedgerEntry } from './ledger.js';
import { LedgerFile } from './ledger-file.js';
import { PayoutLifecycle } from './lifecycle.js';
import { silentLogger } from './logger.js';
import { NonceWindow } from '../signing/nonces.js';
import {
  mergeFaults,
  parseFaultsPatch,
  resolveSandboxConfig,
  type SandboxConfig,
  type SandboxFaults,
  type SandboxFaultsInput,
  type SandboxOptions,
} from './options.js';
import {
  ACCESS_TOKEN_PATH,
  ADMIN_PREFIX,
  API_PATHS,
  BALANCE_PATH,
  CREATE_PATH,
  EXCHANGE_RATE_PATH,
  QUERY_PATH,
  REFRESH_TOKEN_PATH,
  type ApiPath,
} from './paths.js';
import { seededRandom } from './random.js';
import { bump, copyStats, emptyStats, type SandboxStats } from './stats.js';
import { TimerSet } from './timers.js';
import { WebhookDispatcher, webhookTarget, type WebhookTarget } from './webhooks.js';

/** Nonces kept at most (a load test's calls within one window fit; memory stays bounded under a flood). */
const SANDBOX_NONCE_CAPACITY = 2_000_000;

export interface SandboxServer {
  /** http://127.0.0.1:PORT */
  readonly url: string;
  readonly port: number;
  /** Seed of the PRNG in use (the given one or a random one). */
  readonly seed: number;
  /** Stops listening, clears every timer (settlement, webhook retries, latency) and closes all sockets. */
  close(): Promise<void>;
  /** Every payout ever created, in creation order (copies). */
  ledger(): LedgerEntry[];
  /** Moves matching PENDING payouts to `status`; returns how many moved. */
  settle(select: { payoutId?: string; merchantReferenceId?: string }, status: 'PAID' | 'CANCELLED'): number;
  /** Moves a PAID or CANCELLED payout to the other final status and sends its webhook (tests only); false if it did not move. */
  reverse(payoutId: string, status: 'PAID' | 'CANCELLED'): boolean;
  setBalance(merchantCode: string, currency: string, amount: string): void;
  balances(merchantCode: string): Record<string, string>;
  /** Changes fault injection at runtime; fields not given keep their value. */
  setFaults(faults: SandboxFaultsInput): void;
  faults(): SandboxFaults;
  stats(): SandboxStats;
}

interface Route {
  path: ApiPath;
  kind: 'token' | 'business';
  run(state: ApiState, merchant: MerchantState, body: unknown): HandlerResult;
}

/**
 * The API's routes; the balance listing is served at `balancePath` (option `balance.path`), while faults and
 * stats keep naming it by its default path.
 */
function apiRoutes(balancePath: string): Map<string, Route> {
  return new Map<string, Route>([
    [`POST ${ACCESS_TOKEN_PATH}`, { path: ACCESS_TOKEN_PATH, kind: 'token', run: issueAccessToken }],
    [`POST ${REFRESH_TOKEN_PATH}`, { path: REFRESH_TOKEN_PATH, kind: 'token', run: refreshAccessToken }],
    [`POST ${EXCHANGE_RATE_PATH}`, { path: EXCHANGE_RATE_PATH, kind: 'business', run: (s, _m, b) => queryRates(s, b) }],
    [`POST ${CREATE_PATH}`, { path: CREATE_PATH, kind: 'business', run: createPayout }],
    [`POST ${QUERY_PATH}`, { path: QUERY_PATH, kind: 'business', run: queryPayouts }],
    [`POST ${balancePath}`, { path: BALANCE_PATH, kind: 'business', run: queryBalance }],
    [`GET ${balancePath}`, { path: BALANCE_PATH, kind: 'business', run: queryBalance }],
  ]);
}

interface Answer extends Envelope {
  status: number;
  headers?: Record<string, string>;
  committed?: boolean;
}

const failure = (status: number, code: string, msg: string, headers?: Record<string, string>): Answer => ({
  status,
  code,
  msg,
  data: {},
  ...(headers && { headers }),
});

function buildMerchants(config: SandboxConfig): MerchantState[] {
  return config.merchants.map((m) => ({
    options: m,
    merchantCode: m.merchantCode,
    clientId: m.clientId ?? m.merchantCode,
    businessUserId: m.businessUserId ?? `${m.merchantCode}-primary`,
    publicKey: parsePublicKey(m.publicKey),
  }));
}

function urlHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

export async function startSandbox(options: SandboxOptions): Promise<SandboxServer> {
  const { clock = systemClock, logger = silentLogger, ...input } = options;
  const config = resolveSandboxConfig(input);
  const seed = config.seed ?? randomInt(0, 2 ** 31 - 1);
  const canonical: CanonicalOptions = { sortKeys: config.canonicalJson.sortKeys };
  const routes = apiRoutes(config.balance.path);
  const random = seededRandom(seed);
  const stats = emptyStats();
  const timers = new TimerSet();
  const merchants = buildMerchants(config);
  const merchantsByCode = new Map(merchants.map((m) => [m.merchantCode, m]));
  const ledger = new Ledger(config.merchants);
  const credentials = new CredentialStore(config);
  const nonces = new NonceWindow(config.nonceWindowSeconds * 1000, SANDBOX_NONCE_CAPACITY);

  let faults = config.faults;
  let bucket = faults.rateLimit ? new TokenBucket(faults.rateLimit) : null;

  const webhookTargets = new Map<string, WebhookTarget>();
  for (const m of config.merchants) {
    if (m.webhookUrl !== undefined && m.webhookSecret !== undefined) {
      webhookTargets.set(m.merchantCode, webhookTarget(m.merchantCode, m.webhookUrl, m.webhookSecret, config.webhook.keyEncoding));
    }
  }
  const webhooks = new WebhookDispatcher({
    clock,
    random,
    timers,
    stats,
    logger,
    canonical,
    options: config.webhook,
    faults: () => faults,
  });
  const lifecycle = new PayoutLifecycle({ ledger, settlement: config.settlement, random, clock, stats, logger, webhooks, webhookTargets });
  const persistence = config.stateFile ? new LedgerFile(config.stateFile, ledger, logger, stats) : null;
  if (persistence) {
    await persistence.load();
    for (const stored of ledger.pendingPayouts()) lifecycle.created(stored);
  }
  const api: ApiState = { config, clock, random, ledger, credentials, lifecycle, stats, logger };
  const authDeps: AuthDeps = {
    authMode: config.authMode,
    clockSkewSeconds: config.clockSkewSeconds,
    merchantsByApiKey: new Map(merchants.map((m) => [m.options.apiKey, m])),
    credentials,
    nonces,
    clock,
  };
  for (const path of API_PATHS) stats.requests[path] = 0;

  const envelopeText = (a: Envelope): string => canonicalStringify({ code: a.code, msg: a.msg, data: a.data }, canonical);

  function answerApi(route: Route, signed: SignedRequest): Answer {
    try {
      let merchant: MerchantState;
      if (route.kind === 'token') merchant = authenticateTokenCall(authDeps, signed);
      else merchant = authenticateBusinessCall(authDeps, signed).merchant;
      const result = route.run(api, merchant, signed.body);
      return { status: 200, code: API_CODES.SUCCESS, msg: 'success', data: result.data, committed: result.committed === true };
    } catch (err) {
      if (err instanceof ApiFailure) {
        bump(err.httpStatus === 401 ? stats.authFailures : stats.businessErrors, err.code);
        const level = err.httpStatus === 401 ? 'warn' : 'info';
        logger[level]({ path: route.path, code: err.code, reason: err.message }, 'request refused');
        return failure(err.httpStatus, err.code, err.message);
      }
      stats.internalErrors++;
      logger.error({ path: route.path, err: err instanceof Error ? `${err.name}: ${err.message}` : 'non-error thrown' }, 'request failed');
      return failure(500, API_CODES.INTERNAL_ERROR, 'internal error');
    }
  }

  // A sandbox given its own clock (a service whose clock is off) says its time in the Date header, as a server does.
  const dated = clock !== systemClock;
  function write(res: ServerResponse, a: Answer): void {
    writeJson(res, a.status, envelopeText(a), dated ? { Date: new Date(clock.now()).toUTCString(), ...a.headers } : a.headers);
  }

  async function handleApi(req: IncomingMessage, res: ServerResponse, method: string, path: string): Promise<void> {
    const route = routes.get(`${method} ${path}`);
    bump(stats.requests, route ? route.path : 'other');
    if (!route) {
      await readBody(req);
      write(res, failure(404, API_CODES.NOT_FOUND, `no endpoint ${method} ${path.slice(0, 100)}`));
      return;
    }
    const f = faults;
    const targeted = faultsTarget(f, route.path);
    if (targeted && random.chance(f.dropRate)) {
      stats.faults.dropped++;
      req.socket.destroy();
      return;
    }
    const raw = await readBody(req);
    let answer: Answer;
    if (raw === null) {
      answer = failure(413, API_CODES.PAYLOAD_TOO_LARGE, `request body over ${MAX_BODY_BYTES} bytes`, { Connection: 'close' });
    } else if (targeted && random.chance(f.errorRate)) {
      stats.faults.errors++;
      answer = failure(500, API_CODES.INTERNAL_ERROR, 'internal error (injected)');
    } else if (targeted && bucket && !bucket.take()) {
      stats.faults.rateLimited++;
      const retryAfter = String(bucket.limit.retryAfterSeconds);
      answer = failure(429, API_CODES.RATE_LIMITED, 'RATE_LIMITED: too many requests', { 'Retry-After': retryAfter });
    } else {
      const { body, minified } = parseBody(raw, canonical);
      const lag = targeted && route.path === CREATE_PATH ? latencyFor(f.commitDelayMs, random) : 0;
      if (lag > 0) {
        stats.faults.commitDelayed++;
        await timers.delay(lag);
      }
      answer = answerApi(route, { method, path, headers: req.headers, minifiedBody: minified, body });
    }
    // Nothing is answered (not even a query that found a payout just created) before the ledger is on disk.
    await persistence?.durable();
    if (targeted && answer.committed && route.path === CREATE_PATH) {
      if (random.chance(f.commitThenDropRate)) {
        stats.faults.commitThenDrop++;
        req.socket.destroy();
        return;
      }
      if (random.chance(f.commitThenErrorRate)) {
        stats.faults.commitThenError++;
        answer = failure(500, API_CODES.INTERNAL_ERROR, 'internal error (injected after commit)');
      }
    }
    if (targeted) {
      const ms = latencyFor(f.latencyMs, random);
      if (ms > 0) {
        stats.faults.delayed++;
        await timers.delay(ms);
      }
    }
    write(res, answer);
  }

  async function handleAdminRequest(req: IncomingMessage, res: ServerResponse, method: string, path: string): Promise<void> {
    const key = `${method} ${path}`;
    bump(stats.requests, (ADMIN_ROUTES as readonly string[]).includes(key) ? path : 'other');
    const raw = await readBody(req);
    const a =
      raw === null
        ? { status: 413, code: API_CODES.PAYLOAD_TOO_LARGE, msg: `request body over ${MAX_BODY_BYTES} bytes`, data: {} }
        : handleAdmin(admin, method, path, raw);
    await persistence?.durable();
    // Admin data holds fault rates (fractions) and no signed money, so plain JSON is right.
    writeJson(res, a.status, JSON.stringify({ code: a.code, msg: a.msg, data: a.data }));
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const method = req.method ?? 'GET';
    const rawUrl = req.url ?? '/';
    const q = rawUrl.indexOf('?');
    const path = q < 0 ? rawUrl : rawUrl.slice(0, q);
    const work = path.startsWith(ADMIN_PREFIX) ? handleAdminRequest(req, res, method, path) : handleApi(req, res, method, path);
    work.catch((err: unknown) => {
      stats.internalErrors++;
      logger.error({ path: path.slice(0, 100), err: err instanceof Error ? err.message : 'non-error thrown' }, 'request pipeline failed');
      if (!res.headersSent && !res.destroyed) writeJson(res, 500, envelopeText(failure(500, API_CODES.INTERNAL_ERROR, 'internal error')));
      else res.destroy();
    });
  }

  const server = createServer(handle);
  server.on('clientError', (_err, socket) => {
    // Malformed HTTP: answer 400 if the socket still can, never throw.
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    else socket.destroy();
  });

  await new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void =>
      reject(
        new SandboxError('SANDBOX_LISTEN_FAILED', `sandbox cannot listen on ${config.host}:${config.port} (${err.code ?? err.message})`),
      );
    server.once('error', onError);
    server.listen(config.port, config.host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  server.on('error', (err) => logger.error({ err: err.message }, 'sandbox server error'));

  const port = (server.address() as AddressInfo).port;
  const url = `http://${urlHost(config.host)}:${port}`;
  logger.info({ url, merchants: merchants.length, authMode: config.authMode, seed }, 'sandbox listening');

  let closing: Promise<void> | undefined;

  function requireMerchant(merchantCode: string): void {
    if (!merchantsByCode.has(merchantCode))
      throw new SandboxError('SANDBOX_UNKNOWN_MERCHANT', `no merchant ${merchantCode} in this sandbox`);
  }

  const admin: SandboxServer = {
    url,
    port,
    seed,
    close() {
      closing ??= (async () => {
        lifecycle.close();
        webhooks.close();
        timers.close();
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeAllConnections();
        await persistence?.close();
        await stopped;
      })();
      return closing;
    },
    ledger: () => ledger.entries(),
    settle(select, status) {
      if (status !== 'PAID' && status !== 'CANCELLED') throw new SandboxError('SANDBOX_BAD_STATUS', 'status must be PAID or CANCELLED');
      if (select.payoutId === undefined && select.merchantReferenceId === undefined) {
        throw new SandboxError('SANDBOX_BAD_SELECT', 'settle needs a payoutId or a merchantReferenceId');
      }
      return lifecycle.settle(select, status);
    },
    reverse(payoutId, status) {
      if (status !== 'PAID' && status !== 'CANCELLED') throw new SandboxError('SANDBOX_BAD_STATUS', 'status must be PAID or CANCELLED');
      return lifecycle.reverse(payoutId, status);
    },
    setBalance(merchantCode, currency, amount) {
      requireMerchant(merchantCode);
      ledger.setBalance(merchantCode, currency, amount);
    },
    balances(merchantCode) {
      requireMerchant(merchantCode);
      return ledger.balanceSnapshot(merchantCode);
    },
    setFaults(patch) {
      const parsed = parseFaultsPatch(patch);
      faults = mergeFaults(faults, parsed);
      if (parsed.rateLimit !== undefined) bucket = faults.rateLimit ? new TokenBucket(faults.rateLimit) : null;
      logger.info({ faults }, 'faults changed');
    },
    faults: () => ({ ...faults }),
    stats() {
      const s = copyStats(stats);
      s.pending = ledger.pendingCount;
      s.scheduled = { settlements: lifecycle.scheduled, timers: timers.size };
      return s;
    },
  };
  return admin;
}
