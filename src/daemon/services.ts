/**
 * The composition root: builds the payout service client, against a real deployment or the embedded sandbox
 * (api.baseUrl "embedded"), with its circuit breaker, and logs what happens to the service as a whole once each.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { PayoutApiClient, ServiceBreaker, type ApiCallRecord, type BreakerTransition } from '../api/index.js';
import { sleep } from '../domain/backoff.js';
import type { Clock } from '../domain/clock.js';
import { ConfigError, PayoutdError } from '../domain/errors.js';
import type { InstanceLock } from '../store/index.js';
import { readApiKey, readWebhookSecret, type ResolvedConfig } from '../config/index.js';
import type { SandboxServer } from '../sandbox/index.js';
import { generateMerchantKeyPair, loadPrivateKeyFile, publicKeyBase64, webhookSchemeOf } from '../signing/index.js';

export interface ApiConnection {
  client: PayoutApiClient;
  /** Whether the payout service can be reached (src/api/breaker.ts). */
  breaker: ServiceBreaker;
  /** The in-process sandbox, when api.baseUrl is "embedded" and this process owns it. */
  sandbox: SandboxServer | null;
  /** Where calls go: api.baseUrl, or the embedded sandbox's URL. */
  url: string;
  close(): Promise<void>;
}

export interface ApiHooks {
  onCall?: (call: ApiCallRecord) => void;
  onTokenRenewed?: (how: 'acquire' | 'refresh') => void;
}

export const EMBEDDED_MERCHANT = 'DEMO-MERCHANT';

interface EmbeddedIdentity {
  apiKey: string;
  privateKeyFile: string;
}

/** A merchant key and API key kept under the state directory, made on first use (by the sandbox's owner only). */
function embeddedIdentity(dir: string, make: boolean): EmbeddedIdentity {
  const privateKeyFile = join(dir, 'merchant.pem');
  const apiKeyFile = join(dir, 'api-key');
  if (make && !existsSync(privateKeyFile)) writeFileSync(privateKeyFile, generateMerchantKeyPair().privateKeyPem, { mode: 0o600 });
  if (make && !existsSync(apiKeyFile)) writeFileSync(apiKeyFile, randomBytes(18).toString('hex'), { mode: 0o600 });
  return { apiKey: readFileSync(apiKeyFile, 'utf8').trim(), privateKeyFile };
}

/**
 * Who uses the embedded sandbox, whose ledger file one process at a time may own (`ledger.lock`): the daemon
 * owns it on `sandbox.port`; a one-shot command talks to the owner's sandbox, or starts its own when none runs.
 */
export type EmbeddedRole = 'daemon' | 'command';

/** How long a daemon waits for a one-shot command to let go of the sandbox, and a command for the owner's URL. */
const EMBEDDED_WAIT_MS = 10_000;

interface EmbeddedEndpoint {
  url: string;
  identity: EmbeddedIdentity;
  sandbox: SandboxServer | null;
  close(): Promise<void>;
}

async function embeddedEndpoint(
  config: ResolvedConfig,
  logger: Logger,
  role: EmbeddedRole,
  receiverUrl: string | null,
): Promise<EmbeddedEndpoint> {
  const dir = join(config.paths.stateDir, 'embedded-sandbox');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const urlFile = join(dir, 'url');
  const deadline = Date.now() + EMBEDDED_WAIT_MS;
  // Loaded here: a daemon talking to the real service never opens the lock.
  const { tryExclusiveLock } = await import('../store/index.js');
  for (;;) {
    const lock = tryExclusiveLock(join(dir, 'ledger.lock'));
    if (lock) {
      try {
        // A URL left by an owner that died is not an owner's: gone before anyone could read it.
        rmSync(urlFile, { force: true });
        return await ownEmbeddedSandbox(config, logger, role, receiverUrl, dir, urlFile, lock);
      } catch (err) {
        lock.release();
        throw err;
      }
    }
    if (role === 'command' && existsSync(urlFile)) {
      const url = readFileSync(urlFile, 'utf8').trim();
      logger.info({ url }, 'using the embedded sandbox of the payoutd running on this state directory');
      return { url, identity: embeddedIdentity(dir, false), sandbox: null, close: async () => undefined };
    }
    if (Date.now() > deadline) {
      throw new PayoutdError(
        'SANDBOX_IN_USE',
        role === 'daemon'
          ? `the embedded sandbox's ledger under ${dir} is held by another process (a payoutd command still running?); try again`
          : `the embedded sandbox under ${dir} is held by another process that has not said where it listens; try again`,
      );
    }
    await sleep(100);
  }
}

