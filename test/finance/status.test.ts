/**
 * `payoutd status` lists every unfinished batch however old: a batch with a row in UNKNOWN (money may have
 * moved) or under a hold for an operator stayed out of sight once --limit newer batches had finished. The
 * finished ones fill the list up to --limit, and a line says how many older finished ones are not shown
 * (--json: each batch listed says it).
 * A cancelled batch reads CANCELLED, with its reason; an uploader known by uid only is shown by it.
 */
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { status, type BatchView } from '../../src/cli/commands/status.js';
import { loadConfig, type ResolvedConfig } from '../../src/config/index.js';
import { closeDatabase, type Database } from '../../src/store/db.js';
import { cancelReadyRows } from '../../src/store/cancels.js';
import { holdBatch } from '../../src/store/holds.js';
import { insertBatch, insertBatchErrors, receivedBatch, updateBatch } from '../../src/store/index.js';
import { printed } from '../support/output.js';
import { DAY, T0, addBatch, addRows, request, setRow, useStore, validRow } from './helpers.js';

const store = useStore();

function configFor(dir: string): ResolvedConfig {
  return loadConfig(
    { env: {}, cwd: dir },
    { paths: { stateDir: dir, outbox: join(dir, 'outbox'), inbox: join(dir, 'inbox') }, database: { filename: join(dir, 'state.sqlite') } },
  );
}

/** `n` batches of one PAID row each, received a day apart after T0, finished. */
async function finishedBatches(db: Database, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const id = `BNEW${String(i).padStart(2, '0')}`;
    const at = T0 + (i + 1) * DAY;
    await addBatch(db, id, `day${i}.csv`, at);
    await addRows(db, [validRow(id, 2, request(`INV-${i}`))]);
    await setRow(db, id, 2, { state: 'PAID', payoutId: `P-${i}` });
    await updateBatch(db, id, { state: 'COMPLETE', completedAt: at, finalCountsJson: '{"PAID":1}' }, at);
  }
}

/** The lines of the status table naming `id`. */
const lineOf = (out: string, id: string): string => out.split('\n').find((l) => l.startsWith(`${id} `)) ?? '';

it('lists an old batch with an UNKNOWN row and an old held batch after 25 newer finished ones, and says what it leaves out', async () => {
  const { db, dir } = await store();
  await addBatch(db, 'BSTUCK', 'stuck.csv', T0 - 2 * DAY);
  await addRows(db, [validRow('BSTUCK', 2, request('INV-STUCK'))]);
  await setRow(db, 'BSTUCK', 2, { state: 'UNKNOWN' });
  await addBatch(db, 'BHELD', 'changed.csv', T0 - DAY);
  await addRows(db, [validRow('BHELD', 2, request('INV-HELD'))]);
  await holdBatch(db, 'BHELD', { code: 'FILE_CHANGED', reason: 'the file changed after it was taken', until: null }, T0);
  await finishedBatches(db, 25);
  await closeDatabase(db);

  const out = await printed(() => status(configFor(dir), undefined, 20, false));
  expect(lineOf(out, 'BSTUCK')).toMatch(/ACTIVE .*UNKNOWN=1/);
  expect(lineOf(out, 'BHELD')).toMatch(/HELD .*FILE_CHANGED/);
  // 2 unfinished + the 18 most recent finished = 20; the 7 older finished are counted, not listed.
  expect(lineOf(out, 'BNEW24')).not.toBe('');
  expect(lineOf(out, 'BNEW07')).not.toBe('');
  expect(lineOf(out, 'BNEW06')).toBe('');
  expect(out).toContain(
    '… and 7 older finished batch(es), not shown: payoutd status --limit N shows more, payoutd status --batch ID one of them',
  );

  // The JSON stays a list of batches; each says how many the list leaves out, so a script can tell it was cut.
  const json = JSON.parse(await printed(() => status(configFor(dir), undefined, 20, true))) as BatchView[];
  expect(json.map((b) => b.id)).toEqual(expect.arrayContaining(['BSTUCK', 'BHELD']));
  expect(json).toHaveLength(20);
  expect(new Set(json.map((b) => b.olderFinishedNotShown))).toEqual(new Set([7]));
});

it('lists every unfinished batch even beyond --limit, and no "older" line when nothing is left out', async () => {
  const { db, dir } = await store();
  for (let i = 0; i < 3; i++) {
    await addBatch(db, `BOPEN${i}`, `open${i}.csv`, T0 + i * DAY);
    await addRows(db, [validRow(`BOPEN${i}`, 2, request(`INV-OPEN-${i}`))]);
  }
  await closeDatabase(db);
  const out = await printed(() => status(configFor(dir), undefined, 2, false));
  for (let i = 0; i < 3; i++) expect(lineOf(out, `BOPEN${i}`)).toMatch(/ACTIVE/);
  expect(out).not.toContain('older finished');
  const json = JSON.parse(await printed(() => status(configFor(dir), undefined, 2, true))) as BatchView[];
  expect(json.map((b) => b.olderFinishedNotShown)).toEqual([0, 0, 0]);
});

