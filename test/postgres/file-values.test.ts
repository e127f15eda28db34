/**
 * PostgreSQL: a file's cells and headers are stored as written, however long, as on SQLite. An invalid row's
 * cells and an unknown header have no bound before they are stored; a value longer than a column's declared
 * length once failed the reading's insert on PostgreSQL only, and the batch stayed VALIDATING, read again and
 * again, with no ack and no refusal. A NUL character, which PostgreSQL cannot store in text, refuses the file
 * on both engines.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { listBatchErrors } from '../../src/store/batch-errors.js';
import { migrateToLatest } from '../../src/store/db.js';
import { closePipelines, csvFile, csvRow, startPipeline, type Pipeline } from '../pipeline/harness.js';
import { openEmptySchema, pgReachable, useTestSchema, type PgSchema } from './pg.js';

/** What became of a received file: the batch, its rows as stored, its stored errors. */
async function outcome(p: Pipeline, name: string, content: string): Promise<Record<string, unknown>> {
  const batch = await p.receive(name, content);
  const rows = await p.rows(batch.id);
  return {
    batch: { state: batch.state, rejectCode: batch.rejectCode, validCount: batch.validCount, invalidCount: batch.invalidCount },
    rows: rows.map((r) => [r.line, r.state, r.merchantReferenceId, r.payoutCurrency, r.payoutAmount, r.deductionCurrency, r.reasonCode]),
    errors: (await listBatchErrors(p.db, batch.id)).map((e) => [e.line, e.column, e.code]),
  };
}

/** The file read by a pipeline on SQLite and by one on PostgreSQL (skip-rows: invalid rows are kept, the rest read). */
async function onBoth(
  schema: PgSchema,
  name: string,
  content: string,
): Promise<{ sqlite: Record<string, unknown>; pg: Record<string, unknown> }> {
  const sqlite = await outcome(await startPipeline({ onInvalidRows: 'skip-rows' }), name, content);
  const pg = await startPipeline({
    onInvalidRows: 'skip-rows',
    database: async () => {
      const db = await openEmptySchema(schema);
      await migrateToLatest(db);
      return db;
    },
  });
  return { sqlite, pg: await outcome(pg, name, content) };
}

const LONG_REFERENCE = `R${'9'.repeat(128)}`;
const LONG_AMOUNT = '1'.repeat(65);
const NOTE = `Notes from treasury: ${'please pay these suppliers before the cut-off; '.repeat(6)}`;

describe.skipIf(!pgReachable)('postgres: long values of a file', () => {
  const schema = useTestSchema();
  afterEach(closePipelines);

  it('invalid rows with cells longer than their columns are declared are kept as written; the valid rows are read', async () => {
    const content = csvFile([
      csvRow('FV-1'),
      // The currency's name for its code, an amount of 65 digits, a reference of 129 characters, a token's network.
      csvRow('FV-2', { payoutCurrency: 'Philippine Peso' }),
      csvRow('FV-3', { payoutAmount: LONG_AMOUNT }),
      csvRow(LONG_REFERENCE),
      csvRow('FV-5', { deductionCurrency: 'USDT TRC20' }),
    ]);
    const { sqlite, pg } = await onBoth(schema, 'long-cells.csv', content);
    expect(pg).toEqual(sqlite);
    expect(pg.batch).toEqual({ state: 'ACTIVE', rejectCode: null, validCount: 1, invalidCount: 4 });
    expect((pg.rows as unknown[][]).map((r) => r.slice(0, 6))).toEqual([
      [2, 'READY', 'FV-1', null, '100.50', null],
      [3, 'INVALID', 'FV-2', 'Philippine Peso', '100.50', 'USDT'],
      [4, 'INVALID', 'FV-3', 'PHP', LONG_AMOUNT, 'USDT'],
      [5, 'INVALID', LONG_REFERENCE, 'PHP', '100.50', 'USDT'],
      [6, 'INVALID', 'FV-5', 'PHP', '100.50', 'USDT TRC20'],
    ]);
  });

  it('an unknown header longer than 256 characters refuses the file, naming the header whole', async () => {
    const [header, ...rows] = csvFile([csvRow('FH-1'), csvRow('FH-2')])
      .trimEnd()
      .split('\n');
    const content = `${header},"${NOTE}"\n${rows.map((r) => `${r},`).join('\n')}\n`;
    const { sqlite, pg } = await onBoth(schema, 'long-header.csv', content);
    expect(pg).toEqual(sqlite);
    expect(pg.batch).toMatchObject({ state: 'REJECTED', rejectCode: 'INVALID_FILE' });
    expect(pg.errors).toEqual([[1, NOTE.trim(), 'HEADER_UNKNOWN']]);
    expect(NOTE.trim().length).toBeGreaterThan(256);
  });

  it('a NUL character past the first 8 KB refuses the file, naming its line and column', async () => {
    const rows = Array.from({ length: 120 }, (_, i) => csvRow(`FN-${i + 1}`));
    rows[110] = csvRow('FN-111', { payoutAmount: '10\u000050' });
    const content = csvFile(rows);
    expect(content.indexOf('\u0000')).toBeGreaterThan(8192);
    const { sqlite, pg } = await onBoth(schema, 'nul.csv', content);
    expect(pg).toEqual(sqlite);
    expect(pg).toEqual({
      batch: { state: 'REJECTED', rejectCode: 'INVALID_FILE', validCount: 0, invalidCount: 0 },
      rows: [],
      errors: [[112, 'payoutAmount', 'NUL_CHARACTER']],
    });
  });
});
