import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/domain/clock.js';
import { canonicalStringify, JsonNumber } from '../../src/json/index.js';
import { quotePayout, startSandbox, type SandboxOptions, type SandboxServer } from '../../src/sandbox/index.js';
import { makeKeys, merchant, num, payoutBody, str, TestCaller, type TestKeys } from './harness.js';

const CREATE = '/apis/v1/fiat-payout/create';
const QUERY = '/apis/v1/fiat-payout/query';
const RATES = '/apis/v1/exchange-rate/query';
const BALANCE = '/apis/v1/balance/query';

let keys: TestKeys;
const servers: SandboxServer[] = [];
beforeAll(() => {
  keys = makeKeys();
});
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function setup(extra: Partial<SandboxOptions> = {}): Promise<{ sandbox: SandboxServer; caller: TestCaller; clock: ManualClock }> {
  const clock = new ManualClock(Date.UTC(2026, 0, 1, 12));
  const sandbox = await startSandbox({
    merchants: [merchant(keys), merchant(keys, { merchantCode: 'M002', apiKey: 'api-key-M002' })],
    clock,
    seed: 11,
    settlement: { minDelayMs: 60_000, maxDelayMs: 60_000 },
    ...extra,
  });
  servers.push(sandbox);
  const caller = new TestCaller({ url: sandbox.url, apiKey: 'api-key-M001', merchantCode: 'M001', privateKey: keys.privateKey, clock });
  await caller.accessToken();
  return { sandbox, caller, clock };
}

function payoutsOf(reply: { data: Record<string, unknown> }): Record<string, unknown>[] {
  return reply.data['payouts'] as Record<string, unknown>[];
}

