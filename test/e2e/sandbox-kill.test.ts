/**
 * The sandbox keeps what it answered: `payoutd sandbox` with a `stateFile`,
 * driven by the real client with many creates in flight, is SIGKILLed right
 * after one of them was answered, then started again on the same state.
 * Every create answered `0000` must be found by a query with the same
 * payoutId; a create cut off by the kill may or may not exist, but at most
 * once.
 */
import { spawn } from 'node:child_process';
import { createPrivateKey, randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { PayoutApiClient } from '../../src/api/index.js';
import type { PayoutRequest } from '../../src/domain/payout.js';
import { generateMerchantKeyPair } from '../../src/signing/index.js';
import { BIN, childEnv, DaemonProcess } from './harness.js';

const MERCHANT_CODE = 'KILL-MERCHANT';
const API_KEY = 'kill-test-api-key-0123456789';
const IN_FLIGHT = 64;
/** Answered creates before the kill: enough that the kill lands mid-stream. */
const ANSWERED_BEFORE_KILL = 400;

function request(i: number): PayoutRequest {
  return {
    merchantReferenceId: `KILL-${i}-${randomUUID()}`,
    deductionCurrency: 'USDT',
    payoutCurrency: 'PHP',
    payoutAmount: `${1000 + (i % 100)}.50`,
    sender: { firstName: 'Ana', lastName: 'Cruz', country: 'PH', idType: 'PASSPORT', idValue: 'P1234567' },
    beneficiary: { accountName: 'Ben Reyes', accountNumber: `12345${String(i).padStart(5, '0')}`, bankCode: 'BOPIPHMM' },
  };
}

async function startSandboxProcess(configPath: string, label: string): Promise<{ proc: DaemonProcess; url: string }> {
  const child = spawn(process.execPath, [BIN, 'sandbox', '--config', configPath], { env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  const proc = new DaemonProcess(label, child);
  onTestFinished(() => proc.kill());
  const line = await proc.waitForLog((l) => typeof l.raw === 'string' && l.raw.startsWith('payout sandbox listening on '), 15_000);
  const url = /listening on (http:\/\/[^\s]+)/.exec(line.raw as string)?.[1];
  if (!url) throw new Error(`no URL in ${String(line.raw)}`);
  return { proc, url };
}

describe('e2e: the sandbox killed mid-stream', () => {
  it('still has, after a restart on its stateFile, every create it answered', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'payoutd-sandbox-kill-'));
    const keys = generateMerchantKeyPair(2048);
    const privateKey = createPrivateKey(keys.privateKeyPem);
    const configPath = join(dir, 'sandbox.json');
    await writeFile(
      configPath,
      JSON.stringify({
        port: 0,
        merchants: [{ merchantCode: MERCHANT_CODE, apiKey: API_KEY, publicKey: keys.publicKeyBase64, balances: { USDT: '100000000' } }],
        settlement: { minDelayMs: 600_000, maxDelayMs: 600_000 },
        stateFile: join(dir, 'ledger.json'),
      }),
    );
    const client = (baseUrl: string): PayoutApiClient =>
      new PayoutApiClient({
        baseUrl,
        merchantCode: MERCHANT_CODE,
        apiKey: API_KEY,
        privateKey,
        auth: { mode: 'standard', grantType: 'client_credentials', refreshBeforeExpirySeconds: 60 },
        sortKeys: true,
        hmacKeyEncoding: 'utf8',
        timeoutMs: 10_000,
        retry: { maxAttempts: 1, baseMs: 10, maxMs: 10 },
        queryMaxIds: 100,
      });

    const first = await startSandboxProcess(configPath, 'sandbox-1');
    const before = client(first.url);
    await before.balances(); // credentials first, so the stream is creates only

    const answered = new Map<string, string>();
    const sent: string[] = [];
    let next = 0;
    let killed = false;
    const worker = async (): Promise<void> => {
      while (!killed) {
        const req = request(next++);
        sent.push(req.merchantReferenceId);
        try {
          const created = await before.createPayout(req);
          answered.set(req.merchantReferenceId, created.payoutId);
          if (answered.size === ANSWERED_BEFORE_KILL && !killed) {
            // Killed the moment this answer arrived, with the other creates still in flight.
            killed = true;
            await first.proc.kill();
          }
        } catch {
          // Cut off by the kill: this create's outcome is unknown, which is allowed.
          return;
        }
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    expect(killed).toBe(true);
    expect(first.proc.exited?.signal).toBe('SIGKILL');
    expect(answered.size).toBeGreaterThanOrEqual(ANSWERED_BEFORE_KILL);

    const second = await startSandboxProcess(configPath, 'sandbox-2');
    const after = client(second.url);
    const found = await after.queryByReferences(sent);
    expect(found.unread).toEqual([]);
    const foundByRef = new Map<string, string[]>();
    for (const p of found.records) foundByRef.set(p.merchantReferenceId, [...(foundByRef.get(p.merchantReferenceId) ?? []), p.payoutId]);

    const lost = [...answered].filter(([ref, payoutId]) => foundByRef.get(ref)?.join() !== payoutId);
    expect(lost.map(([ref]) => ref)).toEqual([]);
    for (const [ref, ids] of foundByRef) expect(ids, ref).toHaveLength(1);
    expect((await after.queryByPayoutIds([...answered.values()])).records.length).toBe(answered.size);

    await second.proc.stop();
    await rm(dir, { recursive: true, force: true });
  }, 90_000);
});
