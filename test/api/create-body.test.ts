/**
 * A create's body written from the values intake stored must be the very
 * text the object path writes: the signature covers it, and the shortcut
 * must never send anything else. Seeded random requests with every
 * character JSON escapes, quotes, braces and look-alikes of the body's own
 * keys inside values; a kept text in any other shape is refused.
 */
import { describe, expect, it } from 'vitest';
import { createBodyText, sortedBodyOfValues } from '../../src/api/create-body.js';
import { RequestValuesError, encodeRequest, encodeRequestValues, valuesOfRequest } from '../../src/domain/request-values.js';
import type { PayoutRequest } from '../../src/domain/payout.js';
import { canonicalStringify, parseLossless } from '../../src/json/index.js';
import { prng } from '../../samples/prng.mjs';

const SORTED = { sortKeys: true };
const AS_GIVEN = { sortKeys: false };

const TRICKY = [
  '"',
  '\\',
  '{',
  '}',
  ',',
  ':',
  '\u0000',
  '\u001f',
  '\n',
  'ñ',
  '₱',
  '😀',
  '\ud800',
  '\u2028',
  '","sender":{',
  '"payoutAmount":"1"',
  '\\"',
];

function randomRequest(r: () => number): PayoutRequest {
  const int = (n: number): number => Math.floor(r() * n);
  const text = (): string =>
    Array.from({ length: int(6) }, () => (r() < 0.4 ? (TRICKY[int(TRICKY.length)] as string) : String.fromCharCode(0x20 + int(95)))).join(
      '',
    );
  const amount = `${'0'.repeat(int(3))}${int(10_000_000)}${r() < 0.7 ? `.${int(1000)}${'0'.repeat(int(3))}` : ''}`;
  return {
    merchantReferenceId: `REF-${text()}`,
    deductionCurrency: r() < 0.5 ? 'USDT' : text(),
    payoutCurrency: r() < 0.5 ? 'IDR' : text(),
    payoutAmount: amount,
    sender: { firstName: text(), lastName: text(), country: text(), idType: text(), idValue: text() },
    beneficiary: { accountName: text(), accountNumber: text(), bankCode: text() },
  };
}

describe('a create body from the stored request', () => {
  it('is byte for byte the body written from the request, for 2,000 seeded random requests', () => {
    const r = prng(20261122);
    for (let i = 0; i < 2000; i++) {
      const req = randomRequest(r);
      // What intake stores (src/ingest/intake.ts): the request's values.
      const requestValues = encodeRequest(req);
      // Written by hand for speed, it must be JSON.stringify's text to the byte (plain values and escaped ones).
      expect(requestValues).toBe(JSON.stringify(valuesOfRequest(req)));
      const body = createBodyText({ merchantReferenceId: req.merchantReferenceId, requestValues }, SORTED);
      expect(body, requestValues).toBe(createBodyText(req, SORTED));
      expect(body).toBe(canonicalStringify(parseLossless(body)));
      // Keys sent in the order given (canonicalJson.sortKeys: false): written from the object, as the request's.
      expect(createBodyText({ merchantReferenceId: req.merchantReferenceId, requestValues }, AS_GIVEN)).toBe(createBodyText(req, AS_GIVEN));
    }
  });

  it('keeps plain values as JSON.stringify writes them, and each character JSON escapes as it escapes it', () => {
    const plain = ['GEN-000000001', 'USDT', 'MXN', '4906.96', 'Maria', 'Müller', 'MX', 'TAX_ID', 'ID1', 'Maria Müller', '0126', ''];
    expect(encodeRequestValues(plain)).toBe(JSON.stringify(plain));
    for (const tricky of TRICKY) {
      const values = plain.map((v, i) => (i === 5 ? `a${tricky}b` : v));
      expect(encodeRequestValues(values), JSON.stringify(tricky)).toBe(JSON.stringify(values));
    }
    expect(() => encodeRequestValues(plain.slice(1))).toThrow(RequestValuesError);
  });

  it('sends the amount as a number in normal form', () => {
    const req = randomRequest(prng(7));
    const body = sortedBodyOfValues(valuesOfRequest({ ...req, payoutAmount: '00120.500' }));
    expect(body).toContain('"payoutAmount":120.5,');
  });

  it("refuses a kept text that is not the list of the request's values, and an amount that is not a plain decimal", () => {
    const req = randomRequest(prng(11));
    const stored = (requestValues: string): { merchantReferenceId: string; requestValues: string } => ({
      merchantReferenceId: req.merchantReferenceId,
      requestValues,
    });
    const values = valuesOfRequest(req);
    for (const odd of [
      canonicalStringify(req),
      JSON.stringify(values.slice(1)),
      JSON.stringify([...values, 'x']),
      JSON.stringify(values.map((v, i) => (i === 3 ? 12.5 : v))),
      'not json',
    ])
      expect(() => createBodyText(stored(odd), SORTED), odd).toThrow(RequestValuesError);
    for (const amount of ['1e3', '12,5', ''])
      expect(() => createBodyText(stored(encodeRequest({ ...req, payoutAmount: amount })), SORTED), amount).toThrow(TypeError);
  });
});
