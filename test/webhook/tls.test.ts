/**
 * HTTPS mode: with `tls` the receiver serves HTTPS from the given PEM files
 * (a throwaway self-signed certificate for 127.0.0.1 made with the openssl
 * CLI; skipped where openssl is missing), and plain HTTP is not spoken.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { closeAll, eventBody, eventRows, onClose, send, signedHeaders, startReceiver } from './helpers.js';

afterEach(closeAll);

function hasOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function selfSignedCert(): { certFile: string; keyFile: string } {
  const dir = mkdtempSync(join(tmpdir(), 'payoutd-webhook-tls-'));
  onClose(() => Promise.resolve(rmSync(dir, { recursive: true, force: true })));
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1'].concat([
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      keyFile,
      '-out',
      certFile,
    ]),
    { stdio: 'ignore' },
  );
  return { certFile, keyFile };
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
