/** `payoutd sandbox`: the embedded sandbox as a server; `--init DIR` writes a key pair and matching configs. */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { UsageError } from '../../domain/errors.js';
import { generateMerchantKeyPair } from '../../signing/index.js';
import { loadSandboxConfigFile, startSandbox, type SandboxOptions } from '../../sandbox/index.js';
import { print } from '../output.js';

export function initSandboxDir(dirArg: string, port: number): void {
  const dir = resolve(dirArg);
  const sandboxFile = join(dir, 'sandbox.json');
  if (existsSync(sandboxFile)) throw new UsageError('INIT_EXISTS', `${sandboxFile} already exists; choose an empty directory`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const pair = generateMerchantKeyPair();
  const merchantCode = 'SANDBOX-MERCHANT';
  const apiKey = randomBytes(18).toString('hex');
  writeFileSync(join(dir, 'merchant.pem'), pair.privateKeyPem, { mode: 0o600 });
  writeFileSync(join(dir, 'merchant.pub.b64'), `${pair.publicKeyBase64}\n`);
  writeFileSync(join(dir, 'api-key'), `${apiKey}\n`, { mode: 0o600 });
  const sandboxConfig = {
    port,
    merchants: [{ merchantCode, apiKey, publicKey: pair.publicKeyBase64, balances: { USDT: '1000000', USDC: '1000000' } }],
    settlement: { minDelayMs: 1000, maxDelayMs: 5000 },
  };
  writeFileSync(sandboxFile, `${JSON.stringify(sandboxConfig, null, 2)}\n`, { mode: 0o600 });
  const daemonConfig = [
    '# payoutd configuration made by `payoutd sandbox --init`: talks to the sandbox of sandbox.json.',
    '# See config/payoutd.example.yaml for every option.',
    'api:',
    `  baseUrl: http://127.0.0.1:${port}`,
    `  merchantCode: ${merchantCode}`,
    '  apiKeyFile: api-key',
    '  privateKeyFile: merchant.pem',
    'paths:',
    '  inbox: var/inbox',
    '  outbox: var/outbox',
    '  stateDir: var/state',
    '  create: true # the folders under var/ are made at the first start',
    '',
  ].join('\n');
  writeFileSync(join(dir, 'payoutd.yaml'), daemonConfig, { mode: 0o600 });
  print(`sandbox config: ${sandboxFile}`);
  print(`daemon config:  ${join(dir, 'payoutd.yaml')}`);
  print('');
  print(`start the sandbox:  npx payoutd sandbox --config ${sandboxFile}`);
  print(`then, for example:  npx payoutd balance --config ${join(dir, 'payoutd.yaml')}`);
}

export async function runSandbox(configFile: string | undefined, port: number | undefined): Promise<void> {
  if (!configFile)
    throw new UsageError('CONFIG_MISSING', 'payoutd sandbox needs --config FILE (make one with `payoutd sandbox --init DIR`)');
  const options: SandboxOptions = loadSandboxConfigFile(resolve(configFile));
  if (port !== undefined) options.port = port;
  const server = await startSandbox(options);
  print(`payout sandbox listening on ${server.url} (admin: ${server.url}/__sandbox/ledger)`);
  await new Promise<void>((resolveStop) => {
    const stop = (): void => {
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
      resolveStop();
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  });
  await server.close();
}
