/**
 * The receiver never crashes and never answers 5xx to input it cannot use:
 * a few hundred random bodies and headers (seeded, so a failure replays),
 * validly signed random JSON, and raw garbage on the socket. Afterwards it
 * still takes a real delivery, and the database holds only what it accepted.
 */
import { connect } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { JsonNumber, canonicalStringify } from '../../src/json/index.js';
import { prng } from '../../samples/prng.mjs';
import { closeAll, eventBody, eventRows, send, signedHeaders, startReceiver, type Harness } from './helpers.js';

afterEach(closeAll);

function fuzzer(seed: number) {
  const r = prng(seed);
  const int = (n: number): number => Math.floor(r() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)] as T;
  const printable = (n: number): string => Array.from({ length: n }, () => String.fromCharCode(0x20 + int(95))).join('');
  const bytes = (n: number): Buffer => Buffer.from(Array.from({ length: n }, () => int(256)));
  const json = (depth: number): unknown => {
    switch (depth <= 0 ? int(4) : int(7)) {
      case 0:
        return printable(int(20));
      case 1:
        return new JsonNumber(pick(['0', '-1', '1e400', '123.4500', '1E-7', '9007199254740993']));
      case 2:
        return pick([true, false, null]);
      case 3:
        return pick(['payout.updated', 'EV1', 'PAID', '', 'x'.repeat(200)]);
      case 4:
        return Array.from({ length: int(4) }, () => json(depth - 1));
      default: {
        const o: Record<string, unknown> = {};
        for (let i = int(5); i > 0; i--)
          o[pick(['event', 'eventId', 'data', 'payoutId', 'status', '__proto__', 'constructor', printable(6)])] = json(depth - 1);
        return o;
      }
    }
  };
  return { int, pick, printable, bytes, json };
}

async function receiver(): Promise<Harness> {
  return startReceiver({ maxBodyBytes: 4096 });
}

it('answers 401 or 413 to random bodies and headers, and never records anything', async () => {
  const h = await receiver();
  const f = fuzzer(20260101);
  const statuses = new Map<number, number>();
  for (let i = 0; i < 300; i++) {
    const headers: Record<string, string> = {};
    for (const name of ['X-TIMESTAMP', 'X-NONCE', 'X-SIGNATURE', 'Content-Type']) {
      if (f.int(4) > 0) {
        headers[name] = f.pick([
          f.printable(f.int(40)).trim() || 'x',
          String(Math.floor(h.clock.now() / 1000)),
          'A'.repeat(88),
          '',
          f.printable(300).trim() || 'y',
        ]);
      }
    }
    const body = f.int(3) === 0 ? f.bytes(f.int(6000)) : Buffer.from(f.printable(f.int(5000)));
    const answer = await send(h.url, { headers, body, chunked: f.int(2) === 0 });
    statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
    expect([401, 413]).toContain(answer.status);
  }
  expect(statuses.get(401)).toBeGreaterThan(50);
  expect(statuses.get(413)).toBeGreaterThan(20);
  expect(await eventRows(h.db)).toEqual([]);
  expect(h.followUps).toEqual([]);
});

it('answers 200 or 400 to validly signed random JSON, and records exactly what it accepted', async () => {
  const h = await receiver();
  const f = fuzzer(7);
  for (let i = 0; i < 300; i++) {
    let value = f.json(4);
    if (i % 3 === 0) {
      // Close to a real event, with random holes and types.
      const eventId = f.pick([`EV${i}`, `EV${i % 7}`, '', new JsonNumber('1')]);
      const data = i % 2 === 0 ? { payoutId: f.pick([`PO${i}`, '', 'p'.repeat(129)]), status: f.json(0) } : f.json(2);
      value = { event: 'payout.updated', eventId, data };
    }
    let body: string;
    try {
      body = canonicalStringify(value);
    } catch {
      // A value canonical JSON refuses (an exponent beyond range): send its plain JSON text instead.
      body = JSON.stringify(value) ?? 'null';
    }
    const answer = await send(h.url, { headers: signedHeaders(body, h.clock), body });
    expect([200, 400], `body ${body.slice(0, 200)}`).toContain(answer.status);
  }
  expect(h.verdicts).not.toContain('error');
  const accepted = h.verdicts.filter((v) => v === 'accepted').length;
  expect(accepted).toBeGreaterThan(0);
  expect(h.verdicts.filter((v) => v === 'malformed').length).toBeGreaterThan(50);
  expect(await eventRows(h.db)).toHaveLength(accepted);
});

it('survives garbage on the socket and keeps serving', async () => {
  const h = await receiver();
  const f = fuzzer(99);
  const port = new URL(h.url).port;
  for (let i = 0; i < 50; i++) {
    const garbage =
      i % 2 === 0 ? f.bytes(f.int(2000) + 1) : Buffer.from(`POST /payoutd/webhook HTTP/1.1\r\n${f.printable(f.int(300))}\r\n\r\n`);
    await new Promise<void>((resolve) => {
      const socket = connect(Number(port), '127.0.0.1', () => socket.end(garbage));
      socket.on('data', () => undefined);
      socket.on('error', () => resolve());
      socket.on('close', () => resolve());
    });
  }
  const body = eventBody({ eventId: 'EV-AFTER' });
  expect((await send(h.url, { headers: signedHeaders(body, h.clock), body })).status).toBe(200);
  expect((await eventRows(h.db)).map((r) => r.event_id)).toEqual(['EV-AFTER']);
});
