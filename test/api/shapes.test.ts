/**
 * What the spec leaves "not shown" of the payout query and the balance listing (contract.md: Payout query,
 * Balance) are settings: the by-payoutId request field, the answer's list field, each record's fields, the
 * balance path and its answer's fields. A client set as the service answers works, through a config too; a
 * client set otherwise fails naming the setting to change, and never reads a query answer as "no payouts".
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ENDPOINTS, type PayoutApiClient } from '../../src/api/index.js';
import { loadConfig } from '../../src/config/index.js';
import { connectApi, type ApiConnection } from '../../src/daemon/services.js';
import { systemClock } from '../../src/domain/clock.js';
import { balanceShapeSchema, payoutQueryShapeSchema } from '../../src/domain/wire-shapes.js';
import { createLogger } from '../../src/log/index.js';
import { startSandbox } from '../../src/sandbox/index.js';
import { merchant } from '../sandbox/harness.js';
import { API_KEY, apiErrorOf, closeAll, MERCHANT, payoutRequest, startEnv, testKeys } from './helpers.js';

const QUERY = { payoutIdsField: 'ids', listField: 'records', recordFields: { payoutId: 'id', status: 'state', payoutAmount: 'amount' } };
const BALANCE = { path: '/apis/v1/balance', listField: 'accounts', currencyField: 'asset', availableField: 'free' };
const BALANCE_AT = '/apis/v1/balance';

const dir = mkdtempSync(join(tmpdir(), 'payoutd-shapes-'));
const connections: ApiConnection[] = [];
afterEach(async () => {
  await Promise.all(connections.splice(0).map((c) => c.close()));
  await closeAll();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Create, both query forms and the balance, through `client`, which must be set as its service answers. */
async function roundTrip(client: PayoutApiClient): Promise<void> {
  const created = await client.createPayout(payoutRequest({ payoutAmount: '1500.50' }));
  const byId = await client.queryByPayoutIds([created.payoutId]);
  expect(byId.unread).toEqual([]);
  expect(byId.records).toEqual([
    expect.objectContaining({ payoutId: created.payoutId, status: 'PENDING', payoutAmount: '1500.5', deductionAmount: '27.175556' }),
  ]);
  expect(await client.queryByReferences([created.merchantReferenceId])).toEqual(byId);
  expect((await client.balances()).map((b) => b.currency).sort()).toEqual(['USDC', 'USDT']);
}

describe('set as the service answers', () => {
  it('queries by payoutId under its field, reads records under their names, and the balance at its path', async () => {
    const { client, proxy, sandbox } = await startEnv({
      sandbox: { payoutQuery: QUERY, balance: BALANCE },
      client: { payoutQuery: payoutQueryShapeSchema.parse(QUERY), balance: balanceShapeSchema.parse(BALANCE) },
    });
    await roundTrip(client);
    const [payout] = sandbox.ledger();
    const bodies = proxy.forwarded.filter((f) => f.url === ENDPOINTS.queryPayouts).map((f) => f.body.toString('utf8'));
    expect(bodies).toEqual([`{"ids":["${payout?.payoutId}"]}`, `{"merchantReferenceIds":["${payout?.merchantReferenceId}"]}`]);
    expect(proxy.forwarded.filter((f) => f.url === BALANCE_AT)).toHaveLength(1);
    expect(proxy.forwarded.filter((f) => f.url === ENDPOINTS.balances)).toEqual([]);
  });

  it('from the config: api.payoutQuery and api.balance reach the client', async () => {
    const { main } = testKeys();
    const sandbox = await startSandbox({
      merchants: [merchant(main, { merchantCode: MERCHANT, apiKey: API_KEY })],
      payoutQuery: QUERY,
      balance: BALANCE,
    });
    const keyFile = join(dir, 'merchant.pem');
    writeFileSync(keyFile, main.privateKeyPem, { mode: 0o600 });
    const config = loadConfig(
      { env: {}, cwd: dir },
      {
        paths: { stateDir: dir, inbox: dir, outbox: dir },
        api: {
          baseUrl: sandbox.url,
          merchantCode: MERCHANT,
          apiKey: API_KEY,
          privateKeyFile: keyFile,
          payoutQuery: QUERY,
          balance: BALANCE,
        },
      },
    );
    const api = await connectApi(config, systemClock, createLogger('silent'));
    connections.push(api);
    try {
      await roundTrip(api.client);
    } finally {
      await sandbox.close();
    }
  });

  it('the embedded sandbox answers as the config says, so a changed setting still runs', async () => {
    const stateDir = join(dir, 'embedded');
    const config = loadConfig(
      { env: {}, cwd: dir },
      {
        paths: { stateDir, inbox: stateDir, outbox: stateDir, create: true },
        api: { baseUrl: 'embedded', payoutQuery: QUERY, balance: BALANCE },
      },
    );
    const endpoints: string[] = [];
    const api = await connectApi(config, systemClock, createLogger('silent'), { onCall: (c) => endpoints.push(c.endpoint) });
    connections.push(api);
    await roundTrip(api.client);
    expect(endpoints).toContain(BALANCE_AT);
  });
});

