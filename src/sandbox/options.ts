/**
 * The sandbox's options: their types (each documented with its default),
 * the zod schema of the JSON config file form, resolution to a complete
 * config, and the config file loader. The defaults are the wire contract's
 * answers (shared/design/contract.md); options let tests pick alternatives.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { Clock } from '../domain/clock.js';
import { ConfigError } from '../domain/errors.js';
import { compareAmounts } from '../domain/money.js';
import { parsePublicKey } from '../signing/keys.js';
import type { SandboxLogger } from './logger.js';
import { API_PATHS, type ApiPath } from './paths.js';

export type AuthMode = 'standard' | 'client-id';
export type DuplicatePolicy = 'return-original' | 'reject' | 'allow';
export type HmacKeyEncodingOption = 'utf8' | 'base64' | 'hex';

export interface SandboxMerchant {
  merchantCode: string;
  /** Sent by the client in `SvcApiKey`. */
  apiKey: string;
  /** RSA public key, Base64 SPKI DER without PEM armour (spec 5.1) or PEM. */
  publicKey: string;
  /** Identity in authMode 'client-id' (spec 5.6). Default: merchantCode. */
  clientId?: string;
  /** `businessUserId` of issued credentials when the request names no businessId. Default: `<merchantCode>-primary`. */
  businessUserId?: string;
  /** Available balance per stablecoin, decimal text, e.g. { USDT: '1000000' }. */
  balances: Record<string, string>;
  /** Where `payout.updated` events are POSTed (contract: registered by this option). Needs webhookSecret. */
  webhookUrl?: string;
  /** HMAC key (UTF-8 bytes) of webhook signatures. */
  webhookSecret?: string;
}

export interface RateLimitFault {
  /** Steady rate of the token bucket. */
  requestsPerSecond: number;
  /** Bucket size: requests allowed back to back. */
  burst: number;
  /** Value of the Retry-After header on a 429. Default 1. */
  retryAfterSeconds: number;
}

/** Fault injection; everything off by default. */
export interface SandboxFaults {
  /** Delay before a response is written, after the work is committed: a number or [min, max] drawn per request. Default 0. */
  latencyMs: number | [number, number];
  /** Probability of HTTP 500 before any work (nothing committed). Default 0. */
  errorRate: number;
  /** Probability that a committed create answers HTTP 500. Default 0. */
  commitThenErrorRate: number;
  /** Probability that a committed create gets its socket destroyed without an answer. Default 0. */
  commitThenDropRate: number;
  /** Probability that the socket is destroyed before any work. Default 0. */
  dropRate: number;
  /** Token bucket over the fault endpoints: HTTP 429 + Retry-After + code 1429 when empty. Default null (off). */
  rateLimit: RateLimitFault | null;
  /** Paths the request faults apply to. Default null: every business endpoint (not the token calls). */
  endpoints: ApiPath[] | null;
  /** Probability that a webhook event is never sent. Default 0. */
  webhookLossRate: number;
  /** Probability that a webhook event is delivered twice (same eventId). Default 0. */
  webhookDuplicateRate: number;
  /** Extra random delay 0..N ms before each delivery, so events arrive out of order. Default 0. */
  webhookReorderMs: number;
}

/** Faults as given: every field optional; rateLimit.retryAfterSeconds optional. */
export type SandboxFaultsInput = Partial<Omit<SandboxFaults, 'rateLimit'>> & {
  rateLimit?: (Omit<RateLimitFault, 'retryAfterSeconds'> & { retryAfterSeconds?: number }) | null;
};

export interface SettlementOptions {
  /** Shortest PENDING -> terminal delay. Default 2000. */
  minDelayMs: number;
  /** Longest PENDING -> terminal delay. Default 10000. */
  maxDelayMs: number;
  /** Beneficiary accountNumber ending in this -> CANCELLED (refunded). Default '0000'. */
  cancelSuffix: string;
  /** Beneficiary accountNumber ending in this -> stays PENDING until settle(). Default '9999'. */
  holdSuffix: string;
}

