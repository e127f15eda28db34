/**
 * Secrets in and around the configuration never reach a message, and secret files are private. A secret written
 * inline that YAML misreads (`*…` an alias, `!…` a tag, `@…` reserved) is a CONFIG_SYNTAX said by line, column and
 * option, with nothing of the line quoted and nothing printed by the YAML library itself (its warning went to
 * stderr, the journal under systemd, and the key was read as empty). Every secret file (api.apiKeyFile,
 * webhook.secretFile, the notify secret and password files) is refused, as the private key is, when group or others
 * can read it, except in systemd's credentials directory. An api.baseUrl that is no URL is named with where it came
 * from, its text not shown. The CLI and SIGHUP side is test/e2e/config-secrets.test.ts.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig, readApiKey, readWebhookSecret, type ResolvedConfig } from '../../src/config/index.js';
import { ConfigError } from '../../src/domain/errors.js';
import { readSecretFile } from '../../src/notify/signing.js';

const dir = mkdtempSync(join(tmpdir(), 'payoutd-config-secrets-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

const SECRET = 'Zq9SECRETkey123';

/** A config for the real service with `apiLine` as the api.apiKey line (line 5, the value at column 11). */
function serviceConfig(apiLine: string): string {
  return [
    'api:',
    '  baseUrl: https://payouts.example.com',
    '  merchantCode: M123',
    '  privateKeyFile: merchant.pem',
    `  ${apiLine}`,
    `paths: { inbox: ${dir}, outbox: ${dir}, stateDir: ${dir} }`,
    '',
  ].join('\n');
}

function load(yaml: string, env: NodeJS.ProcessEnv = {}, overrides: Record<string, unknown> = {}): ResolvedConfig {
  const file = join(dir, `c${++files}.yaml`);
  writeFileSync(file, yaml);
  return loadConfig({ file, env, cwd: dir }, overrides);
}