describe('set otherwise than the service answers', () => {
  it('a query answer under another list field is an error naming api.payoutQuery.listField, never "no payouts"', async () => {
    const { client } = await startEnv({ sandbox: { payoutQuery: { listField: 'records' } } });
    const created = await client.createPayout(payoutRequest());
    for (const query of [client.queryByReferences([created.merchantReferenceId]), client.queryByPayoutIds([created.payoutId])]) {
      const err = await apiErrorOf(query);
      expect(err).toMatchObject({ code: 'BAD_RESPONSE', endpoint: ENDPOINTS.queryPayouts });
      expect(err.msg).toBe('field payouts (api.payoutQuery.listField) is missing or not a list');
    }
  });

  it('a by-payoutId query under another request field is refused, naming api.payoutQuery.payoutIdsField', async () => {
    const { client } = await startEnv({ sandbox: { payoutQuery: { payoutIdsField: 'ids' } } });
    const created = await client.createPayout(payoutRequest());
    const err = await apiErrorOf(client.queryByPayoutIds([created.payoutId]));
    expect(err).toMatchObject({ code: '2002', kind: 'rejected' });
    expect(err.msg).toBe(
      'exactly one of merchantReferenceIds or ids is required; the ids were sent as payoutIds: check api.payoutQuery.payoutIdsField and api.queryMaxIds',
    );
    // The by-reference form is the spec's own: unaffected.
    expect((await client.queryByReferences([created.merchantReferenceId])).records).toHaveLength(1);
  });

  it('a record field under another name leaves that record unread, naming its setting; it still proves the payout exists', async () => {
    const { client } = await startEnv({ sandbox: { payoutQuery: { recordFields: { status: 'state' } } } });
    const created = await client.createPayout(payoutRequest());
    expect(await client.queryByPayoutIds([created.payoutId])).toEqual({
      records: [],
      unread: [
        {
          payoutId: created.payoutId,
          merchantReferenceId: created.merchantReferenceId,
          status: null,
          problem: 'field status (api.payoutQuery.recordFields.status) is missing or not a string',
        },
      ],
    });
  });

  it('a record naming a reference or payout not asked about is unread and names none, naming its setting', async () => {
    // Each mapped to a field the service does fill, with another value: records read, under names nobody asked for.
    const recordFields = {
      merchantReferenceId: 'feeCurrency',
      feeCurrency: 'merchantReferenceId',
      payoutId: 'createTime',
      createTime: 'payoutId',
    };
    const { client } = await startEnv({ client: { payoutQuery: payoutQueryShapeSchema.parse({ recordFields }) } });
    const created = await client.createPayout(payoutRequest());
    const answers = [
      [await client.queryByReferences([created.merchantReferenceId]), 'merchantReferenceId', 'feeCurrency'],
      [await client.queryByPayoutIds([created.payoutId]), 'payoutId', 'createTime'],
    ] as const;
    for (const [answer, by, field] of answers) {
      expect(answer.records).toEqual([]);
      expect(answer.unread).toEqual([
        expect.objectContaining({
          [by]: null,
          status: 'PENDING',
          problem: expect.stringContaining(`check ${field} (api.payoutQuery.recordFields.${by})`),
        }),
      ]);
    }
  });

  it('a final record without the key of its completion time or reason: warned once per setting, read as empty', async () => {
    const lines: string[] = [];
    const logger = createLogger('debug', { write: (line: string) => void lines.push(line) });
    const { client, sandbox } = await startEnv({
      sandbox: { payoutQuery: { recordFields: { failureReason: 'reason', completeTime: 'finishedAt' } } },
      client: { logger },
    });
    const cancelled = await client.createPayout(payoutRequest());
    const paid = await client.createPayout(payoutRequest({ merchantReferenceId: 'REF-PAID' }));
    // Not final yet: without either key, nothing is expected of them.
    await client.queryByPayoutIds([cancelled.payoutId, paid.payoutId]);
    expect(lines).toEqual([]);
    sandbox.settle({ payoutId: cancelled.payoutId }, 'CANCELLED');
    sandbox.settle({ payoutId: paid.payoutId }, 'PAID');
    for (let i = 0; i < 2; i++) {
      const answer = await client.queryByPayoutIds([cancelled.payoutId, paid.payoutId]);
      expect(answer.records.map((r) => [r.status, r.completeTime, r.failureReason])).toEqual([
        ['CANCELLED', null, null],
        ['PAID', null, null],
      ]);
    }
    const warned = (setting: string) => lines.filter((l) => l.includes(`"setting":"${setting}"`));
    expect(warned('api.payoutQuery.recordFields.failureReason')).toHaveLength(1);
    expect(warned('api.payoutQuery.recordFields.failureReason')[0]).toContain(
      'a CANCELLED record of a payout query has no field failureReason',
    );
    expect(warned('api.payoutQuery.recordFields.completeTime')).toHaveLength(1);
    expect(warned('api.payoutQuery.recordFields.completeTime')[0]).toContain('"level":"warn"');
  });

  it('the balance at another path: the 404 names api.balance.path', async () => {
    const { client, sandbox } = await startEnv({ sandbox: { balance: { path: BALANCE_AT } } });
    const err = await apiErrorOf(client.balances());
    expect(err).toMatchObject({ status: 404, endpoint: ENDPOINTS.balances });
    expect(err.msg).toBe(`no endpoint POST ${ENDPOINTS.balances}; no such path on the service: check api.balance.path`);
    expect(sandbox.stats().requests[ENDPOINTS.balances]).toBe(0);
  });

  it.each([
    ['listField', 'accounts', 'field balances (api.balance.listField) is missing or not a list'],
    ['currencyField', 'asset', 'field currency (api.balance.currencyField) is missing or not a string'],
    ['availableField', 'free', 'field available (api.balance.availableField) is not a decimal number'],
  ])('a balance answer with %s under another name: the error names the setting', async (setting, name, msg) => {
    const { client } = await startEnv({ sandbox: { balance: { [setting]: name } } });
    expect((await apiErrorOf(client.balances())).msg).toBe(msg);
  });
});
