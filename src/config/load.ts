/**
 * Reading the configuration: a YAML file (optional), environment variables
 * and command-line overrides, validated once by the schema, paths made
 * absolute, and secrets read from where the operator put them. Precedence:
 * argv > env > file > default. Error messages name the option, never a
 * secret's value.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { ConfigError } from '../domain/errors.js';
import { configSchema, type PayoutdConfig } from './schema.js';

export interface LoadConfigInput {
  /** Path of the YAML config file; none means defaults (embedded sandbox, ./var). */
  file?: string;
  env: NodeJS.ProcessEnv;
  /** Working directory relative paths resolve against when there is no file. */
  cwd: string;
}

export interface ResolvedConfig extends PayoutdConfig {
  /** The file read, if any. */
  source: string | null;
  /** Absolute SQLite path. */
  databaseFile: string;
  /** systemd's $CREDENTIALS_DIRECTORY, when running under LoadCredential=. */
  credentialsDir: string | null;
}

function formatIssues(error: z.ZodError, where: string): string {
  return error.issues
    .map((i) => {
      const path = i.path.join('.') || '(top level)';
      return `  ${where}: ${path}: ${i.message}`;
    })
    .join('\n');
}

/** Environment overrides: PAYOUTD_<SECTION>_<KEY> for the common scalar options. */
function envOverrides(env: NodeJS.ProcessEnv): Record<string, unknown> {
  const o: Record<string, Record<string, unknown>> = {};
  const set = (section: string, key: string, value: unknown): void => {
    o[section] = { ...(o[section] ?? {}), [key]: value };
  };
  if (env.PAYOUTD_API_BASE_URL) set('api', 'baseUrl', env.PAYOUTD_API_BASE_URL);
  if (env.PAYOUTD_MERCHANT_CODE) set('api', 'merchantCode', env.PAYOUTD_MERCHANT_CODE);
  if (env.PAYOUTD_API_KEY) set('api', 'apiKey', env.PAYOUTD_API_KEY);
  if (env.PAYOUTD_PRIVATE_KEY_FILE) set('api', 'privateKeyFile', env.PAYOUTD_PRIVATE_KEY_FILE);
  if (env.PAYOUTD_STATE_DIR) set('paths', 'stateDir', env.PAYOUTD_STATE_DIR);
  if (env.PAYOUTD_INBOX) set('paths', 'inbox', env.PAYOUTD_INBOX);
  if (env.PAYOUTD_OUTBOX) set('paths', 'outbox', env.PAYOUTD_OUTBOX);
  if (env.PAYOUTD_DATABASE_URL) {
    set('database', 'client', 'pg');
    set('database', 'url', env.PAYOUTD_DATABASE_URL);
  }
  if (env.PAYOUTD_LOG_LEVEL) set('log', 'level', env.PAYOUTD_LOG_LEVEL);
  return o;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Deep merge of plain objects; `over` wins. */
export function mergeDeep(base: unknown, over: unknown): unknown {
  if (!isObject(base) || !isObject(over)) return over === undefined ? base : over;
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = mergeDeep(base[k], v);
  return out;
}

export function loadConfig(input: LoadConfigInput, overrides: Record<string, unknown> = {}): ResolvedConfig {
  let fromFile: unknown = {};
  let baseDir = input.cwd;
  if (input.file) {
    const file = resolve(input.cwd, input.file);
    if (!existsSync(file)) throw new ConfigError('CONFIG_MISSING', `config file ${file} does not exist`);
    try {
      fromFile = parseYaml(readFileSync(file, 'utf8')) ?? {};
    } catch (err) {
      throw new ConfigError('CONFIG_SYNTAX', `config file ${file} is not valid YAML: ${(err as Error).message.split('\n')[0]}`);
    }
    if (!isObject(fromFile)) throw new ConfigError('CONFIG_SYNTAX', `config file ${file} must hold a mapping of options`);
    baseDir = dirname(file);
  }
  const merged = mergeDeep(mergeDeep(fromFile, envOverrides(input.env)), overrides);
  const parsed = configSchema.safeParse(merged);
  if (!parsed.success) {
    throw new ConfigError('CONFIG_INVALID', `invalid configuration:\n${formatIssues(parsed.error, input.file ?? 'defaults')}`);
  }
  const c = parsed.data;
  const abs = (p: string): string => (isAbsolute(p) ? p : resolve(baseDir, p));
  c.paths = { inbox: abs(c.paths.inbox), outbox: abs(c.paths.outbox), stateDir: abs(c.paths.stateDir) };
  if (c.api.apiKeyFile) c.api.apiKeyFile = abs(c.api.apiKeyFile);
  if (c.api.privateKeyFile) c.api.privateKeyFile = abs(c.api.privateKeyFile);
  if (c.webhook.secretFile) c.webhook.secretFile = abs(c.webhook.secretFile);
  if (c.webhook.tls) c.webhook.tls = { certFile: abs(c.webhook.tls.certFile), keyFile: abs(c.webhook.tls.keyFile) };
  const credentials = input.env.CREDENTIALS_DIRECTORY;
  // systemd LoadCredential=: secrets arrive as files readable only by the service.
  if (credentials) {
    if (!c.api.privateKeyFile && existsSync(join(credentials, 'merchant-key'))) c.api.privateKeyFile = join(credentials, 'merchant-key');
    if (!c.api.apiKey && !c.api.apiKeyFile && existsSync(join(credentials, 'api-key'))) c.api.apiKeyFile = join(credentials, 'api-key');
    if (!c.webhook.secret && !c.webhook.secretFile && existsSync(join(credentials, 'webhook-secret'))) {
      c.webhook.secretFile = join(credentials, 'webhook-secret');
    }
  }
  if (c.api.baseUrl !== 'embedded') {
    const missing = (['merchantCode', 'privateKeyFile'] as const).filter((k) => !c.api[k]);
    if (!c.api.apiKey && !c.api.apiKeyFile) missing.push('apiKey' as never);
    if (missing.length > 0) {
      throw new ConfigError(
        'CONFIG_INVALID',
        `api.baseUrl is ${c.api.baseUrl}, so api.${missing.join(', api.')} must be set (see config/payoutd.example.yaml)`,
      );
    }
    try {
      new URL(c.api.baseUrl);
    } catch {
      throw new ConfigError('CONFIG_INVALID', `api.baseUrl must be a URL or "embedded", got ${JSON.stringify(c.api.baseUrl)}`);
    }
  }
  if (c.webhook.enabled && !c.webhook.secret && !c.webhook.secretFile) {
    throw new ConfigError(
      'CONFIG_INVALID',
      'webhook.enabled is true, so webhook.secret, webhook.secretFile or the credential webhook-secret must be set',
    );
  }
  if (c.database.client === 'pg' && !c.database.url)
    throw new ConfigError('CONFIG_INVALID', 'database.url is required when database.client is pg');
  const databaseFile = c.database.filename ? abs(c.database.filename) : join(c.paths.stateDir, 'payoutd.sqlite');
  return { ...c, source: input.file ? resolve(input.cwd, input.file) : null, databaseFile, credentialsDir: credentials ?? null };
}

/** A secret given inline or as a file (never logged; errors name the option only). */
function readSecret(value: string | undefined, file: string | undefined, option: string, missing: string): string {
  if (value) return value;
  if (file) {
    try {
      return readFileSync(file, 'utf8').trim();
    } catch (err) {
      throw new ConfigError(
        'SECRET_UNREADABLE',
        `${option}File ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
      );
    }
  }
  throw new ConfigError('CONFIG_INVALID', missing);
}

/** The API key (header SvcApiKey). */
export function readApiKey(c: ResolvedConfig): string {
  return readSecret(
    c.api.apiKey,
    c.api.apiKeyFile,
    'api.apiKey',
    'no API key configured (api.apiKey, api.apiKeyFile, PAYOUTD_API_KEY or credential api-key)',
  );
}

/** The merchant's webhook secret. */
export function readWebhookSecret(c: ResolvedConfig): string {
  return readSecret(
    c.webhook.secret,
    c.webhook.secretFile,
    'webhook.secret',
    'no webhook secret configured (webhook.secret, webhook.secretFile or credential webhook-secret)',
  );
}
