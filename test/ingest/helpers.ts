/** Test helpers for ingest: temp files and a parser run that collects every chunk. */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import {
  DEFAULT_BATCH_FORMAT,
  batchFormatSchema,
  parseBatchFile,
  type BatchFormatOptionsInput,
  type BatchParseResult,
  type ReadRow,
} from '../../src/ingest/csv/index.js';
import { DEFAULT_VALIDATION_RULES, validationRulesSchema, type ValidationRulesInput } from '../../src/ingest/rules/index.js';
import { FIELD_PATHS } from '../../src/ingest/rules/index.js';
import { validCsvRow } from '../support/rows.js';

export const HEADER_FIELDS: string[] = [...FIELD_PATHS];
export const HEADER = HEADER_FIELDS.join(',');

/** Headers as finance sheets write them (case and spaces varied), mapped to their fields. */
export const FRIENDLY_ALIASES = {
  Reference: 'merchantReferenceId',
  amount: 'payoutAmount',
  currency: 'payoutCurrency',
  FUNDING: 'deductionCurrency',
  'first name': 'sender.firstName',
  'Last Name': 'sender.lastName',
  Country: 'sender.country',
  'ID Type': 'sender.idType',
  'ID Number': 'sender.idValue',
  Beneficiary: 'beneficiary.accountName',
  Account: 'beneficiary.accountNumber',
  Bank: 'beneficiary.bankCode',
} as const;

/** A valid PHP row; pass overrides by field path. */
export function row(ref: string, overrides: Record<string, string> = {}): string {
  return validCsvRow(ref, overrides);
}

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

export async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'payoutd-ingest-'));
  dirs.push(dir);
  return dir;
}

/** Writes `content` to a fresh temp file and returns its path. */
export async function tempCsv(content: string | Uint8Array, name = 'batch.csv'): Promise<string> {
  const path = join(await tempDir(), name);
  await writeFile(path, content);
  return path;
}

export interface Collected {
  result: BatchParseResult;
  rows: ReadRow[];
  chunks: number[];
}

export async function parseCollect(
  path: string,
  options: {
    format?: BatchFormatOptionsInput;
    rules?: ValidationRulesInput;
    chunkSize?: number;
    sidecarPath?: string | null;
    readChunkBytes?: number;
    /** The name the file is read as (its extension says what it is); default batch.csv. */
    displayName?: string;
  } = {},
): Promise<Collected> {
  const rows: ReadRow[] = [];
  const chunks: number[] = [];
  const result = await parseBatchFile(path, options.displayName ?? 'batch.csv', {
    format: options.format ? batchFormatSchema.parse(options.format) : DEFAULT_BATCH_FORMAT,
    rules: options.rules ? validationRulesSchema.parse(options.rules) : DEFAULT_VALIDATION_RULES,
    ...(options.chunkSize !== undefined ? { chunkSize: options.chunkSize } : {}),
    ...(options.sidecarPath !== undefined ? { sidecarPath: options.sidecarPath } : {}),
    ...(options.readChunkBytes !== undefined ? { readChunkBytes: options.readChunkBytes } : {}),
    onRows: async (chunk) => {
      chunks.push(chunk.length);
      rows.push(...chunk);
    },
  });
  return { result, rows, chunks };
}

export function codes(errors: readonly { code: string }[]): string[] {
  return errors.map((e) => e.code);
}