it('shows a cancelled batch as CANCELLED with its reason, also with --batch', async () => {
  const { db, dir } = await store();
  await addBatch(db, 'BCANCEL', 'wrong-month.csv');
  await addRows(db, [validRow('BCANCEL', 2, request('INV-C1')), validRow('BCANCEL', 3, request('INV-C2'))]);
  await setRow(db, 'BCANCEL', 2, { state: 'PENDING', payoutId: 'P-C1' });
  await setRow(db, 'BCANCEL', 3, { state: 'READY' });
  await cancelReadyRows(db, 'BCANCEL', 'cancelled by an operator: wrong month', T0 + 1000);
  await closeDatabase(db);

  const out = await printed(() => status(configFor(dir), undefined, 20, false));
  expect(lineOf(out, 'BCANCEL')).toMatch(/CANCELLED .*PENDING=1 NOT_SUBMITTED=1.*cancelled by an operator: wrong month/);
  const one = await printed(() => status(configFor(dir), 'BCANCEL', 20, false));
  expect(one).toContain('cancelled by an operator: wrong month (2026-01-10T12:00:01.000Z): unsent rows are NOT_SUBMITTED');
  const [view] = JSON.parse(await printed(() => status(configFor(dir), 'BCANCEL', 20, true))) as Record<string, unknown>[];
  expect(view).toMatchObject({ state: 'ACTIVE', shownState: 'CANCELLED', cancelReason: 'cancelled by an operator: wrong month' });
});

it('--batch names an uploader known by uid only by that uid, as the console does', async () => {
  const { db, dir } = await store();
  await addBatch(db, 'BNAMELESS', 'nameless.csv');
  await addRows(db, [validRow('BNAMELESS', 2, request('INV-N1'))]);
  // The file's owner had no user name when it was taken (an LDAP timeout): only the uid is recorded.
  await updateBatch(db, 'BNAMELESS', { uploadedBy: null, uploadedByUid: 6, approvalState: 'REQUIRED', approvalsNeeded: 1 }, T0);
  await closeDatabase(db);

  const one = await printed(() => status(configFor(dir), 'BNAMELESS', 20, false));
  expect(one).toContain('uploaded by: uid 6;');
});

it('--batch names where each stored error is: its column letter, and the sidecar file for a line of it', async () => {
  const { db, dir } = await store();
  await addBatch(db, 'BREFUSED', 'pay.csv');
  await updateBatch(db, 'BREFUSED', { state: 'REJECTED', rejectCode: 'INVALID_FILE', rejectReason: 'see the errors' }, T0);
  await insertBatchErrors(db, 'BREFUSED', [
    { file: 'pay.csv', line: 1, column: '', columnIndex: 7, field: null, code: 'HEADER_UNKNOWN', message: 'this column has no header' },
    {
      file: 'pay.csv.ctl',
      line: 2,
      column: null,
      columnIndex: null,
      field: null,
      code: 'CONTROL_INVALID',
      message: 'control line must be …',
    },
    { line: null, column: null, field: null, code: 'CONTROL_MISSING', message: 'control totals are required' },
  ]);
  await closeDatabase(db);
  const out = await printed(() => status(configFor(dir), 'BREFUSED', 20, false));
  expect(out).toContain('  line 1, column H: HEADER_UNKNOWN: this column has no header\n');
  expect(out).toContain('  pay.csv.ctl, line 2: CONTROL_INVALID: control line must be …\n');
  expect(out).toContain('  file: CONTROL_MISSING: control totals are required\n');
});

it('AMOUNTS and --json totals are what the accepted rows pay; fileTotals what every row of the file adds up to', async () => {
  const { db, dir } = await store();
  await addBatch(db, 'BPART', 'typo.csv');
  await addRows(db, [validRow('BPART', 2, request('INV-P1'))]);
  // A mistyped amount on a refused row is in the file's totals, not in the batch's.
  await updateBatch(
    db,
    'BPART',
    { validCount: 1, invalidCount: 1, totalsJson: '{"PHP":"1000001500.501"}', acceptedTotalsJson: '{"PHP":"1500.5"}' },
    T0,
  );
  await closeDatabase(db);
  const out = await printed(() => status(configFor(dir), undefined, 20, false));
  expect(lineOf(out, 'BPART')).toMatch(/ 1500\.5 PHP /);
  expect(out).not.toContain('1000001500.501');
  const [view] = JSON.parse(await printed(() => status(configFor(dir), 'BPART', 20, true))) as BatchView[];
  expect(view).toMatchObject({ totals: { PHP: '1500.5' }, fileTotals: { PHP: '1000001500.501' } });
});

it('shows no percent done for a batch still being read, nor for one without rows: a dash, null in --json', async () => {
  const { db, dir } = await store();
  const reading = (id: string, fileName: string) =>
    insertBatch(db, {
      ...receivedBatch(
        {
          id,
          fileName,
          storedPath: `/claimed/${id}`,
          controlPath: null,
          doneMarker: false,
          sha256: id.padEnd(64, '0'),
          size: 1,
          mtimeMs: T0,
        },
        T0,
      ),
      state: 'VALIDATING',
    });
  await reading('BREAD', 'big.csv');
  // Rows are stored while the file is read: those so far are not all the batch has.
  await addRows(db, [validRow('BREAD', 2, request('INV-R1'))]);
  await reading('BNOROWS', 'none.csv');
  await closeDatabase(db);
  const out = await printed(() => status(configFor(dir), undefined, 20, false));
  expect(lineOf(out, 'BREAD')).toMatch(/^BREAD +big\.csv +VALIDATING +0 +- /);
  expect(lineOf(out, 'BNOROWS')).toMatch(/^BNOROWS +none\.csv +VALIDATING +0 +- /);
  const views = JSON.parse(await printed(() => status(configFor(dir), 'BREAD', 20, true))) as BatchView[];
  expect(views[0]?.progress).toMatchObject({ rows: 1, final: 0, percent: null });
});
