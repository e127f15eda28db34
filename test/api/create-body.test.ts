/**
 * A create's body taken from the request text intake stored must be the
 * very text the object path writes: the signature covers it, and the fast
 * path must never send anything else. Seeded random requests with every
 * character JSON escapes, quotes, braces and look-alikes of the body's own
 * keys inside values; stored texts in any other shape fall back to parsing.
 */
import { describe, expect, it } from 'vitest';
import { createBodyText, storedCreateBody } from '../../src/api/create-body.js';
import type { PayoutRequest } from '../../src/domain/payout.js';
import { canonicalStringify } from '../../src/json/index.js';
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
      // What intake stores (src/ingest/intake.ts).
      const requestJson = canonicalStringify(req);
      const fast = storedCreateBody(requestJson, SORTED);
      expect(fast, requestJson).not.toBeNull();
      expect(fast).toBe(createBodyText(req, SORTED));
      expect(createBodyText({ merchantReferenceId: req.merchantReferenceId, requestJson }, SORTED)).toBe(fast);
      // Keys sent in the order given (canonicalJson.sortKeys: false): parsed and written, as before.
      expect(storedCreateBody(requestJson, AS_GIVEN)).toBeNull();
    }
  });

  it('sends the amount as a number in normal form', () => {
    const req = randomRequest(prng(7));
    const body = storedCreateBody(canonicalStringify({ ...req, payoutAmount: '00120.500' }), SORTED);
    expect(body).toContain('"payoutAmount":120.5,');
  });

  it('any other shape is parsed and written from the object (extra keys dropped, as before)', () => {
    const req = randomRequest(prng(11));
    const stored = (value: unknown): { merchantReferenceId: string; requestJson: string } => ({
      merchantReferenceId: req.merchantReferenceId,
      requestJson: typeof value === 'string' ? value : canonicalStringify(value),
    });
    // Keys not sorted, or a key the body does not send: the same body as the request's.
    for (const other of [JSON.stringify(req), { ...req, purpose: 'x' }]) {
      const { requestJson } = stored(other);
      expect(storedCreateBody(requestJson, SORTED), requestJson).toBeNull();
      expect(createBodyText(stored(other), SORTED)).toBe(createBodyText(req, SORTED));
    }
    // Something nested in the sender is sent as the object path sends it.
    const nested = { ...req, sender: { ...req.sender, nested: { a: '1' } } };
    expect(storedCreateBody(canonicalStringify(nested), SORTED)).toBeNull();
    expect(createBodyText(stored(nested), SORTED)).toBe(createBodyText(nested, SORTED));
    // Amounts and values the fast path does not take.
    for (const odd of [
      canonicalStringify(req).replace(/"payoutAmount":"[^"]*"/, '"payoutAmount":12.5'),
      canonicalStringify({ ...req, payoutAmount: '-3' }),
      canonicalStringify({ ...req, payoutAmount: '1e3' }),
      canonicalStringify(req).replace(/"bankCode":"(?:[^"\\]|\\.)*"/, '"bankCode":7'),
    ])
      expect(storedCreateBody(odd, SORTED), odd).toBeNull();
  });
});
