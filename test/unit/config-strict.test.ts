/**
 * The configuration is strict: every key written must be an option (at any
 * depth, in records' entries and lists too), a key that is not is named with
 * the nearest valid key at its level, a removed key says what to do, and
 * every value out of range names its option and what it got. Environment
 * overrides and command-line overrides keep working and are named as the
 * origin of a bad value. The shipped example configuration loads as it is.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig, type ResolvedConfig } from '../../src/config/index.js';
import { editDistance, nearestKey } from '../../src/config/strict.js';
import { ConfigError } from '../../src/domain/errors.js';

const dir = mkdtempSync(join(tmpdir(), 'payoutd-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

function load(yaml: string, env: NodeJS.ProcessEnv = {}, overrides: Record<string, unknown> = {}): ResolvedConfig {
  const file = join(dir, `c${++files}.yaml`);
  writeFileSync(file, yaml);
  return loadConfig({ file, env, cwd: dir }, overrides);
}

/** The problem lines of a config that must not load, without the file name in front. */
function problems(yaml: string, env: NodeJS.ProcessEnv = {}): string[] {
  try {
    load(yaml, env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).message.split('\n').map((l) => l.replace(/^\/\S+\.yaml: /, ''));
  }
  throw new Error('the config loaded');
}

describe('config: unknown options', () => {
  it('names each unknown key with the nearest valid one at its level', () => {
    expect(problems('submit:\n  concurency: 4\nlog:\n  levle: info\n')).toEqual([
      'submit.concurency: unknown option; did you mean submit.concurrency?',
      'log.levle: unknown option; did you mean log.level?',
    ]);
    expect(problems('inbox:\n  stableForMS: 100\n')).toEqual(['inbox.stableForMS: unknown option; did you mean inbox.stableForMs?']);
  });

  it('lists the valid keys when none is near', () => {
    expect(problems('foo: bar\n')).toEqual([
      'foo: unknown option (top-level options: api, approval, batch, console, database, inbox, instance, limits, log, metrics, notify, outbox, paths, poll, retention, sandbox, shutdownGraceMs, startup, submit, webhook)',
    ]);
  });

  it('looks into nested sections, record entries and lists', () => {
    expect(problems('batch:\n  format:\n    delimter: ";"\n')).toEqual([
      'batch.format.delimter: unknown option; did you mean batch.format.delimiter?',
    ]);
    expect(problems('api:\n  breaker:\n    probe: { baseMs: 10, maxMS: 20 }\n')).toEqual([
      'api.breaker.probe.maxMS: unknown option; did you mean api.breaker.probe.maxMs?',
    ]);
    expect(problems('api:\n  businessCodes:\n    "3001": { kind: rejected, waitForBalnce: true }\n')).toEqual([
      'api.businessCodes.3001.waitForBalnce: unknown option; did you mean api.businessCodes.3001.waitForBalance?',
    ]);
    // Keys of a record are free (a business code, a column alias), their values' keys are not.
    expect(load('api:\n  businessCodes:\n    "3001": { kind: rejected }\n').api.businessCodes['3001']).toEqual({ kind: 'rejected' });
  });

  it('says of the removed batch.read what to do', () => {
    expect(problems('batch:\n  read:\n    workers: 2\n')).toEqual([
      'batch.read: removed option: a batch file is now read once, whole, on one reader thread, and there is nothing to tune; delete it',
    ]);
  });
});

