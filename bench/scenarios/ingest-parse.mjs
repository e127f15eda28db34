// Ingest reference: the build's own reading and validation of the batch
// file (parseBatchFile with the daemon's default format and rules, and the
// canonical JSON of each valid request, as the intake stores it), with no
// database: what the intake costs before anything is persisted.
import { writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { dist, now, peakRssMb } from '../lib/common.mjs';

const params = JSON.parse(process.argv[2]);
const { root, file, workDir } = params;
const { loadConfig } = await dist(root, 'config/index.js');
const { parseBatchFile } = await dist(root, 'ingest/csv/index.js');
const { canonicalStringify } = await dist(root, 'json/index.js');

const config = loadConfig({ env: {}, cwd: workDir });
let valid = 0;
const cpuBefore = process.cpuUsage();
const started = now();
const result = await parseBatchFile(file, basename(file), {
  format: config.batch.format,
  rules: config.batch.rules,
  chunkSize: 2000,
  sidecarPath: null,
  onRows: async (rows) => {
    for (const r of rows) if (r.request && canonicalStringify(r.request)) valid++;
  },
});
const ms = now() - started;
const cpu = process.cpuUsage(cpuBefore);
if (result.fileErrors.length > 0 || valid !== params.rows)
  throw new Error(`unexpected parse result: ${valid} valid rows, ${result.fileErrors.length} file errors`);
writeFileSync(
  params.resultFile,
  JSON.stringify({ rows: valid, ms, rowsPerSecond: (valid / ms) * 1000, cpuMs: (cpu.user + cpu.system) / 1000, peakRssMb: peakRssMb() }),
);
