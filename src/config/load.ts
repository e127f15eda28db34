/**
 * Reading the configuration: a YAML file, environment variables and command-line overrides (argv > env > file >
 * default), validated by the schema, paths made absolute, secrets read. Errors name the option, never a secret.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { z } from 'zod';
import { ConfigError } from '../domain/errors.js';
import { shownUrl } from '../domain/url-path.js';
import { secretFileModeProblem } from '../signing/keys.js';
import { configSchema, FOLDER_OPTIONS, webhookName, type PayoutdConfig } from './schema.js';
import { approvalInUse } from './approval-schema.js';
import { isPlainObject, unknownOptions, type JsonSchemaNode } from './strict.js';
import { parseConfigYaml } from './yaml.js';

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
  /** The options an environment variable set (over the file and the defaults), named with the variable: said at start. */
  fromEnvironment: { option: string; variable: string }[];
  /** The top-level sections the config file sets (`api`, `notify`, …): a SIGHUP refuses a file that lost one. */
  fileSections: string[];
}

/** A config problem's line: where the value came from (the file, an environment variable, a flag), the option, what is wrong. */
type Origins = ReadonlyMap<string, string>;

function originOf(path: string, origins: Origins, file: string): string {
  return origins.get(path) ?? file;
}

/** Only values that cannot be secrets are quoted back: numbers, booleans, and the text of enum options. */
function gotText(issue: z.core.$ZodIssue): string {
  const input = (issue as { input?: unknown }).input;
  if (typeof input === 'number' || typeof input === 'boolean') return `, got ${String(input)}`;
  if (issue.code === 'invalid_value' && typeof input === 'string') return `, got ${JSON.stringify(input.slice(0, 40))}`;
  return '';
}

const TYPE_WORDS: Record<string, string> = {
  number: 'a number',
  int: 'a whole number',
  string: 'text',
  boolean: 'true or false',
  object: 'a mapping',
  record: 'a mapping',
  array: 'a list',
};

function typeOf(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  if (value === null) return 'nothing';
  return TYPE_WORDS[typeof value] ?? typeof value;
}

/** zod's default wording for the common cases, in the words of an option. */
function issueMessage(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case 'too_small':
      if (issue.origin === 'number') return `must be ${issue.inclusive ? 'at least' : 'more than'} ${String(issue.minimum)}`;
      if (issue.origin === 'array') return `must have at least ${String(issue.minimum)} entries`;
      if (issue.origin === 'string') return `must be at least ${String(issue.minimum)} characters long`;
      return undefined;
    case 'too_big':
      if (issue.origin === 'number') return `must be ${issue.inclusive ? 'at most' : 'less than'} ${String(issue.maximum)}`;
      return undefined;
    case 'invalid_type':
      if (issue.input === undefined) return 'is required';
      return `must be ${TYPE_WORDS[issue.expected] ?? issue.expected}, got ${typeOf(issue.input)}`;
    case 'invalid_value':
      return `must be one of ${issue.values.map((v) => String(v)).join(', ')}`;
    default:
      return undefined;
  }
}

function formatIssues(error: z.ZodError, origins: Origins, file: string, unknown: ReadonlySet<string>): string[] {
  const lines: string[] = [];
  for (const i of error.issues) {
    if (i.code === 'unrecognized_keys') {
      // Strict parts of the schema refuse keys too; unknownOptions already named them with a suggestion.
      for (const key of i.keys) {
        const path = [...i.path, key].join('.');
        if (!unknown.has(path)) lines.push(`${originOf(path, origins, file)}: ${path}: unknown option`);
      }
      continue;
    }
    const path = i.path.join('.') || '(top level)';
    // Custom and type messages may say what was found already.
    lines.push(`${originOf(path, origins, file)}: ${path}: ${i.message}${i.message.includes(' got ') ? '' : gotText(i)}`);
  }
  return lines;
}

/** Environment overrides: PAYOUTD_<SECTION>_<KEY> for the common scalar options; `origins` learns which variable set each. */
function envOverrides(env: NodeJS.ProcessEnv, origins: Map<string, string>): Record<string, unknown> {
  const o: Record<string, Record<string, unknown>> = {};
  const set = (section: string, key: string, value: unknown, variable: string): void => {
    o[section] = { ...(o[section] ?? {}), [key]: value };
    origins.set(`${section}.${key}`, variable);
  };
  const map: [string, string, string][] = [
    ['PAYOUTD_API_BASE_URL', 'api', 'baseUrl'],
    ['PAYOUTD_MERCHANT_CODE', 'api', 'merchantCode'],
    ['PAYOUTD_API_KEY', 'api', 'apiKey'],
    ['PAYOUTD_PRIVATE_KEY_FILE', 'api', 'privateKeyFile'],
    ['PAYOUTD_STATE_DIR', 'paths', 'stateDir'],
    ['PAYOUTD_INBOX', 'paths', 'inbox'],
    ['PAYOUTD_OUTBOX', 'paths', 'outbox'],
    ['PAYOUTD_LOG_LEVEL', 'log', 'level'],
  ];
  for (const [variable, section, key] of map) {
    const value = env[variable];
    if (value) set(section, key, value, variable);
  }
  if (env.PAYOUTD_DATABASE_URL) {
    set('database', 'client', 'pg', 'PAYOUTD_DATABASE_URL');
    set('database', 'url', env.PAYOUTD_DATABASE_URL, 'PAYOUTD_DATABASE_URL');
  }
  return o;
}

