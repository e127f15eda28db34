/**
 * What the receiver refuses and how: forged or stale deliveries (401, one
 * log line, nothing recorded), oversized bodies (413), signed bodies it
 * cannot use (400), other event kinds (200, logged, no action), wrong path
 * or method; and the logs never carry the secret or a signature.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { webhookReceiverOptions } from '../../src/daemon/runtime.js';
import {
  PATH,
  SECRET,
  START_MS,
  closeAll,
  eventBody,
  onClose,
  eventRows,
  parsedLines,
  send,
  signaturesSent,
  signedHeaders,
  startReceiver,
  type Harness,
} from './helpers.js';

const allLogs: string[][] = [];

afterEach(closeAll);

async function receiver(o: Parameters<typeof startReceiver>[0] = {}): Promise<Harness> {
  const h = await startReceiver(o);
  allLogs.push(h.logs.lines);
  return h;
}

/** Sends `body` signed as the contract says, with optional changes to what is signed or sent. */
function deliver(h: Harness, body: string, sign: Parameters<typeof signedHeaders>[2] = {}, sendBody = body) {
  return send(h.url, { headers: signedHeaders(body, h.clock, sign), body: sendBody });
}

function refusals(h: Harness): Record<string, unknown>[] {
  return parsedLines(h.logs).filter((l) => l['msg'] === 'webhook delivery refused');
}

