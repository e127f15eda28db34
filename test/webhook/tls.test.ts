/**
 * HTTPS mode: with `tls` the receiver serves HTTPS from the given PEM files
 * (a throwaway self-signed certificate for 127.0.0.1 made with the openssl
 * CLI; skipped where openssl is missing), and plain HTTP is not spoken.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { hasOpenssl, selfSignedCert as makeCert } from '../support/tls.js';
import { closeAll, eventBody, eventRows, onClose, send, signedHeaders, startReceiver } from './helpers.js';

afterEach(closeAll);

function selfSignedCert(): { certFile: string; keyFile: string } {
  const dir = mkdtempSync(join(tmpdir(), 'payoutd-webhook-tls-'));
  onClose(() => Promise.resolve(rmSync(dir, { recursive: true, force: true })));
  return makeCert(dir);
}

it.skipIf(!hasOpenssl())('serves HTTPS when given a certificate and key', async () => {
  const tls = selfSignedCert();
  const h = await startReceiver({ tls });
  expect(h.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/payoutd\/webhook$/);
  const body = eventBody({ eventId: 'EV-TLS' });
  const status = await new Promise<number>((resolve, reject) => {
    const req = httpsRequest(
      h.url,
      { method: 'POST', headers: signedHeaders(body, h.clock), ca: readFileSync(tls.certFile), agent: false },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
  expect(status).toBe(200);
  expect((await eventRows(h.db)).map((r) => r.event_id)).toEqual(['EV-TLS']);
  // Plain HTTP to the TLS port gets no webhook answer.
  await expect(send(h.url.replace('https:', 'http:'), { headers: signedHeaders(body, h.clock), body })).rejects.toThrow();
});