/** Leaf paths of an override object (`{log: {level: x}}` -> log.level), to name it as the origin of their values. */
function leafPaths(value: unknown, prefix: string[] = []): string[] {
  if (!isPlainObject(value)) return [prefix.join('.')];
  return Object.entries(value).flatMap(([k, v]) => leafPaths(v, [...prefix, k]));
}

let inputSchema: JsonSchemaNode | null = null;

/** The schema's input side as JSON Schema, made once (zod's public converter; types it cannot express are left open). */
function schemaShape(): JsonSchemaNode {
  inputSchema ??= z.toJSONSchema(configSchema, { io: 'input', unrepresentable: 'any' }) as JsonSchemaNode;
  return inputSchema;
}

/** Deep merge of plain objects; `over` wins. */
export function mergeDeep(base: unknown, over: unknown): unknown {
  if (!isPlainObject(base) || !isPlainObject(over)) return over === undefined ? base : over;
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = mergeDeep(base[k], v);
  return out;
}

/** The first two webhooks that share a channel name, if any. */
function sharedWebhookName(webhooks: { url: string; name?: string | undefined }[]): { first: number; later: number; name: string } | null {
  const seen = new Map<string, number>();
  for (const [i, w] of webhooks.entries()) {
    const name = webhookName(w);
    const first = seen.get(name);
    if (first !== undefined) return { first, later: i, name };
    seen.set(name, i);
  }
  return null;
}

