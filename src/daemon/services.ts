/**
 * The composition root: builds the payout service client from the resolved
 * configuration — against a real deployment, or against the embedded
 * sandbox started in this process when api.baseUrl is "embedded" (a first
 * run with no configuration, and the demo) — with its circuit breaker, and
 * the log lines of what happens to the service as a whole (once each, not
 * per call or row): it went down, it is back, a rate-limit pause, refused
 * credentials.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { PayoutApiClient, ServiceBreaker, type ApiCallRecord, type BreakerTransition } from '../api/index.js';
import type { Clock } from '../domain/clock.js';
import { readApiKey, type ResolvedConfig } from '../config/index.js';
import type { SandboxServer } from '../sandbox/index.js';
import { generateMerchantKeyPair, loadPrivateKeyFile, publicKeyBase64 } from '../signing/index.js';

export interface ApiConnection {
  client: PayoutApiClient;
  /** Whether the payout service can be reached (src/api/breaker.ts). */
  breaker: ServiceBreaker;
  /** The in-process sandbox, when api.baseUrl is "embedded". */
  sandbox: SandboxServer | null;
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

/** A merchant key and API key kept under the state directory, made on first use. */
function embeddedIdentity(stateDir: string): EmbeddedIdentity {
  const dir = join(stateDir, 'embedded-sandbox');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const privateKeyFile = join(dir, 'merchant.pem');
  const apiKeyFile = join(dir, 'api-key');
  if (!existsSync(privateKeyFile)) writeFileSync(privateKeyFile, generateMerchantKeyPair().privateKeyPem, { mode: 0o600 });
  if (!existsSync(apiKeyFile)) writeFileSync(apiKeyFile, randomBytes(18).toString('hex'), { mode: 0o600 });
  return { apiKey: readFileSync(apiKeyFile, 'utf8').trim(), privateKeyFile };
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

export async function connectApi(config: ResolvedConfig, clock: Clock, logger: Logger, hooks: ApiHooks = {}): Promise<ApiConnection> {
  let sandbox: SandboxServer | null = null;
  let baseUrl = config.api.baseUrl;
  let merchantCode = config.api.merchantCode ?? EMBEDDED_MERCHANT;
  let apiKey: string;
  let privateKeyFile: string;
  if (baseUrl === 'embedded') {
    const id = embeddedIdentity(config.paths.stateDir);
    merchantCode = EMBEDDED_MERCHANT;
    apiKey = id.apiKey;
    privateKeyFile = id.privateKeyFile;
    // Loaded only here: a daemon talking to the real service never needs the sandbox's code.
    const { startSandbox } = await import('../sandbox/index.js');
    sandbox = await startSandbox({
      port: config.sandbox.port,
      merchants: [
        {
          merchantCode,
          apiKey,
          publicKey: publicKeyBase64(loadPrivateKeyFile(privateKeyFile)),
          balances: { USDT: '1000000', USDC: '1000000' },
        },
      ],
      settlement: { minDelayMs: config.sandbox.settlementMinDelayMs, maxDelayMs: config.sandbox.settlementMaxDelayMs },
      canonicalJson: config.api.canonicalJson,
      queryMaxIds: config.api.queryMaxIds,
      stateFile: join(config.paths.stateDir, 'embedded-sandbox', 'ledger.json'),
    });
    baseUrl = sandbox.url;
    logger.info({ url: sandbox.url }, 'embedded sandbox started (api.baseUrl is "embedded"): no real money moves');
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
  });
  return {
    client,
    breaker,
    sandbox,
    async close() {
      await sandbox?.close();
    },
  };
}
