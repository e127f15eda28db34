// Ingest baseline: csv-parse alone reading the batch file, with the parser
// options payoutd uses (src/ingest/csv/parse-batch.ts) and nothing else —
// no validation, no database. Runs in its own process; reports rows/s and
// its peak RSS.
import { createReadStream, writeFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parse } from 'csv-parse';
import { now, peakRssMb } from '../lib/common.mjs';

const params = JSON.parse(process.argv[2]);
let records = 0;
const cpuBefore = process.cpuUsage();
const started = now();
await pipeline(
  createReadStream(params.file, { highWaterMark: 64 * 1024 }),
  parse({
    bom: true,
    delimiter: ',',
    record_delimiter: ['\r\n', '\n', '\r'],
    relax_column_count: true,
    skip_empty_lines: true,
    max_record_size: 64 * 1024,
  }),
  new Writable({
    objectMode: true,
    highWaterMark: 256,
    write(_record, _encoding, callback) {
      records++;
      callback();
    },
  }),
);
const ms = now() - started;
const cpu = process.cpuUsage(cpuBefore);
const rows = records - 1; // the header
writeFileSync(
  params.resultFile,
  JSON.stringify({ rows, ms, rowsPerSecond: (rows / ms) * 1000, cpuMs: (cpu.user + cpu.system) / 1000, peakRssMb: peakRssMb() }),
);
