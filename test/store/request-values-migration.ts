/**
 * Migration 0008 on a real database of either engine (SQLite in test/store,
 * PostgreSQL in test/postgres): every request kept as canonical JSON before
 * it reads back, after it, as the same values in the domain's order; text
 * with quotes, backslashes, commas, non-ASCII, astral characters and JSON
 * escapes survives; a row with no request keeps none; a stored request that
 * does not hold every field as text stops the migration with nothing
 * changed; and the way down gives the requests back.
 */
import { expect } from 'vitest';
import type { PayoutRequest } from '../../src/domain/payout.js';
import { decodeRequestValues, valuesOfRequest } from '../../src/domain/request-values.js';
import { canonicalStringify } from '../../src/json/index.js';
import type { Database } from '../../src/store/db.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { request } from '../finance/helpers.js';

const BEFORE = MIGRATIONS.findIndex((m) => m.name === '0008_request_values');

/** Requests as intake kept them before 0008: their canonical JSON. */
const KEPT: (PayoutRequest | null)[] = [
  request('M-1', {}, { accountName: 'Cruz, "Ana" José' }),
  request('M-2', { payoutAmount: '0.10' }, { accountName: 'Łukasz Żółć 😀 日本', accountNumber: '000 123-4' }),
  request('M-3', {}, { accountName: "=SUM(A1) back\\slash 'quoted' [1,2]", accountNumber: '' }),
  null,
  request('M-5', { sender: { firstName: '{"a":1}', lastName: 'a\\"b', country: 'PH', idType: 'PASSPORT', idValue: '' } }),
];

/** The database at the migration before 0008. */
async function migrateUpTo0007(db: Database): Promise<void> {
  for (let i = 0; i < BEFORE; i++) await db.migrate.up();
  const applied = (await db('payoutd_migrations').orderBy('id').pluck('name')) as string[];
  expect(applied).toEqual(MIGRATIONS.slice(0, BEFORE).map((m) => m.name));
}

async function addOldRows(db: Database, batchId: string, texts: (string | null)[]): Promise<void> {
  await db('batches').insert({
    id: batchId,
    file_name: `${batchId}.csv`,
    stored_path: `/claimed/${batchId}.csv`,
    sha256: batchId.padEnd(64, '0'),
    size: 1,
    mtime_ms: 1,
    state: 'ACTIVE',
    received_at: 1,
    updated_at: 1,
  });
  await db('payouts').insert(
    texts.map((text, i) => ({
      batch_id: batchId,
      line: i + 2,
      merchant_reference_id: `${batchId}-${i}`,
      state: text === null ? 'INVALID' : 'PAID',
      request_json: text,
      updated_at: 1,
    })),
  );
}

export async function checkRequestValuesMigration(db: Database): Promise<void> {
  await migrateUpTo0007(db);
  // Written with JSON escapes, as another writer of canonical JSON might have: the values are what count.
  const escaped =
    '{"beneficiary":{"accountName":"Jos\\u00e9 \\ud83d\\ude00 \\"q\\" a\\/b","accountNumber":"\\u0030123","bankCode":"X"},"deductionCurrency":"USDT","merchantReferenceId":"M-6","payoutAmount":"1","payoutCurrency":"PHP","sender":{"country":"PH","firstName":"A","idType":"PASSPORT","idValue":"P","lastName":"B"}}';
  await addOldRows(db, 'OLD', [...KEPT.map((r) => (r === null ? null : canonicalStringify(r))), escaped]);

  await db.migrate.up(); // 0008 alone: the way down below undoes it
  const rows = (await db('payouts').where({ batch_id: 'OLD' }).orderBy('line').select('line', 'request_values')) as {
    line: number;
    request_values: string | null;
  }[];
  const expected = [
    ...KEPT.map((r) => (r === null ? null : valuesOfRequest(r))),
    ['M-6', 'USDT', 'PHP', '1', 'A', 'B', 'PH', 'PASSPORT', 'P', 'José 😀 "q" a/b', '0123', 'X'],
  ];
  expect(rows.map((r) => (r.request_values === null ? null : decodeRequestValues(r.request_values)))).toEqual(expected);
  expect(rows[1] && decodeRequestValues(rows[1].request_values ?? '')[3]).toBe('0.10');

  // The way down gives each request back as its canonical object.
  await db.migrate.down();
  const back = (await db('payouts').where({ batch_id: 'OLD' }).orderBy('line').pluck('request_json')) as (string | null)[];
  expect(back.map((t) => (t === null ? null : JSON.parse(t)))).toEqual([...KEPT, JSON.parse(escaped)]);
}

export async function checkRequestValuesMigrationRefusesNonText(db: Database): Promise<void> {
  await migrateUpTo0007(db);
  const good = canonicalStringify(request('N-1'));
  const numeric = good.replace('"payoutAmount":"1500.5"', '"payoutAmount":1500.5');
  expect(numeric).not.toBe(good);
  await addOldRows(db, 'ODD', [good, numeric]);
  await expect(db.migrate.latest()).rejects.toThrow(/batch ODD line 3 .* does not hold every field as text; nothing was changed/);
  // Nothing changed: the column, the texts and the migrations applied are as before.
  expect((await db('payouts').where({ batch_id: 'ODD' }).orderBy('line').pluck('request_json')) as string[]).toEqual([good, numeric]);
  expect(Number(((await db('payoutd_migrations').count({ n: '*' }).first()) as { n: number | string }).n)).toBe(BEFORE);
}
