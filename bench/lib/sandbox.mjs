// The payout sandbox in its own process (`payoutd sandbox --config`), so it
// never shares an event loop with the code measured; its admin endpoints
// (stats, faults, settle); and the signed client of the build under test,
// used to populate the sandbox and as the minimal create loop.
import { createPrivateKey } from 'node:crypto';
import { cpuMsOf, dist, forEachConcurrent, now, percentile, sleep } from './common.mjs';
import { MERCHANT, payoutRequest, writeSandboxConfig } from './fixtures.mjs';
import { PayoutdProcess } from './proc.mjs';

export class SandboxProcess {
  static async start(root, dir, merchant, options = {}) {
    const config = writeSandboxConfig(dir, merchant, options);
    const proc = new PayoutdProcess(root, ['sandbox', '--config', config], { cwd: dir });
    const hit = await proc.waitForLine(/listening on http:\/\/\S+/, 30_000, 'the sandbox to listen');
    const url = /listening on (http:\/\/[^\s]+)/.exec(hit.line)[1];
    return new SandboxProcess(proc, url);
  }

  constructor(proc, url) {
    this.proc = proc;
    this.url = url;
  }

  async admin(method, path, body) {
    const res = await fetch(`${this.url}${path}`, {
      method,
      headers: body ? { 'content-type': 'application/json' } : undefined,
      body: body ? JSON.stringify(body) : undefined,
    });
    const envelope = await res.json();
    if (envelope.code !== '0000') throw new Error(`sandbox ${path}: ${envelope.code} ${envelope.msg}`);
    return envelope.data;
  }

  stats() {
    return this.admin('GET', '/__sandbox/stats');
  }

  setFaults(faults) {
    return this.admin('POST', '/__sandbox/faults', faults);
  }

  settle(payoutId, status = 'PAID') {
    return this.admin('POST', '/__sandbox/settle', { payoutId, status });
  }

  stop() {
    return this.proc.stop();
  }
}

export const CREATE_PATH = '/apis/v1/fiat-payout/create';
export const QUERY_PATH = '/apis/v1/fiat-payout/query';

/** The build's own PayoutApiClient against `url`, with the daemon's default retry and timeout settings. */
export async function apiClient(root, url, merchant, onCall) {
  const { PayoutApiClient } = await dist(root, 'api/index.js');
  return new PayoutApiClient({
    baseUrl: url,
    merchantCode: MERCHANT,
    apiKey: merchant.apiKey,
    privateKey: createPrivateKey(merchant.privateKeyPem),
    auth: { mode: 'standard', grantType: 'client_credentials', refreshBeforeExpirySeconds: 120 },
    sortKeys: true,
    hmacKeyEncoding: 'utf8',
    timeoutMs: 15_000,
    retry: { maxAttempts: 4, baseMs: 250, maxMs: 10_000 },
    queryMaxIds: 100,
    onCall,
  });
}

/**
 * `n` creates with `concurrency` workers, no database: the least any
 * create pipeline can cost on this machine. Returns the created payouts
 * and the timing (the token is fetched, and `warmup` creates are made,
 * before the clock starts).
 */
export async function createLoop(root, url, merchant, options) {
  const { n, concurrency, prefix, hold = false, warmup = 0 } = options;
  const latencies = [];
  const client = await apiClient(root, url, merchant, (c) => {
    if (c.endpoint === CREATE_PATH) latencies.push(c.durationMs);
  });
  await client.balances();
  // Creates made before the clock starts (as the daemon's warm-up batch): code compiled and optimized on both sides.
  if (warmup > 0) {
    await forEachConcurrent(warmup, concurrency, (i) => client.createPayout(payoutRequest(`${prefix}W`, i, { hold })));
    latencies.length = 0;
  }
  const created = new Array(n);
  const cpuBefore = process.cpuUsage();
  const sandboxCpuBefore = options.sandboxPid ? cpuMsOf(options.sandboxPid) : null;
  const started = now();
  await forEachConcurrent(n, concurrency, async (i) => {
    const request = payoutRequest(prefix, i, { hold });
    created[i] = { request, answer: await client.createPayout(request) };
  });
  const ms = now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  const sandboxCpuMs = sandboxCpuBefore === null ? null : cpuMsOf(options.sandboxPid) - sandboxCpuBefore;
  latencies.sort((a, b) => a - b);
  return {
    created,
    timing: {
      n,
      concurrency,
      ms,
      perSecond: (n / ms) * 1000,
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
      clientCpuMsPerCreate: (cpu.user + cpu.system) / 1000 / n,
      sandboxCpuMsPerCreate: sandboxCpuMs === null ? null : sandboxCpuMs / n,
    },
  };
}

/** Settles each payout with its own admin call, `concurrency` at a time; resolves when the last one answered. */
export async function settleAll(sandbox, payoutIds, concurrency) {
  await forEachConcurrent(payoutIds.length, concurrency, (i) => sandbox.settle(payoutIds[i]));
}

/** Polls the sandbox stats until `predicate(stats)`; returns [stats, when]. */
export async function waitForStats(sandbox, predicate, timeoutMs, intervalMs = 50) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const s = await sandbox.stats();
    const at = now();
    if (predicate(s)) return [s, at];
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting on sandbox stats`);
    await sleep(intervalMs);
  }
}
