/**
 * Every endpoint through PayoutApiClient against the sandbox over real HTTP:
 * rates, create (exact debit, amounts as decimal text end to end), queries by
 * reference and by payoutId with chunking, balances.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ApiError, ENDPOINTS } from '../../src/api/index.js';
import { Decimal, decimalText } from '../../src/domain/money.js';
import { API_KEY, apiErrorOf, closeAll, findLeaks, leakReport, MERCHANT, payoutRequest, secretsSeen, startEnv } from './helpers.js';

afterEach(closeAll);

describe('PayoutApiClient endpoints', () => {
  it('exchangeRates returns one entry per stablecoin and target, rates as decimal text', async () => {
    const { client } = await startEnv();
    const rates = await client.exchangeRates(['PHP', 'EUR']);
    expect(rates).toHaveLength(4);
    const pick = (source: string, target: string): string | undefined =>
      rates.find((r) => r.sourceCurrency === source && r.targetCurrency === target)?.rate;
    expect(pick('USDT', 'PHP')).toBe('56.25');
    expect(pick('USDC', 'PHP')).toBe('56.25');
    expect(pick('USDT', 'EUR')).toBe('0.92');
    for (const r of rates) {
      expect(typeof r.rate).toBe('string');
      expect(r.id).not.toBe('');
      expect(r.rateTime).toMatch(/^\d{4}-\d\d-\d\dT/);
    }
  });

  it('createPayout debits exactly what it reports, and the amount travels in normal form', async () => {
    const { client, sandbox, proxy } = await startEnv();
    const req = payoutRequest({ payoutAmount: '1500.50' });
    const created = await client.createPayout(req);

    // 1500.5 / 56.25 = 26.6755555… -> ceil to 6 places 26.675556, plus the fixed fee 0.5.
    expect(created).toEqual({
      payoutId: expect.any(String),
      merchantReferenceId: req.merchantReferenceId,
      rate: '56.25',
      deductionAmount: '27.175556',
      totalFee: '0.5',
      feeCurrency: 'USDT',
    });
    expect(sandbox.balances(MERCHANT).USDT).toBe('972.824444');
    expect(decimalText(new Decimal('1000').minus(created.deductionAmount))).toBe(sandbox.balances(MERCHANT).USDT);
    expect(sandbox.balances(MERCHANT).USDC).toBe('500');

    const wire = proxy.forwarded.find((f) => f.url === ENDPOINTS.createPayout)?.body.toString('utf8') ?? '';
    expect(wire).toContain('"payoutAmount":1500.5,');
    expect(wire.startsWith('{"beneficiary":{"accountName":')).toBe(true);

    const [entry] = sandbox.ledger();
    expect(entry).toMatchObject({ payoutId: created.payoutId, payoutAmount: '1500.5', deductionAmount: '27.175556', status: 'PENDING' });
    expect(sandbox.stats().creates).toBe(1);
  });

  it('balances reports the sandbox balances as decimal text, after a debit too', async () => {
    const { client, sandbox } = await startEnv();
    sandbox.setBalance(MERCHANT, 'USDT', '1000.000001');
    expect(await client.balances()).toEqual(
      expect.arrayContaining([
        { currency: 'USDT', available: '1000.000001' },
        { currency: 'USDC', available: '500' },
      ]),
    );
    await client.createPayout(payoutRequest({ payoutAmount: '0.57' }));
    // 0.57 / 56.25 = 0.0101333… -> 0.010134, plus 0.5.
    const usdt = (await client.balances()).find((b) => b.currency === 'USDT');
    expect(usdt?.available).toBe('999.489867');
    expect(usdt?.available).toBe(sandbox.balances(MERCHANT).USDT);
  });

  it('queries by reference and by payoutId in chunks of queryMaxIds (7 ids, 3 per call -> 3 calls)', async () => {
    const { client, sandbox } = await startEnv({ sandbox: { queryMaxIds: 3 }, client: { queryMaxIds: 3 } });
    const created = [];
    for (let i = 0; i < 7; i++) created.push(await client.createPayout(payoutRequest({ payoutAmount: `${100 + i}.25` })));
    const refs = created.map((c) => c.merchantReferenceId);
    const ids = created.map((c) => c.payoutId);
    expect(sandbox.stats().requests[ENDPOINTS.queryPayouts]).toBe(0);

    const byRef = (await client.queryByReferences(refs)).records;
    expect(sandbox.stats().requests[ENDPOINTS.queryPayouts]).toBe(3);
    expect(byRef.map((r) => r.merchantReferenceId)).toEqual(refs);
    expect(byRef.map((r) => r.payoutId)).toEqual(ids);

    const byId = (await client.queryByPayoutIds(ids)).records;
    expect(sandbox.stats().requests[ENDPOINTS.queryPayouts]).toBe(6);
    expect(byId).toEqual(byRef);

    const first = byId[0];
    expect(first).toMatchObject({
      status: 'PENDING',
      payoutCurrency: 'PHP',
      payoutAmount: '100.25',
      deductionCurrency: 'USDT',
      deductionAmount: created[0]?.deductionAmount,
      rate: '56.25',
      totalFee: '0.5',
      feeCurrency: 'USDT',
      completeTime: null,
      failureReason: null,
    });
    expect(first?.createTime).toBe(new Date(Date.UTC(2026, 0, 1, 12)).toISOString());
  });

  it('leaves unknown ids out of a query answer', async () => {
    const { client } = await startEnv();
    const c = await client.createPayout(payoutRequest());
    const { records } = await client.queryByReferences(['REF-does-not-exist', c.merchantReferenceId]);
    expect(records.map((r) => r.payoutId)).toEqual([c.payoutId]);
    expect(await client.queryByPayoutIds(['PO-unknown'])).toEqual({ records: [], unread: [] });
  });

  it('fails (rejected, 2002) when the client chunks larger than the server allows: the setting matters', async () => {
    const { client, sandbox } = await startEnv({ sandbox: { queryMaxIds: 3 } });
    const refs = ['A', 'B', 'C', 'D'];
    const err = await apiErrorOf(client.queryByReferences(refs));
    expect(err).toMatchObject({ code: '2002', kind: 'rejected', status: 200 });
    expect(sandbox.stats().requests[ENDPOINTS.queryPayouts]).toBe(1);
  });

  it('puts no secret in any ApiError of this file', () => {
    const report = leakReport();
    // The check itself can fail: an error quoting a secret is found.
    const planted = new ApiError({ endpoint: 'x', code: 'X', msg: `key ${API_KEY}`, status: null, kind: 'auth' });
    expect(findLeaks([planted], secretsSeen())).toHaveLength(1);
    expect(report.secrets).toBeGreaterThan(10);
    expect(report.errors).toBeGreaterThan(0);
    expect(report.leaks).toEqual([]);
  });
});
