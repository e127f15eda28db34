import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import {
  RECONCILIATION_COLUMNS,
  SUMMARY_COLUMNS,
  parseReportInstant,
  reconciliationFileName,
  reconciliationTotalsPath,
  reportPeriod,
  requestedPeriod,
  writeReconciliationReport,
} from '../../src/report/index.js';
import { payoutsCreatedBetween } from '../../src/store/reports.js';
import { DAY, T0, addBatch, addRows, listDir, request, setRow, useStore, validRow } from './helpers.js';

const store = useStore();
const readCsv = async (path: string): Promise<string[][]> => parse(await readFile(path, 'utf8'), { bom: true });

describe('report period', () => {
  it('reads dates as midnight UTC and timestamps with their zone', () => {
    expect(parseReportInstant('2026-01-02', '--since')).toBe(Date.UTC(2026, 0, 2));
    expect(parseReportInstant('2026-01-02T09:30:00Z', '--since')).toBe(Date.UTC(2026, 0, 2, 9, 30));
    expect(parseReportInstant('2026-01-02T09:30:00.250+02:00', '--since')).toBe(Date.UTC(2026, 0, 2, 7, 30, 0, 250));
    expect(parseReportInstant('2026-01-02T09:30Z', '--since')).toBe(Date.UTC(2026, 0, 2, 9, 30));
  });

  it.each(['2026-02-30', '2026-1-2', '02/01/2026', '2026-01-02T09:30:00', '2026-01-02T25:00:00Z', 'yesterday', ''])(
    'refuses %j',
    (text) => {
      expect(() => parseReportInstant(text, '--until')).toThrowError(expect.objectContaining({ code: 'REPORT_BAD_DATE' }));
    },
  );

  it('is [since, until), until defaults to now, and must not be empty', () => {
    const period = (since: string, until: string | undefined, endMs: number) => reportPeriod(requestedPeriod(since, until), endMs);
    expect(period('2026-01-01', '2026-02-01', Date.UTC(2026, 1, 1))).toEqual({
      sinceMs: Date.UTC(2026, 0, 1),
      untilMs: Date.UTC(2026, 1, 1),
    });
    expect(period('2026-01-01', undefined, T0)).toEqual({ sinceMs: Date.UTC(2026, 0, 1), untilMs: T0 });
    // Now to the second, as the file's name gives it.
    expect(period('2026-01-01', undefined, T0 + 999)).toEqual({ sinceMs: Date.UTC(2026, 0, 1), untilMs: T0 });
    // Refused before the store is opened.
    expect(() => requestedPeriod('2026-01-02', '2026-01-02')).toThrowError(expect.objectContaining({ code: 'REPORT_BAD_PERIOD' }));
    expect(() => period('2026-01-02', undefined, Date.UTC(2026, 0, 2))).toThrowError(
      expect.objectContaining({ code: 'REPORT_BAD_PERIOD' }),
    );
    expect(reconciliationFileName({ sinceMs: Date.UTC(2026, 0, 1), untilMs: Date.UTC(2026, 1, 1, 8, 5) })).toBe(
      'reconciliation-20260101T000000Z-20260201T080500Z.csv',
    );
    // A --since or --until given to the millisecond is named so, not rounded.
    expect(reconciliationFileName({ sinceMs: Date.UTC(2026, 0, 1, 0, 0, 0, 250), untilMs: Date.UTC(2026, 1, 1) })).toBe(
      'reconciliation-20260101T000000.250Z-20260201T000000Z.csv',
    );
    expect(reconciliationTotalsPath('/x/rec.csv')).toBe('/x/rec.totals.csv');
    expect(reconciliationTotalsPath('/x/rec')).toBe('/x/rec.totals.csv');
  });

  it('refuses an until later than its end: that period is not over', () => {
    const end = Date.UTC(2026, 0, 31, 15, 30);
    expect(() => reportPeriod(requestedPeriod('2026-01-01', '2026-02-01'), end)).toThrowError(
      expect.objectContaining({
        code: 'REPORT_PERIOD_NOT_OVER',
        message:
          '--until 2026-02-01T00:00:00.000Z is later than now (2026-01-31T15:30:00.000Z): the period is not over, and the payouts still to be ' +
          'created in it would be in no report. No report written: run it again once 2026-02-01T00:00:00.000Z has passed, or leave --until ' +
          'out for a report up to now (its end is in its file name and first line: start the next report --since that end)',
      }),
    );
  });
});

