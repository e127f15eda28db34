/**
 * cleanServiceText: what the payout service writes (an error's msg, a failure reason) loses the client's secrets,
 * the request's own account and ID numbers in any form, secret or personal field, header and element values,
 * bearer credentials and account numbers, and keeps its codes, amounts, times and words. And the client, the
 * sandbox behind a proxy that echoes secrets and the request into its answers, hands on only cleaned texts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ENDPOINTS } from '../../src/api/index.js';
import type { PayoutRequest } from '../../src/domain/payout.js';
import { createBodyText } from '../../src/api/create-body.js';
import { CLEANED_CHARS, REDACTED, cleanServiceText, sentValues, type SentValues } from '../../src/api/service-text.js';
import { API_KEY as CLIENT_API_KEY, apiErrorOf, closeAll, payoutRequest, startEnv } from './helpers.js';

afterEach(closeAll);

const API_KEY = 'ak-unit-Vb62Qs0Pz';
const TOKEN = 'at-unit-4f8e1c2d';

describe('cleanServiceText', () => {
  it('replaces each secret the client holds, wherever it stands, a longer one before one it holds', () => {
    expect(cleanServiceText(`SvcApiKey: ${API_KEY}; token${TOKEN}x; ${API_KEY}-2`, [API_KEY, TOKEN, `${API_KEY}-2`, ''])).toBe(
      `SvcApiKey: ${REDACTED}; token${REDACTED}x; ${REDACTED}`,
    );
  });

  it('masks account numbers as the logs do, replaces ID numbers and secrets, in JSON, escaped JSON and forms', () => {
    const body = '{"beneficiary":{"accountName":"Juan Dela Cruz","accountNumber":"1234567890"},"sender":{"idValue":"P1234567A"}}';
    const cleaned = `{"beneficiary":{"accountName":"Juan Dela Cruz","accountNumber":"******7890"},"sender":{"idValue":"${REDACTED}"}}`;
    expect(cleanServiceText(`invalid request body=${body}`, [])).toBe(`invalid request body=${cleaned}`);
    expect(cleanServiceText(String.raw`echo "{\"idValue\":\"AB 12 C\",\"accountNumber\":\"12345\"}"`, [])).toBe(
      String.raw`echo "{\"idValue\":\"${REDACTED}\",\"accountNumber\":\"*2345\"}"`,
    );
    expect(cleanServiceText('?apiKey=k1&token=t2&secretKey=s3 headers={"svcapikey":"x","SvcAuthorization":"Bearer y"}', [])).toBe(
      `?apiKey=${REDACTED}&token=${REDACTED}&secretKey=${REDACTED} headers={"svcapikey":"${REDACTED}","SvcAuthorization":"${REDACTED}"}`,
    );
    // A value cut short by the end of the text is masked all the same.
    expect(cleanServiceText('{"idValue":"P12345', [])).toBe(`{"idValue":"${REDACTED}`);
  });

  it('masks a secret or personal value in a header line, an XML element, twice-escaped JSON and a bracketed form key', () => {
    const echo = 'POST /apis/v1/fiat-payout/create HTTP/1.1\r\nX-Api-Key: abc123\r\nAuthorization: Token xyz\r\nX-NONCE: 9f8e7d6c\r\n';
    expect(cleanServiceText(echo, [])).toBe(
      `POST /apis/v1/fiat-payout/create HTTP/1.1\r\nX-Api-Key: ${REDACTED}\r\nAuthorization: Token ${REDACTED}\r\nX-NONCE: 9f8e7d6c\r\n`,
    );
    // Header lines written escaped, inside a JSON string.
    expect(cleanServiceText(String.raw`request: POST /x\r\nSvcApiKey: k-1\r\nContent-Type: application/json`, [])).toBe(
      String.raw`request: POST /x\r\nSvcApiKey: ${REDACTED}\r\nContent-Type: application/json`,
    );
    expect(
      cleanServiceText('<beneficiary><accountNumber>\n12345678901</accountNumber></beneficiary><ns:apiKey a="1">k</ns:apiKey>', []),
    ).toBe(`<beneficiary><accountNumber>\n*******8901</accountNumber></beneficiary><ns:apiKey a="1">${REDACTED}</ns:apiKey>`);
    // JSON in a JSON string, itself in a JSON string: each quote escaped twice.
    expect(cleanServiceText(String.raw`body "{\\\"accountNumber\\\":\\\"1234567\\\",\\\"idValue\\\":\\\"P1\\\"}"`, [])).toBe(
      String.raw`body "{\\\"accountNumber\\\":\\\"***4567\\\",\\\"idValue\\\":\\\"${REDACTED}\\\"}"`,
    );
    expect(cleanServiceText('beneficiary%5BaccountNumber%5D=1234567&sender[idValue]=P1&payoutAmount=100', [])).toBe(
      `beneficiary%5BaccountNumber%5D=***4567&sender[idValue]=${REDACTED}&payoutAmount=100`,
    );
  });

  it("masks the request's own account and ID numbers however the echo writes them", () => {
    const sent = sentValues(
      createBodyText(
        payoutRequest({
          merchantReferenceId: 'REF-7654321',
          sender: { ...payoutRequest().sender, idValue: 'AB 123 456' },
          beneficiary: { ...payoutRequest().beneficiary, accountNumber: '7654321' },
        }),
        { sortKeys: true },
      ),
    );
    expect(sent).toEqual({ accountNumbers: ['7654321'], others: ['AB 123 456'], references: ['REF-7654321'] });
    const echoes: [string, string][] = [
      ['rejected value [AB 123 456]', `rejected value [${REDACTED}]`],
      ['rejected value [AB123456] for account 7654321', `rejected value [${REDACTED}] for account ***4321`],
      ['id=AB%20123%20456&id=AB+123+456 acct 765-4321', `id=${REDACTED}&id=${REDACTED} acct ***4321`],
      // Alone only: a short account number does not cut into a longer number, an amount or a date.
      ['payoutAmount 76543210.50, ref X7654321', 'payoutAmount 76543210.50, ref X7654321'],
    ];
    for (const [echo, cleaned] of echoes) expect(cleanServiceText(echo, [API_KEY], sent)).toBe(cleaned);
    // A value of separators alone is no value to look for.
    expect(cleanServiceText('a - b', [], { accountNumbers: ['-'], others: [' '], references: [] })).toBe('a - b');
    // A secret the client holds, as JSON escapes it and as a URL encodes it.
    const key = 'k/"x+y=';
    expect(cleanServiceText(`a ${JSON.stringify(key)} b ${encodeURIComponent(key)}`, [key])).toBe(`a "${REDACTED}" b ${REDACTED}`);
  });

  it('replaces bearer credentials it does not know', () => {
    expect(cleanServiceText('Authorization: Bearer old.token-value, then', [])).toBe(`Authorization: Bearer ${REDACTED}, then`);
  });

  it('masks what looks like an account number or an IBAN anywhere in the text', () => {
    expect(cleanServiceText('account 1234567890 closed', [])).toBe('account ******7890 closed');
    expect(cleanServiceText('account 1234 5678 90 closed', [])).toBe('account ******7890 closed');
    expect(cleanServiceText('IBAN DE89 3704 0044 0532 0130 00 unknown', [])).toBe('IBAN ********3000 unknown');
    expect(cleanServiceText('IBAN GB29NWBK60161331926819, id ID98765432', [])).toBe('IBAN ********6819, id ******5432');
    expect(cleanServiceText('account 12345678 BDO', [])).toBe('account ****5678 BDO');
    expect(cleanServiceText('account 1234-5678-9012 closed', [])).toBe('account ********9012 closed');
    expect(cleanServiceText('<acct>12345678901</acct>', [])).toBe('<acct>*******8901</acct>');
  });

  it('keeps codes, amounts (with a fraction, named, or in a currency), dates, references and words as written', () => {
    const plain = [
      'merchantReferenceId "INV-2026-0001" was already used',
      'payoutAmount 100.50 has 3 decimals; PHP allows at most 2',
      'payoutAmount 100000000 PHP is worth 1777777.777778 USDT; allowed 0.01 to 1000000',
      'body={"payoutAmount":100000000,"deductionAmount":"25000000"} total 12345678.50 fee 123456789 USDT',
      'timestamp 2026-01-05T09:00:00Z outside the accepted window',
      'code 2002 HTTP_5XX: invalid token: expired; SvcAuthorization must be "Bearer <accessToken>"',
      'the beneficiary accountNumber is invalid',
      'exceeds the single payout limit of PHP 100000000; maximum of 100000000; amount of 123456789',
      'merchantReferenceId already used by payout PO15209D51884C3C7439E904 (reference PAY20260105000001)',
      'payoutAmount 150000000 exceeds the limit: 150000000 > 100000000; <payoutAmount>100000000</payoutAmount>',
      'X-TIMESTAMP: 1796064234196; headers={"x-timestamp":"1796064234196"}; timestamp 1796064234 outside the window',
      'apiKey: missing\naccountNumber: must not be empty',
      'sent 2026-01-05, due 05-01-2026; reference INV-2026-0001; allowed 0.01-1000000',
    ];
    for (const text of plain) expect(cleanServiceText(text, [API_KEY])).toBe(text);
  });
});

describe('cleanServiceText on what it must not mask, or must not choke on', () => {
  const sentOf = (over: Partial<PayoutRequest>): SentValues => sentValues(createBodyText(payoutRequest(over), { sortKeys: true }));
  const account = (accountNumber: string): SentValues => sentOf({ beneficiary: { ...payoutRequest().beneficiary, accountNumber } });
  const idValue = (value: string): SentValues => sentOf({ sender: { ...payoutRequest().sender, idValue: value } });

  it('cleans and keeps only a bounded start of a long text, whatever it holds', () => {
    const shapes = ['\\', '1', ' ', '"', "'", '<a>', '%5B', '-', '\\"', '"apiKey":"', '1 ', '\\n x'];
    const sent = account('1234-5678-90');
    for (const shape of shapes) {
      const text = shape.repeat(Math.ceil(65_536 / shape.length));
      const cleaned = cleanServiceText(text, ['secretABC'], sent);
      expect(cleaned.length).toBeLessThanOrEqual(CLEANED_CHARS);
      // The word or number the cut goes through goes with it.
      expect(cleaned).toBe(cleanServiceText(text.slice(0, CLEANED_CHARS).replace(/[\p{L}\p{N}]+$/u, ''), ['secretABC'], sent));
    }
    // A secret across the cut is replaced before the cut, so no part of it is kept.
    const secret = 'sk-0123456789';
    const text = `${'x'.repeat(CLEANED_CHARS - 5)}${secret} tail`;
    expect(cleanServiceText(text, [secret])).toBe(`${'x'.repeat(CLEANED_CHARS - 5)}[`);
    // An account number across the cut: the digits left before it would be too few to be seen as one.
    const account13 = `${'a '.repeat(CLEANED_CHARS / 2 - 3)}x 1234567890123 tail`;
    expect(cleanServiceText(account13, [])).toBe(`${'a '.repeat(CLEANED_CHARS / 2 - 3)}x `);
  });

  it('never throws on a secret or a sent value URL encoding refuses (a lone surrogate)', () => {
    const secret = 'RT\ud800x';
    const sent: SentValues = { accountNumbers: ['12345\ud800678'], others: ['P\udc001234567'], references: [] };
    expect(cleanServiceText(`refused ${JSON.stringify(secret)} and ${secret}`, [secret], sent)).toBe(
      `refused "${REDACTED}" and ${REDACTED}`,
    );
    expect(cleanServiceText('account 12345\ud800678, id P\udc001234567', [], sent)).toBe(`account *****\ud800678, id ${REDACTED}`);
  });

  it("keeps the amounts, dates and limits a short sent value's digits stand in, and the request's reference", () => {
    const kept: [string, SentValues][] = [
      ['allowed 0.01 to 1000', account('1000')],
      ['payoutAmount 1500.00 exceeds limit 1000.00 PHP', account('1500')],
      ['amount 1,234.56 over the maximum; limit 23456 per day', account('23456')],
      ['settled on 2026-11-30', account('1130')],
      ['settled on 2026-11-30', account('20261130')],
      ['payoutAmount must have at most 2 decimals', idValue('2')],
      ['limit 500 per day, used 500', account('500')],
      ['at 12:34:56, ref 123456-7', account('123456')],
      ['merchantReferenceId 20261130001 already exists', sentOf({ merchantReferenceId: '20261130001' })],
    ];
    for (const [text, sent] of kept) expect(cleanServiceText(text, [], sent)).toBe(text);
    // Standing alone, or written in groups of three or four, it is still masked.
    expect(cleanServiceText('no account 23456; no account 765-4321.', [], { ...account('23456') })).toBe(
      'no account *3456; no account 765-4321.',
    );
    expect(cleanServiceText('no account 765-4321.', [], account('7654321'))).toBe('no account ***4321.');
  });

  it('masks a number named by a word holding "time", or compared with a count', () => {
    expect(cleanServiceText('account 987654321098 < 2 days old', [])).toBe('account ********1098 < 2 days old');
    expect(cleanServiceText('runtime 987654321098; lifetime 123456789012', [])).toBe('runtime ********1098; lifetime ********9012');
  });
});

describe('the client, the sandbox behind a proxy echoing secrets into its answers', () => {
  it("cleans a refusal, a cancelled record's reason and an unreadable record's status, keeping the words", async () => {
    const { client, proxy, sandbox, clientClock, sandboxClock } = await startEnv();
    const cancelled = await client.createPayout(payoutRequest());
    sandbox.settle({ payoutId: cancelled.payoutId }, 'CANCELLED');
    const pending = await client.createPayout(payoutRequest({ merchantReferenceId: 'REF-2' }));
    // Renewed: the first token is the previous one now, and may still be echoed.
    for (const clock of [clientClock, sandboxClock]) clock.advance(7_200_000);
    await client.balances();
    expect(proxy.issued).toHaveLength(2);
    const secrets = [CLIENT_API_KEY, ...proxy.issued.flatMap((c) => [c.accessToken, c.refreshToken, c.secretKey])];
    const echo = `${secrets.join(' ')} account 1234567890`;
    proxy.rewriteAnswer = (path, text) =>
      path === ENDPOINTS.queryPayouts
        ? text
            .replace(/"failureReason":"[^"]*"/, `"failureReason":"ACCOUNT_CLOSED: ${echo}"`)
            .replace('"status":"PENDING"', `"status":"${echo}"`)
        : text;
    const answer = await client.queryByPayoutIds([cancelled.payoutId, pending.payoutId]);
    expect(answer.records.map((r) => r.failureReason)).toEqual([
      `ACCOUNT_CLOSED: ${Array(secrets.length).fill(REDACTED).join(' ')} account ******7890`,
    ]);
    expect(answer.unread).toHaveLength(1);
    const [unread] = answer.unread;
    expect(unread?.payoutId).toBe(pending.payoutId);
    for (const text of [unread?.status ?? '', unread?.problem ?? '']) {
      expect(text).toContain('account ******7890');
      for (const secret of secrets) expect(text).not.toContain(secret);
    }

    proxy.rewriteAnswer = null;
    proxy.answerInstead = (f) =>
      f.url.endsWith('/fiat-payout/create')
        ? { status: 200, text: JSON.stringify({ code: '2002', msg: `invalid request: ${echo}`, data: null }) }
        : null;
    const refused = await apiErrorOf(client.createPayout(payoutRequest({ merchantReferenceId: 'REF-3' })));
    expect(refused.msg).toBe(`invalid request: ${Array(secrets.length).fill(REDACTED).join(' ')} account ******7890`);
  });

  it("masks the request's own account and ID numbers in an echo of it, keeping its amount and timestamp", async () => {
    const { client, proxy } = await startEnv();
    const req = payoutRequest({ beneficiary: { ...payoutRequest().beneficiary, accountNumber: '7654321' } });
    let timestamp = '';
    proxy.answerInstead = (f) => {
      if (!f.url.endsWith('/fiat-payout/create')) return null;
      const header = (name: string): string => f.headers.find(([k]) => k.toLowerCase() === name.toLowerCase())?.[1] ?? '';
      timestamp = header('X-TIMESTAMP');
      const body = JSON.parse(f.body.toString('utf8')) as PayoutRequest;
      // The field it refused, headers as lines, the body as a form: values as the request carried them.
      const msg = [
        `sender.idValue: rejected value [${body.sender.idValue}]; no account ${body.beneficiary.accountNumber.replace(/^(\d{3})/, '$1-')}`,
        `SvcApiKey: ${header('SvcApiKey')}`,
        `X-TIMESTAMP: ${timestamp}`,
        `beneficiary%5BaccountNumber%5D=${body.beneficiary.accountNumber}&payoutAmount=${String(body.payoutAmount)}`,
      ].join('\r\n');
      return { status: 200, text: JSON.stringify({ code: '2002', msg, data: null }) };
    };
    const refused = await apiErrorOf(client.createPayout(req));
    expect(refused.code).toBe('2002');
    const cleaned = [
      `sender.idValue: rejected value [${REDACTED}]; no account ***4321`,
      `SvcApiKey: ${REDACTED}`,
      `X-TIMESTAMP: ${timestamp}`,
      'beneficiary%5BaccountNumber%5D=***4321&payoutAmount=1000',
    ].join('\r\n');
    expect(refused.msg).toBe(cleaned);

    // The same echo in a rate limit's answer and a server error's: cleaned on every path an error keeps its msg.
    const refusal = proxy.answerInstead;
    for (const status of [429, 503]) {
      proxy.answerInstead = (f) => {
        const answer = refusal(f);
        return answer === null ? null : { ...answer, status };
      };
      const failed = await apiErrorOf(client.createPayout(req));
      expect([failed.status, failed.msg]).toEqual([status, cleaned]);
    }
  });
  it("reads the service's code as it wrote it, whatever account numbers the request carried", async () => {
    const { client, proxy } = await startEnv();
    const withAccount = (accountNumber: string): PayoutRequest =>
      payoutRequest({ beneficiary: { ...payoutRequest().beneficiary, accountNumber } });
    let creates = 0;
    // 1009 is an expired token: refreshed and sent again, though the account number is 1009 too.
    proxy.answerInstead = (f) =>
      f.url.endsWith('/fiat-payout/create') && creates++ === 0
        ? { status: 401, text: JSON.stringify({ code: '1009', msg: 'ACCESS_TOKEN_EXPIRED: accessToken has expired', data: null }) }
        : null;
    expect((await client.createPayout(withAccount('1009'))).payoutId).not.toBe('');
    expect(creates).toBe(2);
    proxy.answerInstead = (f) =>
      f.url.endsWith('/fiat-payout/create') ? { status: 200, text: JSON.stringify({ code: '20050', msg: 'refused', data: null }) } : null;
    expect((await apiErrorOf(client.createPayout(withAccount('20050')))).code).toBe('20050');
  });
  it('reads a refusal when a credential it holds is one URL encoding refuses', async () => {
    const { client, proxy } = await startEnv();
    // A refresh token holding a lone surrogate, as JSON can carry one.
    proxy.rewriteAnswer = (path, text) =>
      path === ENDPOINTS.accessToken ? text.replace('"refreshToken":"', '"refreshToken":"\\ud800') : text;
    proxy.answerInstead = (f) =>
      f.url.endsWith('/fiat-payout/create') ? { status: 200, text: JSON.stringify({ code: '2002', msg: 'refused', data: null }) } : null;
    const refused = await apiErrorOf(client.createPayout(payoutRequest()));
    expect([refused.code, refused.kind, refused.msg]).toEqual(['2002', 'rejected', 'refused']);
  });
});