describe('verification', () => {
  it('accepts a correctly signed delivery, however its JSON is laid out', async () => {
    const h = await receiver();
    const body = eventBody({ payoutId: 'PO-1', eventId: 'EV-1' });
    expect((await deliver(h, body)).status).toBe(200);
    // Same event, keys reordered and pretty-printed: the signature covers the minified form.
    const pretty = JSON.stringify({ eventId: 'EV-2', event: 'payout.updated', data: { status: 'PAID', payoutId: 'PO-2' } }, null, 2);
    const answer = await deliver(h, pretty);
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toBe('application/json');
    expect(JSON.parse(answer.text)).toEqual({ received: true });
    expect((await eventRows(h.db)).map((r) => r.event_id)).toEqual(['EV-1', 'EV-2']);
    expect(h.verdicts).toEqual(['accepted', 'accepted']);
    expect(h.followUps).toEqual([['PO-1'], ['PO-2']]);
    // The second names no merchantReferenceId, which is how the default follow-up finds a row: the log says so.
    expect(parsedLines(h.logs).map((l) => [l['payoutId'], l['msg']])).toEqual(
      expect.arrayContaining([
        ['PO-1', 'webhook accepted'],
        ['PO-2', 'webhook accepted: it names no merchantReferenceId, so the payout waits for its regular poll'],
      ]),
    );
  });

  it.each([
    ['signed with another secret', { secret: 'whsec-not-the-one' }, undefined],
    ['signed for another path', { path: '/payoutd/other' }, undefined],
    ['body changed after signing', {}, eventBody({ payoutId: 'PO-EVIL', eventId: 'EV-X' })],
    ['body with one more byte', {}, 'APPEND'],
  ] as const)('refuses a delivery %s with 401 and records nothing', async (_name, sign, altered) => {
    const h = await receiver();
    const body = eventBody({ payoutId: 'PO-1', eventId: 'EV-X' });
    const sent = altered === 'APPEND' ? `${body}x` : (altered ?? body);
    const answer = await deliver(h, body, sign, sent);
    expect(answer.status).toBe(401);
    expect(JSON.parse(answer.text)).toEqual({ error: 'unauthorized' });
    expect(h.verdicts).toEqual(['bad_signature']);
    expect(await eventRows(h.db)).toEqual([]);
    expect(h.followUps).toEqual([]);
    expect(refusals(h)).toHaveLength(1);
    expect(refusals(h)[0]).toMatchObject({ level: 'warn', verdict: 'bad_signature', reason: 'signature does not match' });
  });

  it.each(['X-TIMESTAMP', 'X-NONCE', 'X-SIGNATURE'])('refuses a delivery without %s', async (name) => {
    const h = await receiver();
    const body = eventBody();
    const headers: Record<string, string> = signedHeaders(body, h.clock);
    delete headers[name];
    expect((await send(h.url, { headers, body })).status).toBe(401);
    expect(h.verdicts).toEqual(['bad_signature']);
    expect(refusals(h)[0]!['reason']).toContain(name);
    expect(await eventRows(h.db)).toEqual([]);
  });

  it('refuses a body of exponents with 401 without writing them out, even signed over their written-out form', async () => {
    const h = await receiver();
    const exponents = (lexeme: string, count: number) => `{"a":[${Array(count).fill(lexeme).join(',')}]}`;
    const writtenOut = (exponent: number, count: number) => exponents(`1${'0'.repeat(exponent)}`, count);
    // Out of range each; within range each but twenty times the text together (a 54 KB body).
    for (const [body, minified] of [
      [exponents('1e9999', 20), writtenOut(9999, 20)],
      [exponents('1e100', 9000), writtenOut(100, 9000)],
    ] as const) {
      expect((await send(h.url, { headers: signedHeaders(minified, h.clock), body })).status).toBe(401);
      expect((await send(h.url, { headers: { ...signedHeaders(body, h.clock), 'X-SIGNATURE': 'A'.repeat(88) }, body })).status).toBe(401);
    }
    expect(h.verdicts).toEqual(Array(4).fill('bad_signature'));
    // The exponents of a genuine event are still written out before the signature is checked.
    const genuine = '{"data": {"payoutId": "PO-1", "rate": 1.2E-7, "status": "PAID"}, "event": "payout.updated", "eventId": "EV-1"}';
    expect((await send(h.url, { headers: signedHeaders(genuine, h.clock), body: genuine })).status).toBe(200);
    expect((await eventRows(h.db)).map((r) => r.event_id)).toEqual(['EV-1']);
  });

  it('refuses malformed header values', async () => {
    const h = await receiver();
    const body = eventBody();
    for (const change of [
      { 'X-TIMESTAMP': String(START_MS) + '.5' },
      { 'X-TIMESTAMP': '-1' },
      { 'X-NONCE': 'n'.repeat(129) },
      { 'X-NONCE': 'has space' },
      { 'X-SIGNATURE': 's'.repeat(600) },
    ]) {
      expect((await send(h.url, { headers: { ...signedHeaders(body, h.clock), ...change }, body })).status).toBe(401);
    }
    expect(h.verdicts).toEqual(Array(5).fill('bad_signature'));
    expect(await eventRows(h.db)).toEqual([]);
  });

  it('accepts a timestamp up to 300 s off the clock and refuses one further off as stale', async () => {
    const h = await receiver();
    const now = START_MS / 1000;
    const at = (s: number) => deliver(h, eventBody(), { timestamp: String(s) });
    expect((await at(now - 301)).status).toBe(401);
    expect((await at(now + 301)).status).toBe(401);
    expect((await at(now - 300)).status).toBe(200);
    expect((await at(now + 300)).status).toBe(200);
    expect(h.verdicts).toEqual(['stale', 'stale', 'accepted', 'accepted']);
    expect(refusals(h).map((l) => l['reason'])).toEqual([
      'X-TIMESTAMP is 301 s behind the receiver clock',
      'X-TIMESTAMP is -301 s ahead of the receiver clock',
    ]);
    expect(await eventRows(h.db)).toHaveLength(2);
  });

  it('refuses a replayed nonce, even carrying a new eventId, and even when the first use was refused later on', async () => {
    const h = await receiver();
    const body = eventBody({ eventId: 'EV-1' });
    const headers = signedHeaders(body, h.clock);
    expect((await send(h.url, { headers, body })).status).toBe(200);
    expect((await send(h.url, { headers, body })).status).toBe(401);
    // A nonce from a delivery that failed verification is not burnt: the real sender may still use it.
    const other = eventBody({ eventId: 'EV-2' });
    const nonce = 'a'.repeat(32);
    expect((await deliver(h, other, { nonce, secret: 'wrong-secret' })).status).toBe(401);
    expect((await deliver(h, other, { nonce })).status).toBe(200);
    expect((await deliver(h, eventBody({ eventId: 'EV-3' }), { nonce })).status).toBe(401);
    expect(h.verdicts).toEqual(['accepted', 'replayed', 'bad_signature', 'accepted', 'replayed']);
    expect((await eventRows(h.db)).map((r) => r.event_id)).toEqual(['EV-1', 'EV-2']);
  });

  it('uses signedPath when a proxy rewrites the path, and honours keyEncoding', async () => {
    const secretHex = Buffer.from(SECRET, 'utf8').toString('hex');
    const h = await receiver({ signedPath: '/hooks/payout', secret: secretHex, keyEncoding: 'hex' });
    const body = eventBody();
    expect((await deliver(h, body, { path: '/hooks/payout' })).status).toBe(200);
    expect((await deliver(h, eventBody(), { path: PATH })).status).toBe(401);
  });
});