async function ownEmbeddedSandbox(
  config: ResolvedConfig,
  logger: Logger,
  role: EmbeddedRole,
  receiverUrl: string | null,
  dir: string,
  urlFile: string,
  lock: InstanceLock,
): Promise<EmbeddedEndpoint> {
  const identity = embeddedIdentity(dir, true);
  // Loaded only here: a daemon talking to the real service never needs the sandbox's code.
  const { startSandbox } = await import('../sandbox/index.js');
  // Events go to this daemon's own receiver, signed as its webhook.* settings say; a one-shot command has none.
  const events = role === 'daemon' && receiverUrl !== null ? { webhookUrl: receiverUrl, webhookSecret: readWebhookSecret(config) } : {};
  let sandbox: SandboxServer;
  try {
    sandbox = await startSandbox({
      port: role === 'daemon' ? config.sandbox.port : 0,
      merchants: [
        {
          merchantCode: EMBEDDED_MERCHANT,
          ...(config.api.auth.clientId === undefined ? {} : { clientId: config.api.auth.clientId }),
          apiKey: identity.apiKey,
          publicKey: publicKeyBase64(loadPrivateKeyFile(identity.privateKeyFile)),
          balances: { USDT: '1000000', USDC: '1000000' },
          ...events,
        },
      ],
      settlement: { minDelayMs: config.sandbox.settlementMinDelayMs, maxDelayMs: config.sandbox.settlementMaxDelayMs },
      // Every setting of the wire contract the daemon is given, so trying another answer runs against the sandbox too.
      authMode: config.api.auth.mode,
      hmacKeyEncoding: config.api.hmacKeyEncoding,
      webhook: webhookSchemeOf(config.webhook),
      canonicalJson: config.api.canonicalJson,
      queryMaxIds: config.api.queryMaxIds,
      payoutQuery: config.api.payoutQuery,
      balance: config.api.balance,
      stateFile: join(dir, 'ledger.json'),
    });
  } catch (err) {
    if (err instanceof PayoutdError && err.code === 'SANDBOX_LISTEN_FAILED') {
      throw new ConfigError('PORT_IN_USE', `sandbox.port: ${err.message}; free the port or set sandbox.port (0: any free port)`);
    }
    throw err;
  }
  const tmp = `${urlFile}.${process.pid}.tmp`;
  writeFileSync(tmp, `${sandbox.url}\n`, { mode: 0o600 });
  renameSync(tmp, urlFile);
  logger.info({ url: sandbox.url }, 'embedded sandbox started (api.baseUrl is "embedded"): no real money moves');
  return {
    url: sandbox.url,
    identity,
    sandbox,
    async close() {
      try {
        rmSync(urlFile, { force: true });
        await sandbox.close();
      } finally {
        lock.release();
      }
    },
  };
}

/** One log line per transition of the breaker that an operator needs: down (warn, with the error), back (info). */
function logBreaker(logger: Logger, t: BreakerTransition): void {
  const code = t.health.lastErrorCode;
  if (t.from === 'closed' && t.to === 'open')
    logger.warn(
      { code, nextProbeAt: t.nextProbeAt === null ? null : new Date(t.nextProbeAt).toISOString() },
      'payout service unreachable: sending and polling paused; one probe per backoff step until it answers',
    );
  else if (t.to === 'closed')
    logger.info({ downForMs: t.downForMs, failedProbes: t.failedProbes }, 'payout service reachable again: sending resumes');
  else if (t.to === 'open') logger.debug({ code, failedProbes: t.failedProbes }, 'payout service still unreachable');
}

export async function connectApi(
  config: ResolvedConfig,
  clock: Clock,
  logger: Logger,
  hooks: ApiHooks = {},
  role: EmbeddedRole = 'command',
  /** Where this daemon's webhook receiver listens: an embedded sandbox it owns sends its events there. */
  receiverUrl: string | null = null,
): Promise<ApiConnection> {
  let embedded: EmbeddedEndpoint | null = null;
  let baseUrl = config.api.baseUrl;
  let merchantCode = config.api.merchantCode ?? EMBEDDED_MERCHANT;
  let apiKey: string;
  let privateKeyFile: string;
  if (baseUrl === 'embedded') {
    embedded = await embeddedEndpoint(config, logger, role, receiverUrl);
    baseUrl = embedded.url;
    merchantCode = EMBEDDED_MERCHANT;
    apiKey = embedded.identity.apiKey;
    privateKeyFile = embedded.identity.privateKeyFile;
  } else {
    apiKey = readApiKey(config);
    privateKeyFile = config.api.privateKeyFile as string;
  }
  const breaker = new ServiceBreaker({ ...config.api.breaker, clock });
  breaker.onChange((t) => logBreaker(logger, t));
  const client = new PayoutApiClient({
    baseUrl,
    merchantCode,
    apiKey,
    privateKey: loadPrivateKeyFile(privateKeyFile, { credentialsDir: config.credentialsDir ?? undefined }),
    auth: config.api.auth,
    sortKeys: config.api.canonicalJson.sortKeys,
    hmacKeyEncoding: config.api.hmacKeyEncoding,
    timeoutMs: config.api.timeoutMs,
    retry: config.api.retry,
    queryMaxIds: config.api.queryMaxIds,
    payoutQuery: config.api.payoutQuery,
    balance: config.api.balance,
    codeTreatments: config.api.businessCodes,
    clock,
    onCall: hooks.onCall,
    onTokenRenewed: (how) => {
      logger.info({ how }, 'payout API credentials renewed');
      hooks.onTokenRenewed?.(how);
    },
    onCredentialsRefused: (code) =>
      logger.warn({ code }, 'the payout service refused the credentials in use; renewing them, and sending the refused calls again'),
    onRateLimited: (pauseMs) => logger.warn({ pauseMs }, 'rate limited by the payout service: every call waits out the pause'),
    breaker,
    logger,
  });
  const owned = embedded;
  return {
    client,
    breaker,
    sandbox: owned?.sandbox ?? null,
    url: baseUrl,
    async close() {
      await owned?.close();
    },
  };
}
