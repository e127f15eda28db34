/**
 * The upload-continued notice of a batch an operator cancelled: a row still READY in it (a create proven never
 * received comes back READY before the cancel's sweep) is never sent, so it is not "waiting its turn" (NOT_SENT).
 */
import { appendFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { writeUploadContinued } from '../../src/daemon/continued-upload.js';
import { getBatch, insertBatch, receivedBatch, updateBatch, type BatchRecord } from '../../src/store/index.js';
import { HEADER, csvRow } from '../pipeline/harness.js';
import { T0, addRows, request, setRow, useStore, validRow } from './helpers.js';

const store = useStore();

describe('the upload-continued notice of a cancelled batch', () => {
  it('counts its READY rows NOT_SUBMITTED, never as waiting their turn', async () => {
    const { db, dir } = await store();
    const outbox = join(dir, 'outbox');
    await mkdir(outbox);
    const stored = join(dir, 'taken.csv');
    await writeFile(stored, [HEADER, csvRow('U-1'), csvRow('U-2')].join('\n') + '\n');
    const taken = (await readFile(stored)).length;
    await appendFile(stored, csvRow('U-3') + '\n');
    const sizeNow = (await readFile(stored)).length;
    const file = {
      id: 'B1',
      fileName: 'taken.csv',
      storedPath: stored,
      controlPath: null,
      doneMarker: false,
      sha256: 'b'.repeat(64),
      size: taken,
      mtimeMs: T0,
    };
    await insertBatch(db, { ...receivedBatch(file, T0), state: 'ACTIVE', delimiter: ',', acceptedAt: T0 });
    await addRows(db, [validRow('B1', 2, request('U-1')), validRow('B1', 3, request('U-2'))]);
    await setRow(db, 'B1', 2, { state: 'NOT_SUBMITTED', reasonCode: 'CANCELLED_BY_OPERATOR', reason: 'wrong file' });
    await setRow(db, 'B1', 3, { state: 'READY' });
    await updateBatch(db, 'B1', { cancelledAt: T0 + 1, cancelReason: 'wrong file' }, T0 + 1);
    const batch = (await getBatch(db, 'B1')) as BatchRecord;
    const ctx = { db, dir: outbox, bom: false, maxRecordBytes: 65_536, encoding: 'utf-8' };
    const { noticePath } = await writeUploadContinued(ctx, batch, sizeNow);
    const notice = parse(await readFile(noticePath), { bom: true, columns: true }) as Record<string, string>[];
    const read = notice.filter((r) => r['part'] === 'READ').map((r) => [r['status'], r['rows'], r['currency']]);
    expect(read).toEqual([['NOT_SUBMITTED', '2', 'PHP']]);
  });
});
