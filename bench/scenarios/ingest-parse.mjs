// Ingest reference: the build's own reading and validation of the batch
// file (parseBatchFile with the daemon's default format and rules, and the
// text of each valid request as the intake stores it: its values from
// migration 0008, its canonical JSON before), with no database: what the
// intake costs before anything is persisted.
import { writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { dist, now, peakRssMb } from '../lib/common.mjs';

const params = JSON.parse(process.argv[2]);
const { root, file, workDir } = params;
const { loadConfig } = await dist(root, 'config/index.js');
const { parseBatchFile } = await dist(root, 'ingest/csv/index.js');
const values = await dist(root, 'domain/request-values.js').catch(() => null);
const { canonicalStringify } = await dist(root, 'json/index.js');
// Rows from the parser as many at a time as the build's readers take them (older builds: 2,000): V8 treats
// rows kept alive in large batches worse (see PARSED_ROWS_AT_A_TIME in src/ingest/read/rows.ts).
const { PARSED_ROWS_AT_A_TIME } = await dist(root, 'ingest/read/rows.js').catch(() => ({}));
const storedText = values
  ? (r) => r.requestValues && values.encodeRequestValues(r.requestValues)
  : (r) => r.request && canonicalStringify(r.request);

const config = loadConfig({ env: {}, cwd: workDir });
let valid = 0;
const cpuBefore = process.cpuUsage();
const started = now();
const result = await parseBatchFile(file, basename(file), {
  format: config.batch.format,
  rules: config.batch.rules,
  chunkSize: PARSED_ROWS_AT_A_TIME ?? 2000,
  sidecarPath: null,
  onRows: async (rows) => {
    for (const r of rows) if (storedText(r)) valid++;
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