/** http or https, what the API client speaks; any `word:rest` parses as some URL, a pasted key included. */
function isHttpUrl(text: string): boolean {
  try {
    const protocol = new URL(text).protocol;
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}

/** A create found absent this soon after its outcome became unknown may still land: no grace is shorter. */
const NOT_FOUND_GRACE_FLOOR_MS = 10_000;

/**
 * What is wrong with submit.notFoundGraceMs, if anything (submit.unsafeShortGrace aside). Only a create's last try
 * can be taken in (earlier ones were refused unprocessed or never connected: src/api/client.ts) and the grace counts
 * from its end, so one try (api.timeoutMs) is the bound: a service that kept that try past the timeout may keep it
 * as long again.
 */
export function notFoundGraceProblem(c: PayoutdConfig): string | null {
  const grace = c.submit.notFoundGraceMs;
  const timeout = c.api.timeoutMs;
  if (grace >= NOT_FOUND_GRACE_FLOOR_MS && grace > timeout) return null;
  return `submit.notFoundGraceMs is ${grace} and api.timeoutMs ${timeout}: a create whose outcome is unknown is sent again when its reference is still absent this long after, and should the first create land later the row is paid twice; the grace must be at least ${NOT_FOUND_GRACE_FLOOR_MS} and more than api.timeoutMs: set submit.notFoundGraceMs to ${Math.max(60_000, 2 * timeout)} or more${grace >= NOT_FOUND_GRACE_FLOOR_MS ? ', or lower api.timeoutMs below it' : ''}`;
}

export function loadConfig(input: LoadConfigInput, overrides: Record<string, unknown> = {}): ResolvedConfig {
  let fromFile: unknown = {};
  let baseDir = input.cwd;
  if (input.file) {
    const file = resolve(input.cwd, input.file);
    if (!existsSync(file)) throw new ConfigError('CONFIG_MISSING', `config file ${file} does not exist`);
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new ConfigError('CONFIG_UNREADABLE', `config file ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    fromFile = parseConfigYaml(text, file, schemaShape());
    // An emptied, cut-short or commented-out file would otherwise be every default: the embedded sandbox in place of
    // the real service (results saying PAID for money that never moved) and no notification channels. An explicit
    // `{}` asks for the defaults in so many words, which no accident writes.
    if (fromFile === null || fromFile === undefined) {
      throw new ConfigError(
        'CONFIG_EMPTY',
        `config file ${file} sets no option (it is empty, or holds only comments): every option would take its default, among them api.baseUrl (the embedded sandbox: no real money moves) and notify (no channels); restore the file, or start without --config and PAYOUTD_CONFIG to run on the defaults`,
      );
    }
    if (!isPlainObject(fromFile)) throw new ConfigError('CONFIG_SYNTAX', `config file ${file} must hold a mapping of options`);
    baseDir = dirname(file);
  }
  const where = input.file ? resolve(input.cwd, input.file) : 'defaults';
  const origins = new Map<string, string>();
  const fromEnv = envOverrides(input.env, origins);
  for (const path of leafPaths(overrides)) origins.set(path, 'command line');
  const merged = mergeDeep(mergeDeep(fromFile, fromEnv), overrides);
  const unknown = unknownOptions(merged, schemaShape());
  const parsed = configSchema.safeParse(merged, { reportInput: true, error: issueMessage });
  const problems = [
    ...unknown.map((u) => `${originOf(u.path, origins, where)}: ${u.path}: ${u.message}`),
    ...(parsed.success ? [] : formatIssues(parsed.error, origins, where, new Set(unknown.map((u) => u.path)))),
  ];
  if (problems.length > 0 || !parsed.success) throw new ConfigError('CONFIG_INVALID', problems.join('\n'));
  const c = parsed.data;
  const abs = (p: string): string => (isAbsolute(p) ? p : resolve(baseDir, p));
  for (const folder of FOLDER_OPTIONS) c.paths[folder] = abs(c.paths[folder]);
  c.paths.approvals = c.paths.approvals ? abs(c.paths.approvals) : join(dirname(c.paths.inbox), 'approvals');
  // Without a config file the first run makes its ./var; with one, a missing folder is a mistake to name.
  c.paths.create ??= input.file === undefined;
  if (c.api.apiKeyFile) c.api.apiKeyFile = abs(c.api.apiKeyFile);
  if (c.api.privateKeyFile) c.api.privateKeyFile = abs(c.api.privateKeyFile);
  if (c.webhook.secretFile) c.webhook.secretFile = abs(c.webhook.secretFile);
  if (c.webhook.tls) c.webhook.tls = { certFile: abs(c.webhook.tls.certFile), keyFile: abs(c.webhook.tls.keyFile) };
  for (const w of c.notify.webhooks) if (w.secretFile) w.secretFile = abs(w.secretFile);
  const email = c.notify.email;
  if (email?.passwordFile) email.passwordFile = abs(email.passwordFile);
  if (email?.caFile) email.caFile = abs(email.caFile);
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
    if (!isHttpUrl(c.api.baseUrl)) {
      // Not a URL, it may be a key pasted one line off: named with where it came from, never quoted.
      throw new ConfigError(
        'CONFIG_INVALID',
        `${originOf('api.baseUrl', origins, where)}: api.baseUrl: must be an http:// or https:// URL, or "embedded" (what it holds is not shown: it may be a secret written in the wrong place)`,
      );
    }
    const missing = (['merchantCode', 'privateKeyFile'] as const).filter((k) => !c.api[k]);
    if (!c.api.apiKey && !c.api.apiKeyFile) missing.push('apiKey' as never);
    if (missing.length > 0) {
      throw new ConfigError(
        'CONFIG_INVALID',
        `api.baseUrl is ${shownUrl(c.api.baseUrl, 'api.baseUrl')}, so api.${missing.join(', api.')} must be set (see config/payoutd.example.yaml)`,
      );
    }
  }
  if (c.webhook.enabled && !c.webhook.secret && !c.webhook.secretFile) {
    throw new ConfigError(
      'CONFIG_INVALID',
      'webhook.enabled is true, so webhook.secret, webhook.secretFile or the credential webhook-secret must be set',
    );
  }
  if (approvalInUse(c.approval, c.limits) && c.approval.approvers.users.length + c.approval.approvers.groups.length === 0) {
    throw new ConfigError(
      'CONFIG_INVALID',
      `${where}: approval.approvers: batches can wait for approval (approval.required or limits.onExceeded), so name at least one user or group who may approve`,
    );
  }
  const t = c.approval.thresholds;
  if (
    c.approval.required === 'above-thresholds' &&
    Object.keys(t.batchTotal).length + Object.keys(t.largestRow).length === 0 &&
    t.rows === undefined
  ) {
    throw new ConfigError(
      'CONFIG_INVALID',
      `${where}: approval.thresholds: approval.required is above-thresholds but no threshold is set, so no batch would ever wait for approval; set approval.thresholds.batchTotal, .largestRow or .rows (or approval.required: always)`,
    );
  }
  const unsigned = c.notify.webhooks.findIndex((w) => !w.secretFile && !w.secretCredential);
  if (unsigned >= 0) {
    throw new ConfigError(
      'CONFIG_INVALID',
      `notify.webhooks.${unsigned}: needs secretFile or secretCredential (its whsec_ signing secret)`,
    );
  }
  const shared = sharedWebhookName(c.notify.webhooks);
  if (shared) {
    throw new ConfigError(
      'CONFIG_INVALID',
      `${where}: notify.webhooks.${shared.later}: its name webhook:${shared.name} is that of notify.webhooks.${shared.first}; give each webhook its own name (delivery records and metrics are kept by name, so the second would never be sent an event)`,
    );
  }
  if (c.instance.leaseMs <= 2 * c.api.timeoutMs) {
    // A create renews its lease only when less than half is left before a try (src/submit): a try must fit in that half.
    throw new ConfigError(
      'CONFIG_INVALID',
      `${where}: instance.leaseMs is ${c.instance.leaseMs} and api.timeoutMs ${c.api.timeoutMs}: the lease must be more than twice the timeout, or a create still waiting for its answer is taken for lost and queried before it lands; raise instance.leaseMs or lower api.timeoutMs`,
    );
  }
  const grace = notFoundGraceProblem(c);
  if (grace && !c.submit.unsafeShortGrace) throw new ConfigError('CONFIG_INVALID', `${where}: ${grace}`);
  if (c.poll.minIntervalMs > c.poll.maxIntervalMs) {
    // Checked here for SIGHUP too: a reload is this same load, refused whole when it fails.
    throw new ConfigError(
      'CONFIG_INVALID',
      `${where}: poll.minIntervalMs is ${c.poll.minIntervalMs} and poll.maxIntervalMs ${c.poll.maxIntervalMs}: a payout's polls start minIntervalMs apart and double up to maxIntervalMs, so the minimum cannot be above the maximum; lower poll.minIntervalMs or raise poll.maxIntervalMs`,
    );
  }
  if (c.database.client === 'pg' && !c.database.url)
    throw new ConfigError('CONFIG_INVALID', 'database.url is required when database.client is pg');
  const databaseFile = c.database.filename ? abs(c.database.filename) : join(c.paths.stateDir, 'payoutd.sqlite');
  const fromEnvironment = [...origins]
    .filter(([, from]) => from.startsWith('PAYOUTD_'))
    .map(([option, variable]) => ({ option, variable }));
  return {
    ...c,
    source: input.file ? resolve(input.cwd, input.file) : null,
    databaseFile,
    credentialsDir: credentials ?? null,
    fromEnvironment,
    fileSections: isPlainObject(fromFile) ? Object.keys(fromFile) : [],
  };
}