describe('sandbox payouts', () => {
  it('quotes with decimals: payoutAmount / rate rounded up to 6 places, plus the fee', () => {
    expect(quotePayout('1000', '56.25', '0.5')).toEqual({ rate: '56.25', deductionAmount: '18.277778', totalFee: '0.5' });
    expect(quotePayout('100', '1', '0.5').deductionAmount).toBe('100.5');
    expect(quotePayout('0.01', '16250', '0').deductionAmount).toBe('0.000001');
    expect(quotePayout('1000000', '0.79', '0.50').deductionAmount).toBe('1265823.284811');
  });

  it('answers rates for USDT and USDC per target, 2003 for an unknown currency', async () => {
    const { caller } = await setup();
    const reply = await caller.business(RATES, { targetCurrencys: ['PHP', 'EUR'] });
    expect(reply.code).toBe('0000');
    const rates = reply.data['exchangeRates'] as Record<string, unknown>[];
    expect(rates.map((r) => `${str(r, 'sourceCurrency')}>${str(r, 'targetCurrency')}=${num(r, 'rate')}`)).toEqual([
      'USDT>PHP=56.25',
      'USDC>PHP=56.25',
      'USDT>EUR=0.92',
      'USDC>EUR=0.92',
    ]);
    expect(str(rates[0], 'rateTime')).toBe('2026-01-01T12:00:00.000Z');
    expect(str(rates[0], 'id')).not.toBe(str(rates[1], 'id'));
    expect((await caller.business(RATES, { targetCurrencys: ['XXX'] })).code).toBe('2003');
    expect((await caller.business(RATES, { targetCurrencys: [] })).code).toBe('2002');
  });

  it('creates a payout, debits exactly, and answers numbers in normal form', async () => {
    const { caller, sandbox } = await setup();
    const body = payoutBody({ payoutAmount: new JsonNumber('1000.00') });
    const reply = await caller.business(CREATE, body);
    expect(reply.code).toBe('0000');
    expect(reply.text).toContain('"deductionAmount":18.277778');
    expect(reply.text).toContain('"rate":56.25');
    expect(reply.text).toContain('"totalFee":0.5');
    expect(num(reply.data, 'deductionAmount')).toBe('18.277778');
    expect(str(reply.data, 'feeCurrency')).toBe('USDT');
    expect(str(reply.data, 'merchantReferenceId')).toBe(body['merchantReferenceId']);
    expect(sandbox.balances('M001')).toEqual({ USDT: '981.722222', USDC: '500' });

    const [entry] = sandbox.ledger();
    expect(entry).toEqual({
      payoutId: str(reply.data, 'payoutId'),
      merchantReferenceId: body['merchantReferenceId'],
      merchantCode: 'M001',
      accountNumber: '1234567890',
      status: 'PENDING',
      payoutCurrency: 'PHP',
      payoutAmount: '1000',
      deductionCurrency: 'USDT',
      deductionAmount: '18.277778',
      rate: '56.25',
      totalFee: '0.5',
      feeCurrency: 'USDT',
      createTime: '2026-01-01T12:00:00.000Z',
      completeTime: null,
      failureReason: null,
    });

    const balance = await caller.business(BALANCE, {});
    const balances = balance.data['balances'] as Record<string, unknown>[];
    expect(balances.map((b) => `${str(b, 'currency')}=${num(b, 'available')}`)).toEqual(['USDT=981.722222', 'USDC=500']);
    const viaGet = await caller.business(BALANCE, undefined, { method: 'GET' });
    expect(viaGet.code).toBe('0000');
  });

  it('refuses with 2001 when the deduction (fee included) exceeds the balance, and debits nothing', async () => {
    const { caller, sandbox } = await setup();
    sandbox.setBalance('M001', 'USDT', '18.277777');
    const reply = await caller.business(CREATE, payoutBody());
    expect([reply.status, reply.code]).toEqual([200, '2001']);
    expect(sandbox.balances('M001')['USDT']).toBe('18.277777');
    sandbox.setBalance('M001', 'USDT', '18.277778');
    expect((await caller.business(CREATE, payoutBody())).code).toBe('0000');
    expect(sandbox.balances('M001')['USDT']).toBe('0');
    expect(sandbox.stats().businessErrors['2001']).toBe(1);
  });

  it('validates fields (2002), currencies (2003), decimals (2002) and limits (2005)', async () => {
    const { caller, sandbox } = await setup();
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ merchantReferenceId: '' }, '2002', /merchantReferenceId/],
      [{ payoutAmount: '1000' }, '2002', /payoutAmount must be a JSON number/],
      [{ payoutAmount: new JsonNumber('-5') }, '2002', /payoutAmount/],
      [{ payoutAmount: new JsonNumber('0') }, '2002', /greater than zero/],
      [{ sender: { firstName: 'A', lastName: 'B', country: 'PH', idType: 'X' } }, '2002', /sender\.idValue/],
      [{ sender: { firstName: 'A', lastName: 'B', country: 'PHL', idType: 'X', idValue: '1' } }, '2002', /sender\.country/],
      [{ beneficiary: { accountName: 'A', accountNumber: 12, bankCode: 'B' } }, '2002', /beneficiary\.accountNumber/],
      [{ beneficiary: undefined }, '2002', /beneficiary/],
      [{ deductionCurrency: 'DAI' }, '2003', /deductionCurrency/],
      [{ payoutCurrency: 'JPY' }, '2003', /payoutCurrency/],
      // More decimals than PHP has minor units: no service pays a fraction of a centavo.
      [{ payoutAmount: new JsonNumber('100.123456789') }, '2002', /^payoutAmount 100\.123456789 has 9 decimals; PHP allows at most 2$/],
      [{ payoutAmount: new JsonNumber('0.001') }, '2002', /^payoutAmount 0\.001 has 3 decimals; PHP allows at most 2$/],
      [{ payoutAmount: new JsonNumber('0.5') }, '2005', /allowed 0.01 to 1000000/],
      [{ payoutAmount: new JsonNumber('100000000') }, '2005', /worth 1777777.777778 USDT/],
    ];
    for (const [overrides, code, msg] of cases) {
      const reply = await caller.business(CREATE, payoutBody(overrides));
      expect([JSON.stringify(overrides), reply.code]).toEqual([JSON.stringify(overrides), code]);
      expect(reply.msg).toMatch(msg);
    }
    // canonicalStringify writes numbers plainly, so the exponent form goes as raw text.
    const exponent = canonicalStringify(payoutBody()).replace('"payoutAmount":1000', '"payoutAmount":1e3');
    const reply = await caller.business(CREATE, undefined, { rawBody: exponent });
    expect([reply.code, reply.msg]).toEqual([
      '2002',
      'payoutAmount must be a positive number in plain decimal form (no sign, no exponent)',
    ]);
    expect(sandbox.ledger()).toHaveLength(0);
    expect(sandbox.balances('M001')['USDT']).toBe('1000');
    // Trailing zeros are no decimals: 100.120 is 100.12.
    const zeros = await caller.business(CREATE, payoutBody({ payoutAmount: new JsonNumber('100.120') }));
    expect(zeros.code).toBe('0000');
    expect(sandbox.ledger().map((e) => [e.payoutAmount, e.payoutCurrency])).toEqual([['100.12', 'PHP']]);
  });

  it('duplicatePolicy return-original: same answer, one debit', async () => {
    const { caller, sandbox } = await setup();
    const body = payoutBody();
    const first = await caller.business(CREATE, body);
    const second = await caller.business(CREATE, body);
    expect(second.code).toBe('0000');
    expect(second.text).toBe(first.text);
    expect(sandbox.ledger()).toHaveLength(1);
    expect(sandbox.balances('M001')['USDT']).toBe('981.722222');
    expect(sandbox.stats()).toMatchObject({ creates: 1, duplicateCreates: 1 });
  });

  it.each(['return-original', 'reject', 'allow'] as const)(
    'duplicatePolicy %s: counts a create that repeats a reference with another body, or after its payout is final',
    async (duplicatePolicy) => {
      const { caller, sandbox } = await setup({ duplicatePolicy });
      const body = payoutBody();
      const first = await caller.business(CREATE, body);
      // The same body again: what a retry of an unanswered create sends, counted by neither.
      await caller.business(CREATE, body);
      expect(sandbox.stats().repeatedCreates).toEqual({ mismatched: 0, afterFinal: 0 });
      // Another amount, currency or account under the same reference: each counted, whatever the answer.
      const changed = [
        { payoutAmount: new JsonNumber('5000') },
        { payoutCurrency: 'EUR', payoutAmount: new JsonNumber('100') },
        { deductionCurrency: 'USDC' },
        { beneficiary: { accountName: 'Ben Reyes', accountNumber: '999000111', bankCode: 'BPI' } },
      ];
      const answers = [];
      for (const over of changed) answers.push(await caller.business(CREATE, { ...body, ...over }));
      if (duplicatePolicy === 'return-original') for (const a of answers) expect(a.text).toBe(first.text);
      expect(sandbox.stats().repeatedCreates).toEqual({ mismatched: 4, afterFinal: 0 });
      // The payout final: the same body again is counted too.
      sandbox.settle({ merchantReferenceId: body['merchantReferenceId'] as string }, 'PAID');
      await caller.business(CREATE, body);
      expect(sandbox.stats().repeatedCreates).toEqual({ mismatched: 4, afterFinal: 1 });
    },
  );

  it('duplicatePolicy reject: 2004, no debit', async () => {
    const { caller, sandbox } = await setup({ duplicatePolicy: 'reject' });
    const body = payoutBody();
    expect((await caller.business(CREATE, body)).code).toBe('0000');
    const again = await caller.business(CREATE, body);
    expect(again.code).toBe('2004');
    expect(sandbox.ledger()).toHaveLength(1);
    expect(sandbox.balances('M001')['USDT']).toBe('981.722222');
  });

  it('duplicatePolicy allow: a second payout and a second debit; query by reference finds both', async () => {
    const { caller, sandbox } = await setup({ duplicatePolicy: 'allow' });
    const body = payoutBody();
    const a = await caller.business(CREATE, body);
    const b = await caller.business(CREATE, body);
    expect(str(a.data, 'payoutId')).not.toBe(str(b.data, 'payoutId'));
    expect(sandbox.ledger()).toHaveLength(2);
    expect(sandbox.balances('M001')['USDT']).toBe('963.444444');
    const q = await caller.business(QUERY, { merchantReferenceIds: [body['merchantReferenceId']] });
    expect(payoutsOf(q).map((p) => p['payoutId'])).toEqual([str(a.data, 'payoutId'), str(b.data, 'payoutId')]);
  });

  it('queries by merchantReferenceIds or payoutIds, only the caller merchant, within queryMaxIds', async () => {
    const { caller, sandbox, clock } = await setup({ queryMaxIds: 3 });
    const bodies = [payoutBody(), payoutBody()];
    const created = [];
    for (const b of bodies) created.push(await caller.business(CREATE, b));
    const ids = created.map((c) => str(c.data, 'payoutId'));

    const byRef = await caller.business(QUERY, {
      merchantReferenceIds: [bodies[1]!['merchantReferenceId'], 'missing', bodies[0]!['merchantReferenceId']],
    });
    expect(payoutsOf(byRef).map((p) => p['payoutId'])).toEqual([ids[1], ids[0]]);
    const record = payoutsOf(byRef)[1]!;
    expect(Object.keys(record).sort()).toEqual(
      [
        'completeTime',
        'createTime',
        'deductionAmount',
        'deductionCurrency',
        'failureReason',
        'feeCurrency',
        'merchantReferenceId',
        'payoutAmount',
        'payoutCurrency',
        'payoutId',
        'rate',
        'status',
        'totalFee',
      ].sort(),
    );
    expect([record['status'], num(record, 'payoutAmount'), num(record, 'deductionAmount'), record['completeTime']]).toEqual([
      'PENDING',
      '1000',
      '18.277778',
      null,
    ]);

    const byId = await caller.business(QUERY, { payoutIds: [ids[0], ids[0]] });
    expect(payoutsOf(byId).map((p) => p['payoutId'])).toEqual([ids[0]]);

    expect((await caller.business(QUERY, { payoutIds: ['a', 'b', 'c'] })).code).toBe('0000');
    const tooMany = await caller.business(QUERY, { payoutIds: ['a', 'b', 'c', 'd'] });
    expect([tooMany.code, tooMany.msg]).toEqual(['2002', 'payoutIds holds 4 ids; at most 3 per call']);
    expect((await caller.business(QUERY, { payoutIds: [] })).code).toBe('2002');
    expect((await caller.business(QUERY, {})).code).toBe('2002');
    expect((await caller.business(QUERY, { payoutIds: ['a'], merchantReferenceIds: ['b'] })).code).toBe('2002');

    // Another merchant sees none of them.
    const other = new TestCaller({ url: sandbox.url, apiKey: 'api-key-M002', merchantCode: 'M002', privateKey: keys.privateKey, clock });
    await other.accessToken();
    expect(payoutsOf(await other.business(QUERY, { payoutIds: ids }))).toEqual([]);
    expect(payoutsOf(await other.business(QUERY, { merchantReferenceIds: [bodies[0]!['merchantReferenceId']] }))).toEqual([]);
  });

  it('settles PAID after the configured delay', async () => {
    const { caller, sandbox } = await setup({ settlement: { minDelayMs: 5, maxDelayMs: 20 } });
    const reply = await caller.business(CREATE, payoutBody());
    const payoutId = str(reply.data, 'payoutId');
    await vi.waitFor(() => expect(sandbox.ledger()[0]!.status).toBe('PAID'), { timeout: 5000, interval: 5 });
    const q = await caller.business(QUERY, { payoutIds: [payoutId] });
    const record = payoutsOf(q)[0]!;
    expect([record['status'], record['completeTime'], record['failureReason']]).toEqual(['PAID', '2026-01-01T12:00:00.000Z', null]);
    expect(sandbox.balances('M001')['USDT']).toBe('981.722222');
    expect(sandbox.settle({ payoutId }, 'CANCELLED')).toBe(0);
    expect(sandbox.stats()).toMatchObject({ paid: 1, cancelled: 0, pending: 0 });
  });

  it('cancels an account ending in the cancel suffix and refunds the deduction', async () => {
    const { caller, sandbox } = await setup({ settlement: { minDelayMs: 5, maxDelayMs: 20 } });
    await caller.business(CREATE, payoutBody({}, '5550000'));
    expect(sandbox.balances('M001')['USDT']).toBe('981.722222');
    await vi.waitFor(() => expect(sandbox.ledger()[0]!.status).toBe('CANCELLED'), { timeout: 5000, interval: 5 });
    expect(sandbox.ledger()[0]!.failureReason).toBe('BENEFICIARY_ACCOUNT_CLOSED');
    expect(sandbox.balances('M001')['USDT']).toBe('1000');
  });

  it('holds an account ending in the hold suffix until settle()', async () => {
    const { caller, sandbox } = await setup({ settlement: { minDelayMs: 0, maxDelayMs: 0 } });
    const held = payoutBody({}, '4449999');
    await caller.business(CREATE, held);
    const paid = await caller.business(CREATE, payoutBody());
    await vi.waitFor(() => expect(sandbox.ledger()[1]!.status).toBe('PAID'), { timeout: 5000, interval: 5 });
    expect(sandbox.ledger()[0]!.status).toBe('PENDING');
    expect(sandbox.settle({ merchantReferenceId: 'nope' }, 'PAID')).toBe(0);
    expect(sandbox.settle({ merchantReferenceId: held['merchantReferenceId'] as string }, 'CANCELLED')).toBe(1);
    expect(sandbox.ledger()[0]).toMatchObject({ status: 'CANCELLED', failureReason: 'CANCELLED_BY_SANDBOX' });
    expect(sandbox.settle({ payoutId: str(paid.data, 'payoutId') }, 'CANCELLED')).toBe(0);
    // One payout paid, one refunded.
    expect(sandbox.balances('M001')['USDT']).toBe('981.722222');
  });

  it('settles a burst of concurrent creates from one queue', async () => {
    const { caller, sandbox } = await setup({ settlement: { minDelayMs: 0, maxDelayMs: 50 } });
    sandbox.setBalance('M001', 'USDT', '1000000');
    const n = 600;
    let next = 0;
    const codes: string[] = [];
    const worker = async (): Promise<void> => {
      while (next++ < n) codes.push((await caller.business(CREATE, payoutBody({ payoutAmount: new JsonNumber('10') }))).code);
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    expect(codes.filter((c) => c === '0000')).toHaveLength(n);
    await vi.waitFor(() => expect(sandbox.stats().paid).toBe(n), { timeout: 10_000, interval: 10 });
    expect(sandbox.stats().pending).toBe(0);
  });
});