export interface WebhookOptions {
  /** Delay before each retry after a failed attempt; attempts = 1 + length. Default [1000, 5000, 25000, 120000, 600000]. */
  retryScheduleMs: number[];
  /** An attempt without an answer in this time has failed. Default 15000 (spec 6). */
  timeoutMs: number;
}

/** The complete, validated configuration (every default applied). */
export interface SandboxConfig {
  /** Default '127.0.0.1'. */
  host: string;
  /** Default 0: a free port chosen by the OS. */
  port: number;
  merchants: SandboxMerchant[];
  /** Default 'standard'. */
  authMode: AuthMode;
  /** Key order of the minified body that is hashed. Default { sortKeys: true } (spec 5.3). */
  canonicalJson: { sortKeys: boolean };
  /** How secretKey text becomes HMAC key bytes; issued secret keys are valid in it. Default 'utf8'. */
  hmacKeyEncoding: HmacKeyEncodingOption;
  /** Accepted X-TIMESTAMP distance from the clock. Default 300. */
  clockSkewSeconds: number;
  /** A nonce seen this recently is a replay. Default 600. */
  nonceWindowSeconds: number;
  /** Default 7200. */
  accessTokenTtlSeconds: number;
  /** Default 86400. */
  refreshTokenTtlSeconds: number;
  /** Most ids in one payout query. Default 100. */
  queryMaxIds: number;
  /** What a second create with a known merchantReferenceId does. Default 'return-original'. */
  duplicatePolicy: DuplicatePolicy;
  /** Fiat per 1 stablecoin (USDT and USDC alike), decimal text. Replaces the default table when given. */
  rates: Record<string, string>;
  /** Fixed fee in the deduction currency, decimal text. Default { fixed: '0.5' }. */
  fee: { fixed: string };
  /** Allowed payoutAmount in stablecoin terms (payoutAmount / rate), decimal text; outside -> 2005. Default { min: '0.01', max: '1000000' }. */
  amountLimits: { min: string; max: string };
  settlement: SettlementOptions;
  webhook: WebhookOptions;
  /** Seed of the PRNG behind every random choice. Default: a random seed (reported by /__sandbox/health). */
  seed?: number;
  /**
   * Keep the ledger and balances in this JSON file (and its journal
   * `<stateFile>.journal`) across restarts, even a SIGKILL: a change is on
   * disk before the answer that reports it is sent. The embedded sandbox of
   * `payoutd run` uses it, so a restart of the daemon finds the payouts it
   * created. Default: none, all in memory.
   */
  stateFile?: string;
  faults: SandboxFaults;
}

type DeepPartialOptions<T> = { [K in keyof T]?: T[K] extends unknown[] ? T[K] : T[K] extends object ? Partial<T[K]> : T[K] };

/** The JSON config file form: everything but `merchants` optional. */
export type SandboxConfigInput = Omit<DeepPartialOptions<SandboxConfig>, 'merchants' | 'faults'> & {
  merchants: SandboxMerchant[];
  faults?: SandboxFaultsInput;
};

/** Options of startSandbox: the config file form plus what only code can pass. */
export interface SandboxOptions extends SandboxConfigInput {
  /** Time for token expiry, timestamp skew and nonce windows. Default: the system clock. */
  clock?: Clock;
  /** pino-like logger. Default: silent. */
  logger?: SandboxLogger;
}

export const DEFAULT_RATES: Readonly<Record<string, string>> = {
  PHP: '56.25',
  IDR: '16250',
  EUR: '0.92',
  BRL: '5.4',
  USD: '1',
  MXN: '17.1',
  INR: '83.2',
  GBP: '0.79',
};

export const DEFAULT_FAULTS: Readonly<SandboxFaults> = {
  latencyMs: 0,
  errorRate: 0,
  commitThenErrorRate: 0,
  commitThenDropRate: 0,
  dropRate: 0,
  rateLimit: null,
  endpoints: null,
  webhookLossRate: 0,
  webhookDuplicateRate: 0,
  webhookReorderMs: 0,
};