function refusal(act: () => unknown): ConfigError {
  try {
    act();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('no refusal');
}

/** Process warnings emitted meanwhile (the YAML library's default output goes through process.emitWarning). */
const warnings: string[] = [];
const onWarning = (w: Error): void => void warnings.push(`${w.name}: ${w.message}`);
beforeEach(() => {
  warnings.length = 0;
  process.on('warning', onWarning);
});
afterEach(() => {
  process.off('warning', onWarning);
});

/** Lets a process warning emitted during the test arrive (they are emitted on the next tick). */
async function settled(): Promise<string[]> {
  await new Promise((resolve) => setImmediate(resolve));
  return warnings;
}

describe('config: an inline secret YAML misreads', () => {
  it.each([
    [
      'an alias (*)',
      `*${SECRET}`,
      11,
      'a value starts with "*", which YAML takes for a reference to an anchor (&name) set before it, and none is; put the value in quotes',
    ],
    [
      'a tag (!)',
      `!${SECRET}`,
      11,
      'a value starts with "!", which YAML takes for a type tag it does not know; put the value in quotes (YAML TAG_RESOLVE_FAILED)',
    ],
    [
      'a reserved character (@)',
      `@${SECRET}`,
      11,
      'a value starts with a character YAML reserves (@, ` or %); put the value in quotes (YAML BAD_SCALAR_START)',
    ],
    ['a block scalar header (|)', `|${SECRET}`, 12, expect.stringContaining('put the value in quotes (YAML UNEXPECTED_TOKEN)')],
    ['a bad escape', `"${SECRET}\\q"`, 27, expect.stringContaining('(YAML BAD_DQ_ESCAPE)')],
  ])('%s: CONFIG_SYNTAX by line, column and option; nothing of the line is said or printed', async (_what, value, column, words) => {
    const file = join(dir, `c${files + 1}.yaml`);
    const err = refusal(() => load(serviceConfig(`apiKey: ${value}`)));
    expect(err.code).toBe('CONFIG_SYNTAX');
    const place = `config file ${file} is not valid YAML at line 5, column ${column} (api.apiKey): `;
    expect(err.message.slice(0, place.length)).toBe(place);
    expect(err.message.slice(place.length)).toEqual(words);
    expect(err.message).not.toContain(SECRET);
    expect(await settled()).toEqual([]);
  });

  it('a key past the options is not named: it may be the secret, read as a mapping', async () => {
    const err = refusal(() => load(serviceConfig(`apiKey: ${SECRET}:x: y`)));
    expect(err.code).toBe('CONFIG_SYNTAX');
    expect(err.message).toContain('at line 5, column 11 (api.apiKey): ');
    expect(err.message).not.toContain(SECRET);
    expect(await settled()).toEqual([]);
  });

  it('a list position is part of the option named', () => {
    const yaml = `notify:\n  webhooks:\n    - url: https://erp.example.com/hook\n      secretFile: !${SECRET}\n`;
    const err = refusal(() => load(yaml));
    expect(err.message).toContain('at line 4, column 19 (notify.webhooks.0.secretFile): ');
    expect(err.message).not.toContain(SECRET);
  });

  it('the same secret in quotes loads, as written', async () => {
    expect(load(serviceConfig(`apiKey: "*${SECRET}"`)).api.apiKey).toBe(`*${SECRET}`);
    expect(load(serviceConfig(`apiKey: '!${SECRET}'`)).api.apiKey).toBe(`!${SECRET}`);
    expect(await settled()).toEqual([]);
  });

  it('an alias to an anchor set before it still works', () => {
    const yaml = `paths: { inbox: &folder ${dir}, outbox: *folder, stateDir: *folder }\n`;
    expect(load(yaml).paths.outbox).toBe(dir);
  });
});

describe('config: secret files group or others can read', () => {
  /** The secret in the file `path` at `mode` (a write keeps the mode of a file already there). */
  function secretFile(path: string, mode: number): string {
    writeFileSync(path, `${SECRET}\n`);
    chmodSync(path, mode);
    return path;
  }

  const keyFile = join(dir, 'api-key');
  const webhookSecret = join(dir, 'webhook-secret');

  function withFiles(env: NodeJS.ProcessEnv = {}): ResolvedConfig {
    return load(
      [
        'api:',
        '  baseUrl: https://payouts.example.com',
        '  merchantCode: M123',
        '  privateKeyFile: merchant.pem',
        `  apiKeyFile: ${keyFile}`,
        `webhook: { enabled: true, secretFile: ${webhookSecret} }`,
        `paths: { inbox: ${dir}, outbox: ${dir}, stateDir: ${dir} }`,
        '',
      ].join('\n'),
      env,
    );
  }

  it.each([
    ['0644', 0o644],
    ['0640', 0o640],
    ['0604', 0o604],
  ] as const)('mode %s: SECRET_PERMISSIONS naming the option, the file, its mode and the chmod; never the secret', (label, mode) => {
    secretFile(keyFile, mode);
    secretFile(webhookSecret, mode);
    const c = withFiles();
    const api = refusal(() => readApiKey(c));
    expect(api.code).toBe('SECRET_PERMISSIONS');
    expect(api.message).toBe(
      `api.apiKeyFile ${keyFile} has mode ${label}; it must not be readable by group or others (chmod 600 ${keyFile})`,
    );
    const webhook = refusal(() => readWebhookSecret(c));
    expect(webhook.code).toBe('SECRET_PERMISSIONS');
    expect(webhook.message).toBe(
      `webhook.secretFile ${webhookSecret} has mode ${label}; it must not be readable by group or others (chmod 600 ${webhookSecret})`,
    );
    expect(`${api.message}${webhook.message}`).not.toContain(SECRET);
  });

  it('mode 0600 and 0400 are read', () => {
    secretFile(keyFile, 0o600);
    secretFile(webhookSecret, 0o400);
    const c = withFiles();
    expect(readApiKey(c)).toBe(SECRET);
    expect(readWebhookSecret(c)).toBe(SECRET);
  });

  it("systemd's credentials directory is exempt, as for the private key", () => {
    const credentials = join(dir, 'credentials');
    mkdirSync(credentials, { recursive: true });
    secretFile(join(credentials, 'api-key'), 0o644);
    const c = load(
      `api: { baseUrl: https://payouts.example.com, merchantCode: M123, privateKeyFile: merchant.pem }\npaths: { inbox: ${dir}, outbox: ${dir}, stateDir: ${dir} }\n`,
      { CREDENTIALS_DIRECTORY: credentials },
    );
    expect(c.api.apiKeyFile).toBe(join(credentials, 'api-key'));
    expect(readApiKey(c)).toBe(SECRET);
  });

  it('a notify secret or password file: refused the same way; its credential is exempt', () => {
    const file = secretFile(join(dir, 'smtp-password'), 0o640);
    const err = refusal(() => readSecretFile('notify.email.password', file, undefined, null));
    expect(err.code).toBe('SECRET_PERMISSIONS');
    expect(err.message).toBe(
      `notify.email.passwordFile ${file} has mode 0640; it must not be readable by group or others (chmod 600 ${file})`,
    );
    chmodSync(file, 0o600);
    expect(readSecretFile('notify.email.password', file, undefined, null)).toBe(SECRET);
    const credentials = join(dir, 'credentials');
    mkdirSync(credentials, { recursive: true });
    secretFile(join(credentials, 'smtp-password'), 0o644);
    expect(readSecretFile('notify.email.password', undefined, 'smtp-password', credentials)).toBe(SECRET);
  });
});

describe('config: an api.baseUrl that is not a URL', () => {
  const rest = `api: { merchantCode: M123, privateKeyFile: merchant.pem, apiKey: k }\npaths: { inbox: ${dir}, outbox: ${dir}, stateDir: ${dir} }\n`;
  const words =
    'api.baseUrl: must be an http:// or https:// URL, or "embedded" (what it holds is not shown: it may be a secret written in the wrong place)';

  it('set by PAYOUTD_API_BASE_URL: names the variable, not the value', () => {
    const err = refusal(() => load(rest, { PAYOUTD_API_BASE_URL: 'sk_live_NOTAURL' }));
    expect(err.code).toBe('CONFIG_INVALID');
    expect(err.message).toBe(`PAYOUTD_API_BASE_URL: ${words}`);
  });

  it('set in the file or on the command line: names that, not the value', () => {
    const file = join(dir, `c${files + 1}.yaml`);
    expect(refusal(() => load(rest.replace('api: {', 'api: { baseUrl: sk_live_NOTAURL,'))).message).toBe(`${file}: ${words}`);
    expect(refusal(() => load(rest, {}, { api: { baseUrl: 'sk_live:NOTAURL' } })).message).toBe(`command line: ${words}`);
  });

  it('a URL is shown without its user, password or query when other api options are missing', () => {
    const err = refusal(() =>
      load(
        `api: { baseUrl: "https://gw:S3cret@payouts.example.com/v?token=S3cret" }\npaths: { inbox: ${dir}, outbox: ${dir}, stateDir: ${dir} }\n`,
      ),
    );
    expect(err.message).toBe(
      'api.baseUrl is https://payouts.example.com/v, so api.merchantCode, api.privateKeyFile, api.apiKey must be set (see config/payoutd.example.yaml)',
    );
  });
});
