// Ingest's limit: csv-parse alone reading the batch file with the parser
// options payoutd uses (src/ingest/csv/parse-batch.ts), and nothing else:
// no validation, no database. Reports rows/s.
import { createReadStream, writeFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parse } from 'csv-parse';
import { now } from '../lib/processes.mjs';

const params = JSON.parse(process.argv[2]);
let records = 0;
const started = now();
await pipeline(
  createReadStream(params.file, { highWaterMark: 64 * 1024 }),
  parse({
    bom: true,
    delimiter: ',',
    record_delimiter: ['\r\n', '\n', '\r'],
    relax_column_count: true,
    skip_empty_lines: false,
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
const rows = records - 1; // the header
writeFileSync(params.resultFile, JSON.stringify({ rows, ms, rowsPerSecond: (rows / ms) * 1000 }));