const DECIMAL_TEXT = 'expected a plain decimal as text, e.g. "56.25" (a JSON string: money never travels as a float)';
const plainDecimal = z
  .string({ error: (issue) => (issue.input === undefined ? 'required' : DECIMAL_TEXT) })
  .regex(/^\d+(\.\d+)?$/, { message: DECIMAL_TEXT });
const positiveDecimal = plainDecimal.refine((t) => /[1-9]/.test(t), { message: 'must be greater than zero' });
const probability = z.number().min(0).max(1);
const nonNegativeInt = z.number().int().min(0);
const positiveInt = z.number().int().min(1);

const merchantSchema = z
  .strictObject({
    merchantCode: z.string().min(1),
    apiKey: z.string().min(1),
    publicKey: z.string().min(1),
    clientId: z.string().min(1).optional(),
    businessUserId: z.string().min(1).optional(),
    balances: z.record(z.string().min(1), plainDecimal),
    webhookUrl: z.url({ protocol: /^https?$/ }).optional(),
    webhookSecret: z.string().min(1).optional(),
  })
  .superRefine((m, ctx) => {
    if (m.webhookUrl !== undefined && m.webhookSecret === undefined) {
      ctx.addIssue({ code: 'custom', path: ['webhookSecret'], message: 'required when webhookUrl is set' });
    }
    try {
      parsePublicKey(m.publicKey);
    } catch {
      // The parser's own message might quote key material; say what is expected instead.
      ctx.addIssue({ code: 'custom', path: ['publicKey'], message: 'not a readable public key (Base64 SPKI DER or PEM)' });
    }
  });

const rateLimitSchema = z.strictObject({
  requestsPerSecond: z.number().positive(),
  burst: positiveInt,
  retryAfterSeconds: nonNegativeInt.default(1),
});

const latencySchema = z.union([
  nonNegativeInt,
  z.tuple([nonNegativeInt, nonNegativeInt]).refine(([lo, hi]) => lo <= hi, { message: 'min must not exceed max' }),
]);

/** A partial faults object, as setFaults and POST /__sandbox/faults take it. */
export const sandboxFaultsPatchSchema = z.strictObject({
  latencyMs: latencySchema.optional(),
  errorRate: probability.optional(),
  commitThenErrorRate: probability.optional(),
  commitThenDropRate: probability.optional(),
  dropRate: probability.optional(),
  rateLimit: rateLimitSchema.nullable().optional(),
  endpoints: z.array(z.enum(API_PATHS)).nullable().optional(),
  webhookLossRate: probability.optional(),
  webhookDuplicateRate: probability.optional(),
  webhookReorderMs: nonNegativeInt.optional(),
});

/** Applies a validated patch; fields absent or undefined keep their value. */
export function mergeFaults(base: SandboxFaults, patch: z.output<typeof sandboxFaultsPatchSchema>): SandboxFaults {
  const out: SandboxFaults = { ...base };
  for (const [key, value] of Object.entries(patch)) {
    if (value !== undefined) (out as unknown as Record<string, unknown>)[key] = value;
  }
  return out;
}

