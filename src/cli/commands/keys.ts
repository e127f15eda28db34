/** `payoutd keygen`: a merchant RSA key pair for onboarding (spec 5.1). */
import { mkdirSync, writeFileSync, existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { UsageError } from '../../domain/errors.js';
import { generateMerchantKeyPair } from '../../signing/index.js';
import { print } from '../output.js';

export function keygen(outDir: string, force: boolean): void {
  const dir = resolve(outDir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const privatePath = join(dir, 'merchant.pem');
  if (existsSync(privatePath) && !force) {
    throw new UsageError('KEY_EXISTS', `${privatePath} already exists; refusing to overwrite a merchant key (use --force)`);
  }
  const pair = generateMerchantKeyPair(2048);
  writeFileSync(privatePath, pair.privateKeyPem, { mode: 0o600 });
  writeFileSync(join(dir, 'merchant.pub.pem'), pair.publicKeyPem, { mode: 0o644 });
  writeFileSync(join(dir, 'merchant.pub.b64'), `${pair.publicKeyBase64}\n`, { mode: 0o644 });
  print(`private key (PKCS#8, mode 0600): ${privatePath}`);
  print(`public key (PEM):                ${join(dir, 'merchant.pub.pem')}`);
  print(`public key for the onboarding form (Base64, one line): ${join(dir, 'merchant.pub.b64')}`);
  print('');
  print(pair.publicKeyBase64);
}
