/**
 * A throwaway self-signed certificate for 127.0.0.1, made with the real
 * openssl binary, for tests that talk HTTPS (the webhook receiver, the API
 * client). Tests skip themselves when openssl is not installed.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

export function hasOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Writes cert.pem and key.pem (EC P-256, valid one day, SAN IP:127.0.0.1) into `dir`. */
export function selfSignedCert(dir: string): { certFile: string; keyFile: string } {
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  const subject = ['-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'];
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  execFileSync('openssl', ['req', '-x509', ...key, '-days', '1', ...subject, '-keyout', keyFile, '-out', certFile], { stdio: 'ignore' });
  return { certFile, keyFile };
}