describe('config: values out of range name their option and what they got', () => {
  it('ports, counts, enums, types', () => {
    expect(problems('metrics:\n  port: 99999\n')).toEqual([
      'metrics.port: must be a port number 1-65535 (or 0 for any free port), got 99999',
    ]);
    expect(problems('webhook:\n  port: -1\n')).toEqual(['webhook.port: must be a port number 1-65535 (or 0 for any free port), got -1']);
    expect(problems('submit:\n  concurrency: 0\n')).toEqual(['submit.concurrency: must be at least 1, got 0']);
    expect(problems('log:\n  level: verbose\n')).toEqual([
      'log.level: must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"',
    ]);
    expect(problems('poll:\n  tickMs: "1000"\n')).toEqual(['poll.tickMs: must be a number, got text']);
  });

  it('a lease must outlast two tries of a call: instance.leaseMs more than twice api.timeoutMs', () => {
    expect(problems('instance:\n  leaseMs: 30000\n')).toEqual([
      'instance.leaseMs is 30000 and api.timeoutMs 15000: the lease must be more than twice the timeout, or a create still waiting for its answer is taken for lost and queried before it lands; raise instance.leaseMs or lower api.timeoutMs',
    ]);
    expect(problems('api:\n  timeoutMs: 60000\n')[0]).toMatch(/^instance\.leaseMs is 120000 and api\.timeoutMs 60000: /);
    expect(load('instance:\n  leaseMs: 30001\n').instance.leaseMs).toBe(30001);
    expect(load('instance:\n  leaseMs: 5000\napi:\n  timeoutMs: 2000\n').api.timeoutMs).toBe(2000);
  });

  it('submit.notFoundGraceMs: at least 10 s and more than api.timeoutMs, or a create that lands late is paid twice', () => {
    expect(problems('submit:\n  notFoundGraceMs: 0\n')).toEqual([
      'submit.notFoundGraceMs is 0 and api.timeoutMs 15000: a create whose outcome is unknown is sent again when its reference is still absent this long after, and should the first create land later the row is paid twice; the grace must be at least 10000 and more than api.timeoutMs: set submit.notFoundGraceMs to 60000 or more',
    ]);
    // Not above the longest one try of a create waits for its answer, or under the floor however short that is.
    expect(problems('submit:\n  notFoundGraceMs: 15000\n')[0]).toMatch(/^submit\.notFoundGraceMs is 15000 and api\.timeoutMs 15000: /);
    expect(problems('submit:\n  notFoundGraceMs: 9999\napi:\n  timeoutMs: 1500\n')[0]).toMatch(/^submit\.notFoundGraceMs is 9999 /);
    // The default grace with a long timeout: the advice fits the timeout.
    expect(problems('api:\n  timeoutMs: 60000\ninstance:\n  leaseMs: 200000\n')[0]).toMatch(
      /^submit\.notFoundGraceMs is 60000 and api\.timeoutMs 60000: .* set submit\.notFoundGraceMs to 120000 or more, or lower api\.timeoutMs below it$/,
    );
    expect(load('{}\n').submit.notFoundGraceMs).toBe(60_000);
    expect(load('submit:\n  notFoundGraceMs: 15001\n').submit.notFoundGraceMs).toBe(15_001);
    expect(load('submit:\n  notFoundGraceMs: 10000\napi:\n  timeoutMs: 1500\n').submit.notFoundGraceMs).toBe(10_000);
    // From the command line too (a SIGHUP reload is this same load).
    expect(() => load('{}\n', {}, { submit: { notFoundGraceMs: 500 } })).toThrow(/submit\.notFoundGraceMs is 500 /);
    // Test sandboxes only, said so in the option's name.
    expect(load('submit:\n  notFoundGraceMs: 0\n  unsafeShortGrace: true\n').submit.notFoundGraceMs).toBe(0);
  });

  it('approval.required: above-thresholds needs a threshold, or no batch would ever wait', () => {
    const approvers = '  approvers: { users: [alice] }\n';
    expect(problems(`approval:\n  required: above-thresholds\n${approvers}`)).toEqual([
      'approval.thresholds: approval.required is above-thresholds but no threshold is set, so no batch would ever wait for approval; set approval.thresholds.batchTotal, .largestRow or .rows (or approval.required: always)',
    ]);
    expect(
      problems(`approval:\n  required: above-thresholds\n  thresholds: { batchTotal: {}, largestRow: {} }\n${approvers}`),
    ).toHaveLength(1);
    for (const threshold of ['{ rows: 100 }', '{ batchTotal: { PHP: "500000" } }', '{ largestRow: { PHP: "100000" } }']) {
      expect(load(`approval:\n  required: above-thresholds\n  thresholds: ${threshold}\n${approvers}`).approval.required).toBe(
        'above-thresholds',
      );
    }
  });

  it('poll.minIntervalMs is not above poll.maxIntervalMs, from the file or the command line', () => {
    expect(problems('poll:\n  minIntervalMs: 900000\n  maxIntervalMs: 1000\n')).toEqual([
      "poll.minIntervalMs is 900000 and poll.maxIntervalMs 1000: a payout's polls start minIntervalMs apart and double up to maxIntervalMs, so the minimum cannot be above the maximum; lower poll.minIntervalMs or raise poll.maxIntervalMs",
    ]);
    expect(problems('poll:\n  minIntervalMs: 400000\n')[0]).toMatch(/^poll\.minIntervalMs is 400000 and poll\.maxIntervalMs 300000: /);
    expect(() => load('{}\n', {}, { poll: { maxIntervalMs: 1000 } })).toThrow(/poll\.minIntervalMs is 2000 and poll\.maxIntervalMs 1000: /);
    expect(load('poll:\n  minIntervalMs: 5000\n  maxIntervalMs: 5000\n').poll.maxIntervalMs).toBe(5000);
  });

  it('the .xlsx time zone is an IANA name; retention days are whole days, unset by default', () => {
    expect(load('{}\n').outbox).toMatchObject({ xlsx: true, timeZone: 'UTC' });
    expect(load('outbox:\n  timeZone: Asia/Manila\n').outbox.timeZone).toBe('Asia/Manila');
    expect(problems('outbox:\n  timeZone: Mars/Olympus\n')[0]).toMatch(
      /^outbox\.timeZone: must be an IANA time zone name such as UTC or Asia\/Manila/,
    );
    expect(load('{}\n').retention).toEqual({ pruneEveryMs: 3_600_000 });
    expect(load('retention:\n  days: 90\n').retention.days).toBe(90);
    expect(problems('retention:\n  days: 0\n')).toEqual(['retention.days: must be at least 1, got 0']);
  });

  it('notify: an event type unknown, a webhook without its signing secret, a URL that is not http(s)', () => {
    const url = 'https://erp.example.com/hook?token=abc';
    expect(problems(`notify:\n  webhooks:\n    - url: ${url}\n      secretFile: /s\n      events: [helt]\n`)[0]).toMatch(
      /^notify\.webhooks\.0\.events\.0: must be one of received, accepted, rejected/,
    );
    const unsigned = problems(`notify:\n  webhooks:\n    - url: ${url}\n`);
    expect(unsigned).toEqual(['notify.webhooks.0: needs secretFile or secretCredential (its whsec_ signing secret)']);
    expect(problems('notify:\n  webhooks:\n    - { url: "ftp://x.example", secretFile: /s }\n')[0]).toMatch(/^notify\.webhooks\.0\.url: /);
  });

  it('notify: webhook names are unique (delivery records and metrics are kept by name); the default is the host', () => {
    const hook = (url: string, name?: string): string => `    - { url: "${url}", secretFile: /s${name ? `, name: ${name}` : ''} }\n`;
    const two = (a: string, b: string): string => `notify:\n  webhooks:\n${a}${b}`;
    expect(problems(two(hook('http://h/hooks?tenant=erp'), hook('http://h/hooks?tenant=treasury')))).toEqual([
      'notify.webhooks.1: its name webhook:h is that of notify.webhooks.0; give each webhook its own name (delivery records and metrics are kept by name, so the second would never be sent an event)',
    ]);
    // Another path on the same host is the same default name: the path is not part of it (it may hold a token).
    expect(problems(two(hook('https://erp.example.com:8443/a'), hook('https://erp.example.com:8443/b')))[0]).toMatch(
      /^notify\.webhooks\.1: its name webhook:erp\.example\.com:8443 is that of notify\.webhooks\.0; /,
    );
    expect(problems(two(hook('http://a.example/x', 'erp'), hook('http://b.example/y', 'erp')))[0]).toMatch(
      /^notify\.webhooks\.1: its name webhook:erp is that of notify\.webhooks\.0; /,
    );
    const named = load(two(hook('http://h/hooks?tenant=erp', 'erp'), hook('http://h/hooks?tenant=treasury', 'treasury')));
    expect(named.notify.webhooks.map((w) => w.name)).toEqual(['erp', 'treasury']);
  });

  it('webhook.signedPath is a URL path starting with /', () => {
    expect(load('webhook:\n  signedPath: /hooks/payout\n').webhook.signedPath).toBe('/hooks/payout');
    expect(load('{}\n').webhook.signedPath).toBeUndefined();
    for (const bad of ['hooks/payout', '/hooks?x=1', '"/with space"'])
      expect(problems(`webhook:\n  signedPath: ${bad}\n`)).toEqual(['webhook.signedPath: must be a URL path starting with / (no query)']);
  });

  it('api.payoutQuery and api.balance: the contract by default; field names not empty, the path a URL path', () => {
    const { payoutQuery, balance } = load('{}\n').api;
    expect(payoutQuery).toMatchObject({ payoutIdsField: 'payoutIds', listField: 'payouts' });
    expect(payoutQuery.recordFields).toMatchObject({ payoutId: 'payoutId', completeTime: 'completeTime' });
    expect(balance).toEqual({
      path: '/apis/v1/balance/query',
      listField: 'balances',
      currencyField: 'currency',
      availableField: 'available',
    });
    const set = load(
      'api:\n  payoutQuery: { listField: records, recordFields: { status: state } }\n  balance: { path: /apis/v1/balance }\n',
    ).api;
    expect([set.payoutQuery.listField, set.payoutQuery.recordFields.status, set.balance.path]).toEqual([
      'records',
      'state',
      '/apis/v1/balance',
    ]);
    for (const [yaml, said] of [
      ['balance: { path: apis/v1/balance }', 'api.balance.path: must be a URL path starting with / (no query)'],
      ['payoutQuery: { listField: "" }', 'api.payoutQuery.listField: must be a JSON field name (not empty)'],
      ['payoutQuery: { recordFields: { status: payoutId } }', 'api.payoutQuery.recordFields: each record field needs a name of its own'],
      [
        'payoutQuery: { payoutIdsField: merchantReferenceIds }',
        'api.payoutQuery: payoutIdsField must differ from merchantReferenceIds (the by-reference form)',
      ],
    ])
      expect(problems(`api:\n  ${yaml}\n`)).toEqual([said]);
  });

  it('batch.balanceCheck.feePerPayout: decimal text per stablecoin, never a float', () => {
    const fees = (yaml: string): string => `batch:\n  balanceCheck:\n    feePerPayout: ${yaml}\n`;
    expect(load('{}\n').batch.balanceCheck.feePerPayout).toEqual({});
    expect(load(fees('{ USDT: "0.5", USDC: 1 }')).batch.balanceCheck.feePerPayout).toEqual({ USDT: '0.5', USDC: '1' });
    expect(problems(fees('{ USDT: 0.5 }'))).toEqual([
      'batch.balanceCheck.feePerPayout.USDT: an amount with a fraction must be quoted, e.g. "2500.50" (money is never read as a float), got 0.5',
    ]);
    expect(problems(fees('{ USDT: -1 }'))).toEqual([
      'batch.balanceCheck.feePerPayout.USDT: expected a plain decimal such as 100000 or 2500.50 (quoted), got -1',
    ]);
    expect(problems(fees('{ USDT: "1e3" }'))).toEqual([
      'batch.balanceCheck.feePerPayout.USDT: expected a plain decimal such as 100000 or 2500.50 (quoted)',
    ]);
    expect(problems(fees('{ usdt: "1" }'))).toEqual([
      'batch.balanceCheck.feePerPayout.usdt: a key must be an upper-case stablecoin code such as USDT',
    ]);
  });

  it('batch.rules.requiredFields keeps the reference, both currencies and the amount required', () => {
    const others = [
      'sender.firstName',
      'sender.lastName',
      'sender.country',
      'sender.idType',
      'beneficiary.accountName',
      'beneficiary.accountNumber',
      'beneficiary.bankCode',
    ];
    const required = (fields: string[]): string => `batch:\n  rules:\n    requiredFields: [${fields.join(', ')}]\n`;
    const must = (missing: string): string =>
      `batch.rules.requiredFields: leaves out ${missing}; merchantReferenceId, deductionCurrency, payoutCurrency and payoutAmount must stay required, as no payout can be created without them (only sender and beneficiary fields may be left out); add ${missing} back to the list`;
    expect(problems(required(['merchantReferenceId', 'deductionCurrency', 'payoutCurrency', ...others]))).toEqual([must('payoutAmount')]);
    expect(problems(required(['payoutAmount', ...others]))).toEqual([must('merchantReferenceId, deductionCurrency and payoutCurrency')]);
    // Sender and beneficiary fields may be optional (sender.idValue is left out here).
    const loaded = load(required(['merchantReferenceId', 'deductionCurrency', 'payoutCurrency', 'payoutAmount', ...others]));
    expect(loaded.batch.rules.requiredFields).not.toContain('sender.idValue');
  });

  it('never quotes a text value back (it could be a secret put in the wrong place)', () => {
    expect(problems('api:\n  apiKey: 12345\n')).toEqual(['api.apiKey: must be text, got a number']);
    expect(problems('api:\n  apiKey: [secret-text]\n').join('\n')).not.toContain('secret-text');
  });
});