/** The JSON config file form of SandboxOptions (everything but clock and logger), defaults applied. */
export const sandboxOptionsSchema = z
  .strictObject({
    host: z.string().min(1).default('127.0.0.1'),
    port: z.number().int().min(0).max(65535).default(0),
    merchants: z.array(merchantSchema).min(1),
    authMode: z.enum(['standard', 'client-id']).default('standard'),
    canonicalJson: z.strictObject({ sortKeys: z.boolean().default(true) }).prefault({}),
    hmacKeyEncoding: z.enum(['utf8', 'base64', 'hex']).default('utf8'),
    clockSkewSeconds: nonNegativeInt.default(300),
    nonceWindowSeconds: positiveInt.default(600),
    accessTokenTtlSeconds: positiveInt.default(7200),
    refreshTokenTtlSeconds: positiveInt.default(86400),
    queryMaxIds: positiveInt.default(100),
    duplicatePolicy: z.enum(['return-original', 'reject', 'allow']).default('return-original'),
    rates: z
      .record(z.string().regex(/^[A-Z]{3}$/, { message: 'expected a three-letter currency code' }), positiveDecimal)
      .default(() => ({ ...DEFAULT_RATES })),
    fee: z.strictObject({ fixed: plainDecimal.default('0.5') }).prefault({}),
    amountLimits: z
      .strictObject({ min: plainDecimal.default('0.01'), max: positiveDecimal.default('1000000') })
      .prefault({})
      .refine((l) => compareAmounts(l.min, l.max) <= 0, { message: 'min must not exceed max' }),
    settlement: z
      .strictObject({
        minDelayMs: nonNegativeInt.default(2000),
        maxDelayMs: nonNegativeInt.default(10_000),
        cancelSuffix: z.string().min(1).default('0000'),
        holdSuffix: z.string().min(1).default('9999'),
      })
      .prefault({})
      .refine((s) => s.minDelayMs <= s.maxDelayMs, { message: 'minDelayMs must not exceed maxDelayMs' })
      .refine((s) => s.cancelSuffix !== s.holdSuffix, { message: 'cancelSuffix and holdSuffix must differ' }),
    webhook: z
      .strictObject({
        retryScheduleMs: z.array(nonNegativeInt).default(() => [1000, 5000, 25_000, 120_000, 600_000]),
        timeoutMs: positiveInt.default(15_000),
      })
      .prefault({}),
    seed: z.number().int().optional(),
    stateFile: z.string().optional(),
    faults: sandboxFaultsPatchSchema.prefault({}).transform((patch) => mergeFaults(DEFAULT_FAULTS, patch)),
  })
  .superRefine((c, ctx) => {
    const seen = { merchantCode: new Set<string>(), apiKey: new Set<string>(), clientId: new Set<string>() };
    c.merchants.forEach((m, i) => {
      const values = { merchantCode: m.merchantCode, apiKey: m.apiKey, clientId: m.clientId ?? m.merchantCode };
      for (const key of ['merchantCode', 'apiKey', 'clientId'] as const) {
        if (seen[key].has(values[key])) {
          ctx.addIssue({ code: 'custom', path: ['merchants', i, key], message: `two merchants share one ${key}` });
        }
        seen[key].add(values[key]);
      }
    });
  }) satisfies z.ZodType<SandboxConfig, SandboxConfigInput>;

/** `merchants[0].balances.USDT: expected ...` — names the field, never echoes a value. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => {
      const path = issue.path.reduce<string>(
        (acc, part) => (typeof part === 'number' ? `${acc}[${part}]` : acc ? `${acc}.${String(part)}` : String(part)),
        '',
      );
      return `${path || '(root)'}: ${issue.message}`;
    })
    .join('; ');
}

/** Validates options and fills in every default. */
export function resolveSandboxConfig(input: SandboxConfigInput, source = 'sandbox options'): SandboxConfig {
  const result = sandboxOptionsSchema.safeParse(input);
  if (!result.success) throw new ConfigError('SANDBOX_CONFIG_INVALID', `${source}: ${describeIssues(result.error)}`);
  return result.data;
}

/** Validates a faults patch (setFaults, POST /__sandbox/faults). */
export function parseFaultsPatch(input: unknown, source = 'faults'): z.output<typeof sandboxFaultsPatchSchema> {
  const result = sandboxFaultsPatchSchema.safeParse(input);
  if (!result.success) throw new ConfigError('SANDBOX_FAULTS_INVALID', `${source}: ${describeIssues(result.error)}`);
  return result.data;
}

/** Reads a JSON config file; amounts in it are decimal text (strings), never JSON numbers. */
export function loadSandboxConfigFile(path: string): SandboxOptions {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(
      'SANDBOX_CONFIG_UNREADABLE',
      `sandbox config ${path} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    // The parser's message quotes the text around the error, which may hold a secret.
    throw new ConfigError('SANDBOX_CONFIG_INVALID', `sandbox config ${path} is not valid JSON`);
  }
  return resolveSandboxConfig(json as SandboxConfigInput, `sandbox config ${path}`);
}
