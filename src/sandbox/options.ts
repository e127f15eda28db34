/**
 * The sandbox's options: the zod schema of the JSON config file form (its defaults are the wire contract's
 * answers, shared/design/contract.md), the types inferred from it, resolution and the config file loader.
 * Every option, its default and meaning are listed in docs/sandbox.md.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { Clock } from '../domain/clock.js';
import { ConfigError } from '../domain/errors.js';
import { compareAmounts } from '../domain/money.js';
import { parsePublicKey } from '../signing/keys.js';
import { hmacKeyBytes } from '../signing/signatures.js';
import { webhookSchemeFields } from '../signing/webhook-scheme.js';
import type { SandboxLogger } from './logger.js';
import { balanceShapeSchema, payoutQueryShapeSchema } from '../domain/wire-shapes.js';
import { ADMIN_PREFIX, API_PATHS, BALANCE_PATH } from './paths.js';

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
  commitDelayMs: 0,
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
    // Identity in authMode 'client-id' (default merchantCode); `businessUserId` of credentials when a request names none.
    clientId: z.string().min(1).optional(),
    businessUserId: z.string().min(1).optional(),
    // Available balance per stablecoin, decimal text.
    balances: z.record(z.string().min(1), plainDecimal),
    // Where `payout.updated` events are POSTed, signed with webhookSecret.
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
  // Delay after the work is committed: a number or [min, max] drawn per request.
  latencyMs: latencySchema.optional(),
  // Delay before a create's work: it lands that much after it arrived, perhaps after its caller gave up and asked.
  commitDelayMs: latencySchema.optional(),
  // HTTP 500 before any work (nothing committed).
  errorRate: probability.optional(),
  // A committed create answers HTTP 500, or gets its socket destroyed without an answer.
  commitThenErrorRate: probability.optional(),
  commitThenDropRate: probability.optional(),
  // The socket is destroyed before any work.
  dropRate: probability.optional(),
  // A token bucket: HTTP 429 + Retry-After + code 1429 when empty.
  rateLimit: rateLimitSchema.nullable().optional(),
  // Paths the request faults apply to; null: every business endpoint (not the token calls).
  endpoints: z.array(z.enum(API_PATHS)).nullable().optional(),
  webhookLossRate: probability.optional(),
  // Delivered twice with the same eventId.
  webhookDuplicateRate: probability.optional(),
  // Extra random delay 0..N ms before each delivery, so events arrive out of order.
  webhookReorderMs: nonNegativeInt.optional(),
});

/** Fault injection, every field set (all off by default). */
export type SandboxFaults = { [K in keyof SandboxFaultsInput]-?: Exclude<z.output<typeof sandboxFaultsPatchSchema>[K], undefined> };
export type SandboxFaultsInput = z.input<typeof sandboxFaultsPatchSchema>;
export type RateLimitFault = z.output<typeof rateLimitSchema>;

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
    // How secretKey text becomes HMAC key bytes; issued secret keys are valid in it.
    hmacKeyEncoding: z.enum(['utf8', 'base64', 'hex']).default('utf8'),
    // Accepted X-TIMESTAMP distance from the clock; a nonce seen this recently is a replay.
    clockSkewSeconds: nonNegativeInt.default(300),
    nonceWindowSeconds: positiveInt.default(600),
    accessTokenTtlSeconds: positiveInt.default(7200),
    refreshTokenTtlSeconds: positiveInt.default(86400),
    queryMaxIds: positiveInt.default(100),
    // The payout query's by-payoutId field, answer list and record field names; the balance listing's path and fields.
    payoutQuery: payoutQueryShapeSchema,
    balance: balanceShapeSchema,
    duplicatePolicy: z.enum(['return-original', 'reject', 'allow']).default('return-original'),
    // Fiat per 1 stablecoin (USDT and USDC alike); replaces the default table when given.
    rates: z
      .record(z.string().regex(/^[A-Z]{3}$/, { message: 'expected a three-letter currency code' }), positiveDecimal)
      .default(() => ({ ...DEFAULT_RATES })),
    fee: z.strictObject({ fixed: plainDecimal.default('0.5') }).prefault({}),
    // Allowed payoutAmount in stablecoin terms (payoutAmount / rate); outside -> 2005.
    amountLimits: z
      .strictObject({ min: plainDecimal.default('0.01'), max: positiveDecimal.default('1000000') })
      .prefault({})
      .refine((l) => compareAmounts(l.min, l.max) <= 0, { message: 'min must not exceed max' }),
    settlement: z
      .strictObject({
        minDelayMs: nonNegativeInt.default(2000),
        maxDelayMs: nonNegativeInt.default(10_000),
        // Beneficiary accountNumber endings: CANCELLED (refunded), or PENDING until settle().
        cancelSuffix: z.string().min(1).default('0000'),
        holdSuffix: z.string().min(1).default('9999'),
      })
      .prefault({})
      .refine((s) => s.minDelayMs <= s.maxDelayMs, { message: 'minDelayMs must not exceed maxDelayMs' })
      .refine((s) => s.cancelSuffix !== s.holdSuffix, { message: 'cancelSuffix and holdSuffix must differ' }),
    webhook: z
      .strictObject({
        // Delay before each retry after a failed attempt; attempts = 1 + length.
        retryScheduleMs: z.array(nonNegativeInt).default(() => [1000, 5000, 25_000, 120_000, 600_000]),
        timeoutMs: positiveInt.default(15_000),
        // How deliveries are signed: key bytes, header names, timestamp unit, string to sign (the daemon's webhook.*).
        ...webhookSchemeFields,
      })
      .prefault({}),
    // Seed of the PRNG behind every random choice; default random (reported by /__sandbox/health).
    seed: z.number().int().optional(),
    // Keeps the ledger in this JSON file and its journal across restarts, even a SIGKILL.
    stateFile: z.string().optional(),
    faults: sandboxFaultsPatchSchema.prefault({}).transform((patch) => mergeFaults(DEFAULT_FAULTS, patch)),
  })
  .superRefine((c, ctx) => {
    const path = c.balance.path;
    if (path !== BALANCE_PATH && ((API_PATHS as readonly string[]).includes(path) || path.startsWith(ADMIN_PREFIX))) {
      ctx.addIssue({ code: 'custom', path: ['balance', 'path'], message: 'is the path of another endpoint' });
    }
    c.merchants.forEach((m, i) => {
      if (m.webhookSecret === undefined) return;
      try {
        hmacKeyBytes(m.webhookSecret, c.webhook.keyEncoding);
      } catch {
        ctx.addIssue({
          code: 'custom',
          path: ['merchants', i, 'webhookSecret'],
          message: `not valid ${c.webhook.keyEncoding} text (webhook.keyEncoding)`,
        });
      }
    });
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
  });

/** The complete, validated configuration (every default applied). */
export type SandboxConfig = z.output<typeof sandboxOptionsSchema>;
/** The JSON config file form: everything but `merchants` optional. */
export type SandboxConfigInput = z.input<typeof sandboxOptionsSchema>;
export type SandboxMerchant = z.output<typeof merchantSchema>;
export type SettlementOptions = SandboxConfig['settlement'];
export type WebhookOptions = SandboxConfig['webhook'];
export type AuthMode = SandboxConfig['authMode'];
export type DuplicatePolicy = SandboxConfig['duplicatePolicy'];

/** Options of startSandbox: the config file form plus what only code can pass. */
export type SandboxOptions = SandboxConfigInput & {
  /** Time for token expiry, timestamp skew and nonce windows. Default: the system clock. */
  clock?: Clock;
  /** pino-like logger. Default: silent. */
  logger?: SandboxLogger;
};

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
export function parseFaultsPatch(input: unknown): z.output<typeof sandboxFaultsPatchSchema> {
  const result = sandboxFaultsPatchSchema.safeParse(input);
  if (!result.success) throw new ConfigError('SANDBOX_FAULTS_INVALID', `faults: ${describeIssues(result.error)}`);
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