describe('config: environment and command line', () => {
  it('overrides still apply, and a bad value from the environment names its variable', () => {
    const c = load('log:\n  level: info\n', { PAYOUTD_LOG_LEVEL: 'debug', PAYOUTD_INBOX: '/srv/in' }, { submit: { concurrency: 3 } });
    expect([c.log.level, c.paths.inbox, c.submit.concurrency]).toEqual(['debug', '/srv/in', 3]);
    expect(problems('{}\n', { PAYOUTD_LOG_LEVEL: 'loud' })).toEqual([
      'PAYOUTD_LOG_LEVEL: log.level: must be one of fatal, error, warn, info, debug, trace, silent, got "loud"',
    ]);
  });
});

describe('config: folders', () => {
  it('paths.create defaults to yes without a config file, no with one', () => {
    expect(loadConfig({ env: {}, cwd: dir }).paths.create).toBe(true);
    expect(load('{}\n').paths.create).toBe(false);
    expect(load('paths:\n  create: true\n').paths.create).toBe(true);
  });
});

describe('config: the shipped example', () => {
  it('loads as it is', () => {
    const example = fileURLToPath(new URL('../../config/payoutd.example.yaml', import.meta.url));
    const c = loadConfig({ file: example, env: {}, cwd: dir });
    expect(c.api.baseUrl).toBe('https://payouts.example.com');
  });
});

describe('config: nearest key', () => {
  it('counts a swap of neighbours as one edit and ignores case', () => {
    expect(editDistance('levle', 'level')).toBe(1);
    expect(editDistance('concurency', 'concurrency')).toBe(1);
    expect(editDistance('STABLEFORMS', 'stableForMs')).toBe(0);
    expect(nearestKey('foo', ['log', 'api'])).toBeNull();
    expect(nearestKey('tickMS', ['tickMs', 'minIntervalMs'])).toBe('tickMs');
  });
});