describe('reconciliation report', () => {
  it('lists exactly the payouts created in the period, in creation order, with their confirmed state and exact totals', async () => {
    const { db, dir } = await store();
    await addBatch(db, 'B1', 'jan.csv');
    await addBatch(db, 'B2', 'feb.csv');
    const since = Date.UTC(2026, 0, 10);
    const until = Date.UTC(2026, 0, 11);
    await addRows(db, [
      validRow('B1', 2, request('INV-1', { payoutAmount: '0.1' })),
      validRow('B1', 3, request('INV-2', { payoutAmount: '0.2' })),
      validRow('B1', 4, request('INV-3', { payoutAmount: '999999999999.99' })),
      validRow('B1', 5, request('INV-4')), // created before the period
      validRow('B1', 6, request('INV-5')), // created exactly at `until`: excluded
      validRow('B1', 7, request('INV-6')), // never created (no payoutId)
      // Written 0.30, sent as 0.3: the report shows what was written.
      validRow('B2', 2, request('=HYPERLINK("x")', { payoutAmount: '0.3', payoutCurrency: 'EUR' }, { accountNumber: '000123' }), {
        payoutAmount: '0.30',
      }),
    ]);
    const created = (id: string, at: number, over: object = {}) => ({
      payoutId: id,
      serviceStatus: 'PAID',
      state: 'PAID' as const,
      rate: '56.12',
      deductionAmount: '0.000001',
      totalFee: '0.5',
      feeCurrency: 'USDT',
      createdAtMs: at,
      createTime: new Date(at).toISOString(),
      completeTime: new Date(at + 60_000).toISOString(),
      ...over,
    });
    await setRow(db, 'B1', 2, created('P-1', since + 5000));
    await setRow(db, 'B1', 3, created('P-2', since));
    await setRow(db, 'B1', 4, {
      ...created('P-3', since + 5000),
      state: 'CANCELLED',
      serviceStatus: 'CANCELLED',
      reasonCode: 'CANCELLED',
      reason: 'beneficiary account closed',
    });
    await setRow(db, 'B1', 5, created('P-4', since - 1));
    await setRow(db, 'B1', 6, created('P-5', until));
    await setRow(db, 'B1', 7, { state: 'REJECTED', reasonCode: '2002', reason: 'INVALID_PARAMETER', createdAtMs: since + 1 });
    await setRow(db, 'B2', 2, { ...created('P-7', until - 1), state: 'PENDING', serviceStatus: 'PENDING', completeTime: null });

    const path = join(dir, 'rec.csv');
    const files = await writeReconciliationReport(path, payoutsCreatedBetween(db, since, until, 2));
    expect(files.totalsPath).toBe(join(dir, 'rec.totals.csv'));
    expect(await listDir(dir)).toEqual(['rec.csv', 'rec.totals.csv', 'state.sqlite', 'state.sqlite-shm', 'state.sqlite-wal']);

    const [header, ...rows] = await readCsv(path);
    expect(header).toEqual([...RECONCILIATION_COLUMNS]);
    const col = (name: (typeof RECONCILIATION_COLUMNS)[number]) => RECONCILIATION_COLUMNS.indexOf(name);
    // Ordered by created_at_ms then id; P-4 (before), P-5 (at until) and the uncreated row are absent.
    expect(rows.map((r) => r[col('payout_id')])).toEqual(['P-2', 'P-1', 'P-3', 'P-7']);
    expect(rows[0]).toEqual([
      'B1',
      'jan.csv',
      '3',
      'INV-2',
      'P-2',
      'PAID',
      'PAID',
      'PHP',
      '0.2',
      'USDT',
      '0.000001',
      '56.12',
      '0.5',
      'USDT',
      '2026-01-10T00:00:00.000Z',
      '2026-01-10T00:00:00.000Z',
      '2026-01-10T00:01:00.000Z',
      '',
    ]);
    expect(rows[2]?.[col('status')]).toBe('CANCELLED');
    expect(rows[2]?.[col('reason')]).toBe('CANCELLED: beneficiary account closed');
    // Spreadsheet safety: the reference is prefixed; amounts stay as written.
    expect(rows[3]?.[col('merchant_reference_id')]).toBe(`'=HYPERLINK("x")`);
    expect(rows[3]?.[col('payout_amount')]).toBe('0.30');
    expect(rows[3]?.[col('status')]).toBe('PENDING');
    expect(rows[3]?.[col('complete_time')]).toBe('');

    expect(await readCsv(files.totalsPath)).toEqual([
      [...SUMMARY_COLUMNS],
      ['PAID', 'payout_amount', 'PHP', '2', '0.3', '0'],
      ['PAID', 'deduction_amount', 'USDT', '2', '0.000002', '0'],
      ['PAID', 'total_fee', 'USDT', '2', '1', '0'],
      ['PAID', 'rows', '', '2', '', ''],
      ['CANCELLED', 'payout_amount', 'PHP', '1', '999999999999.99', '0'],
      ['CANCELLED', 'deduction_amount', 'USDT', '1', '0.000001', '0'],
      ['CANCELLED', 'total_fee', 'USDT', '1', '0.5', '0'],
      ['CANCELLED', 'rows', '', '1', '', ''],
      ['PENDING', 'payout_amount', 'EUR', '1', '0.3', '0'],
      ['PENDING', 'deduction_amount', 'USDT', '1', '0.000001', '0'],
      ['PENDING', 'total_fee', 'USDT', '1', '0.5', '0'],
      ['PENDING', 'rows', '', '1', '', ''],
      ['ALL', 'rows', '', '4', '', ''],
    ]);
    expect(files.summary.statusCounts).toEqual({ PAID: 2, CANCELLED: 1, PENDING: 1 });
  });

  it("appends what the payout service said since to a row's reason, as the corrected result file shows it", async () => {
    const { db, dir } = await store();
    await addBatch(db, 'B1', 'jan.csv');
    const at = Date.UTC(2026, 0, 10);
    await addRows(db, [validRow('B1', 2, request('INV-1')), validRow('B1', 3, request('INV-2'))]);
    const paidLater =
      'the payout service now reports PAID for payout P-1, recorded CANCELLED here: do not send this row again; check it with the payout service before booking it';
    const asking = 'a payout.updated event reported CANCELLED for payout P-2, recorded PAID here; payoutd is asking the payout service';
    await setRow(db, 'B1', 2, {
      payoutId: 'P-1',
      state: 'CANCELLED',
      serviceStatus: 'CANCELLED',
      reasonCode: 'CANCELLED',
      reason: 'beneficiary account closed',
      createdAtMs: at,
      serviceNote: paidLater,
      serviceNotedAt: at + DAY,
    });
    await setRow(db, 'B1', 3, {
      payoutId: 'P-2',
      state: 'PAID',
      serviceStatus: 'PAID',
      createdAtMs: at + 1,
      serviceNote: asking,
      serviceNotedAt: at + DAY,
    });

    const files = await writeReconciliationReport(join(dir, 'rec.csv'), payoutsCreatedBetween(db, at, at + DAY));
    const [, ...rows] = await readCsv(files.path);
    const reason = RECONCILIATION_COLUMNS.indexOf('reason');
    expect(rows.map((r) => r[reason])).toEqual([`CANCELLED: beneficiary account closed; ${paidLater}`, asking]);
  });

  it('writes a header and an ALL,0 total for an empty period', async () => {
    const { db, dir } = await store();
    const files = await writeReconciliationReport(join(dir, 'empty.csv'), payoutsCreatedBetween(db, 0, DAY), { bom: false });
    const raw = await readFile(files.path, 'utf8');
    expect(raw).toBe(`${RECONCILIATION_COLUMNS.join(',')}\r\n`);
    expect(await readCsv(files.totalsPath)).toEqual([[...SUMMARY_COLUMNS], ['ALL', 'rows', '', '0', '', '']]);
  });

  it('pages through rows that share a creation time without skipping or repeating any', async () => {
    const { db } = await store();
    await addBatch(db, 'B1', 'same-ms.csv');
    await addRows(
      db,
      Array.from({ length: 23 }, (_, i) => validRow('B1', i + 2, request(`SAME-${i}`))),
    );
    await db('payouts').update({ payout_id: db.raw(`'P-' || line`), created_at_ms: db.raw('? + (line % 3)', [T0]), state: 'PENDING' });
    const seen: string[] = [];
    for await (const r of payoutsCreatedBetween(db, T0, T0 + 3, 4)) seen.push(r.merchantReferenceId);
    expect(seen).toHaveLength(23);
    expect(new Set(seen).size).toBe(23);
  });
});
