// Submit's limit at L = 0: the minimal signed-create loop. The project's own
// PayoutApiClient (dist/api), with the settings the daemon would read from
// the same config file, sends creates from C workers and does nothing else:
// no database, no files. After warmupRows creates that are not measured, it
// reports creates/s and this process's CPU per create over `rows` creates.
import { createPrivateKey } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dist, now } from '../lib/processes.mjs';
import { Sandbox, payoutRequest, writeDaemonConfig, writeMerchantFiles } from '../lib/setup.mjs';

const { workDir, round = 1, latencyMs, concurrency, warmupRows, rows, resultFile } = JSON.parse(process.argv[2]);
const dir = join(workDir, `submit-loop-L${latencyMs}-C${concurrency}-${round}`);
const merchant = await writeMerchantFiles(dir);
const sandbox = await Sandbox.start(dir, merchant, { latencyMs });
try {
  const { loadConfig, readApiKey } = await dist('config');
  const { PayoutApiClient } = await dist('api');
  const config = loadConfig({ file: writeDaemonConfig(dir, merchant, sandbox.url).file, env: {}, cwd: dir });
  const { api } = config;
  const client = new PayoutApiClient({
    baseUrl: api.baseUrl,
    merchantCode: api.merchantCode,
    apiKey: readApiKey(config),
    privateKey: createPrivateKey(readFileSync(api.privateKeyFile)),
    auth: api.auth,
    sortKeys: api.canonicalJson.sortKeys,
    hmacKeyEncoding: api.hmacKeyEncoding,
    timeoutMs: api.timeoutMs,
    retry: api.retry,
    queryMaxIds: api.queryMaxIds,
  });

  /** `n` creates from `concurrency` workers, references `${prefix}-<i>`. */
  async function createAll(prefix, n) {
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < n; i = next++) await client.createPayout(payoutRequest(prefix, i));
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, n) }, worker));
  }

  await createAll('LOOPW', warmupRows);
  const cpu = process.cpuUsage();
  const started = now();
  await createAll('LOOP', rows);
  const ms = now() - started;
  const { user, system } = process.cpuUsage(cpu);
  writeFileSync(
    resultFile,
    JSON.stringify({
      latencyMs,
      concurrency,
      creates: rows,
      ms,
      perSecond: (rows / ms) * 1000,
      cpuMsPerCreate: (user + system) / 1000 / rows,
    }),
  );
} finally {
  await sandbox.stop();
}