/** A secret given inline or as a file (never logged; errors name the option only). */
function readSecret(
  value: string | undefined,
  file: string | undefined,
  option: string,
  missing: string,
  credentialsDir: string | null,
): string {
  if (value) return value;
  if (file) {
    let read: SecretFileRead;
    try {
      read = { path: file, mode: statSync(file).mode, text: readFileSync(file, 'utf8') };
    } catch (err) {
      throw new ConfigError(
        'SECRET_UNREADABLE',
        `${option}File ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
      );
    }
    return secretInFile(read, `${option}File`, credentialsDir);
  }
  throw new ConfigError('CONFIG_INVALID', missing);
}

/** A secret file as read: its path, its mode (statSync) and its text. */
export interface SecretFileRead {
  path: string;
  mode: number;
  text: string;
}

/**
 * The secret a file holds, trimmed; `named` is the option that names the file. Every secret file but the private
 * key comes here. SECRET_PERMISSIONS when group or others can read it (the private key's rule, src/signing/keys.ts):
 * a secret others on the host can read is not one. SECRET_EMPTY when it holds none: an empty secret would fail
 * later as a wrong one (a refused login, a bad signature).
 */
export function secretInFile(read: SecretFileRead, named: string, credentialsDir: string | null): string {
  const open = secretFileModeProblem(read.path, read.mode, credentialsDir);
  if (open !== null) throw new ConfigError('SECRET_PERMISSIONS', `${named} ${read.path} ${open}`);
  const secret = read.text.trim();
  if (secret === '')
    throw new ConfigError(
      'SECRET_EMPTY',
      `${named} ${read.path} is empty (or holds only white space): write the secret into that file, or point ${named} at the file that holds it`,
    );
  return secret;
}

/** The API key (header SvcApiKey). */
export function readApiKey(c: ResolvedConfig): string {
  return readSecret(
    c.api.apiKey,
    c.api.apiKeyFile,
    'api.apiKey',
    'no API key configured (api.apiKey, api.apiKeyFile, PAYOUTD_API_KEY or credential api-key)',
    c.credentialsDir,
  );
}

/** The merchant's webhook secret. */
export function readWebhookSecret(c: ResolvedConfig): string {
  return readSecret(
    c.webhook.secret,
    c.webhook.secretFile,
    'webhook.secret',
    'no webhook secret configured (webhook.secret, webhook.secretFile or credential webhook-secret)',
    c.credentialsDir,
  );
}