describe('webhook.signedPath from the configuration', () => {
  it('loads, and reaches the receiver: a delivery signed for it is accepted on the path the proxy rewrote it to', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payoutd-signed-path-'));
    onClose(async () => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'payoutd.yaml');
    writeFileSync(file, `webhook:\n  enabled: true\n  port: 0\n  path: ${PATH}\n  signedPath: /hooks/payout\n  secret: ${SECRET}\n`);
    const config = loadConfig({ file, env: {}, cwd: dir });
    expect(config.webhook.signedPath).toBe('/hooks/payout');
    const h = await receiver(webhookReceiverOptions(config));
    expect(new URL(h.url).pathname).toBe(PATH);
    expect((await deliver(h, eventBody(), { path: '/hooks/payout' })).status).toBe(200);
    expect((await deliver(h, eventBody(), { path: PATH })).status).toBe(401);
  });
});

describe('bodies, events, routes', () => {
  it('answers 413 to a body over maxBodyBytes, declared or streamed, and takes one of exactly the limit', async () => {
    const h = await receiver({ maxBodyBytes: 2048 });
    const big = eventBody().replace('"data":{', `"data":{"pad":"${'x'.repeat(2100)}",`);
    const declared = await deliver(h, big);
    expect(declared.status).toBe(413);
    expect(declared.headers['connection']).toBe('close');
    const streamed = await send(h.url, { headers: signedHeaders(big, h.clock), body: big, chunked: true });
    expect(streamed.status).toBe(413);
    const base = eventBody({ eventId: 'EV-EXACT' });
    const exact = base.replace('"data":{', `"data":{"pad":"${'x'.repeat(2048 - Buffer.byteLength(base) - 9)}",`);
    expect(Buffer.byteLength(exact)).toBe(2048);
    expect((await deliver(h, exact)).status).toBe(200);
    expect(h.verdicts).toEqual(['too_large', 'too_large', 'accepted']);
    expect((await eventRows(h.db)).map((r) => r.event_id)).toEqual(['EV-EXACT']);
  });

  it('defaults to a 64 KiB limit', async () => {
    const h = await receiver();
    const body = Buffer.alloc(64 * 1024 + 1, 0x20);
    expect((await send(h.url, { headers: signedHeaders(body.toString(), h.clock), body })).status).toBe(413);
  });

  it.each([
    ['not JSON', '{"event":"payout.updated",'],
    ['an array', '[1,2,3]'],
    ['empty', ''],
    ['without eventId', '{"event":"payout.updated","data":{"payoutId":"PO-1"}}'],
    ['without data.payoutId', '{"event":"payout.updated","eventId":"EV-1","data":{"status":"PAID"}}'],
    ['with an eventId too long to store', `{"event":"payout.updated","eventId":"${'e'.repeat(129)}","data":{"payoutId":"PO-1"}}`],
    ['with a numeric payoutId', '{"event":"payout.updated","eventId":"EV-1","data":{"payoutId":123}}'],
    ['with duplicate keys', '{"event":"payout.updated","eventId":"EV-1","eventId":"EV-2","data":{"payoutId":"PO-1"}}'],
  ])('answers 400 to a validly signed body that is %s', async (_name, body) => {
    const h = await receiver();
    const answer = await deliver(h, body);
    expect(answer.status).toBe(400);
    expect(h.verdicts).toEqual(['malformed']);
    expect(refusals(h)).toHaveLength(1);
    expect(await eventRows(h.db)).toEqual([]);
    expect(h.followUps).toEqual([]);
  });

  it('acknowledges and logs an unknown event kind, and does nothing else', async () => {
    const h = await receiver();
    const answer = await deliver(h, eventBody({ event: 'payout.created', eventId: 'EV-NEW' }));
    expect(answer.status).toBe(200);
    expect(h.verdicts).toEqual(['unknown_event']);
    expect(await eventRows(h.db)).toEqual([]);
    expect(h.followUps).toEqual([]);
    expect(parsedLines(h.logs)).toContainEqual(
      expect.objectContaining({ msg: 'webhook event kind not handled; acknowledged', event: 'payout.created', eventId: 'EV-NEW' }),
    );
  });

  it('answers 404 off its path and 405 to other methods', async () => {
    const h = await receiver();
    const body = eventBody();
    expect((await send(h.url, { path: '/payoutd/webhook/x', headers: signedHeaders(body, h.clock), body })).status).toBe(404);
    expect((await send(h.url, { path: '/', body })).status).toBe(404);
    const get = await send(h.url, { method: 'GET' });
    expect(get.status).toBe(405);
    expect(get.headers['allow']).toBe('POST');
    expect((await send(h.url, { method: 'PUT', headers: signedHeaders(body, h.clock), body })).status).toBe(405);
    // A query string is not part of the signed path.
    expect((await send(h.url, { path: `${PATH}?source=test`, headers: signedHeaders(body, h.clock), body })).status).toBe(200);
    expect(h.verdicts).toEqual(['accepted']);
  });

  it('answers 500 when the event cannot be recorded, so the sender retries, and keeps running', async () => {
    const h = await receiver();
    await h.db.schema.renameTable('webhook_events', 'webhook_events_away');
    const body = eventBody({ eventId: 'EV-RETRY' });
    expect((await deliver(h, body)).status).toBe(500);
    await h.db.schema.renameTable('webhook_events_away', 'webhook_events');
    expect((await deliver(h, body)).status).toBe(200);
    expect(h.verdicts).toEqual(['error', 'accepted']);
    expect(h.followUps).toHaveLength(1);
  });

  it('answers 500 when the follow-up fails, leaving the event unrecorded, so the retry is followed up', async () => {
    const failures = [new Error('database refused')];
    const followed: string[] = [];
    const h = await receiver({
      onPayoutUpdated: (named) => {
        const failure = failures.shift();
        if (failure) throw failure;
        followed.push(named.eventId ?? '');
      },
    });
    const body = eventBody({ eventId: 'EV-FOLLOW' });
    expect((await deliver(h, body)).status).toBe(500);
    expect(await h.db('webhook_events').where('event_id', 'EV-FOLLOW').count({ n: '*' })).toEqual([{ n: 0 }]);
    expect((await deliver(h, body)).status).toBe(200);
    expect(followed).toEqual(['EV-FOLLOW']);
    expect(h.verdicts).toEqual(['error', 'accepted']);
    const failed = parsedLines(h.logs).filter((l) => l['msg'] === 'webhook event could not be recorded and followed up; answered 500');
    expect(failed).toMatchObject([{ eventId: 'EV-FOLLOW', level: 'error' }]);
  });
});

afterAll(() => {
  const secrets = [SECRET, Buffer.from(SECRET, 'utf8').toString('hex'), ...signaturesSent];
  const lines = allLogs.flat();
  expect(lines.length).toBeGreaterThan(0);
  for (const line of lines) for (const s of secrets) expect(line.includes(s), `log line leaks a secret: ${line}`).toBe(false);
});
