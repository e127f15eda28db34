/**
 * The composition root: builds the payout service client from the resolved
 * configuration — against a real deployment, or against the embedded
 * sandbox started in this process when api.baseUrl is "embedded" (a first
 * run with no configuration, and the demo).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { PayoutApiClient, type ApiCallRecord } from '../api/index.js';
import type { Clock } from '../domain/clock.js';
import { readApiKey, type ResolvedConfig } from '../config/index.js';
import type { SandboxServer } from '../sandbox/index.js';
import { generateMerchantKeyPair, loadPrivateKeyFile, publicKeyBase64 } from '../signing/index.js';

export interface ApiConnection {
  client: PayoutApiClient;
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
  });
  return {
    client,
    sandbox,
    async close() {
      await sandbox?.close();
    },
  };
}
