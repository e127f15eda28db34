/**
 * A taken file is watched until it can no longer change (src/holds:
 * BatchHolds.watchTakenFiles, answered by src/daemon/finisher.ts): the daemon
 * as `payoutd run` wires it, on the system clock and real loops, with the
 * file in `<stateDir>/claimed/` changed by the test as an SFTP session still
 * writing the moved inode would. A batch not yet final is held FILE_CHANGED
 * and its ack says so; an operator's cancel or release gets it its result
 * file; once the grown file is stable again, a notice says what was read and
 * paid and a remainder file holds the complete rows that came later, which
 * pay exactly those rows when dropped; a rewrite is reported, not ignored.
 */
import { appendFile, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parse as parseCsv } from 'csv-parse/sync';
import ExcelJS from 'exceljs';
import { PayoutDaemon } from '../../src/daemon/daemon.js';
import { cancelReadyRows } from '../../src/store/cancels.js';
import { releaseBatchHold } from '../../src/store/holds.js';
import { listBatchesInStates, type BatchRecord } from '../../src/store/batches.js';
import { pipelineDaemon, stopPipelineDaemons } from './daemon-world.js';
import { closePipelines, csvFile, csvRow, HEADER, startPipeline, waitFor, type Pipeline } from './harness.js';

afterEach(async () => {
  await stopPipelineDaemons();
  await closePipelines();
});

interface World {
  p: Pipeline;
  daemon: PayoutDaemon;
  inbox: string;
  outbox: string;
}

async function world(options: { balance?: string; balanceCheck?: boolean; encoding?: string } = {}): Promise<World> {
  const p = await startPipeline({
    startMs: Date.now(),
    balance: options.balance,
    sandbox: { settlement: { minDelayMs: 0, maxDelayMs: 5 } },
  });
  const { daemon, inbox, outbox } = await pipelineDaemon(p, {
    inbox: { stableForMs: 100, unterminatedStableForMs: 300, rescanIntervalMs: 50 },
    batch: {
      onInvalidRows: 'reject-file',
      balanceCheck: { enabled: options.balanceCheck ?? false, recheckMs: 600_000 },
      ...(options.encoding ? { format: { encoding: options.encoding } } : {}),
    },
    submit: { notFoundGraceMs: 0, unsafeShortGrace: true },
    poll: { tickMs: 20, firstPollDelayMs: 0, minIntervalMs: 20, maxIntervalMs: 100 },
  });
  await daemon.start();
  return { p, daemon, inbox, outbox };
}

/** Drops a file and waits until its batch is in one of `states`. */
async function drop(w: World, name: string, content: string | Buffer, states: BatchRecord['state'][]): Promise<BatchRecord> {
  await writeFile(join(w.inbox, name), content);
  let found: BatchRecord | undefined;
  await waitFor(
    async () => {
      await w.daemon.tickInbox();
      found = (await listBatchesInStates(w.p.db, states)).find((b) => b.fileName === name);
      return found !== undefined;
    },
    `${name} to be ${states.join('/')}`,
    15_000,
  );
  return found as BatchRecord;
}

async function outboxFile(w: World, batch: BatchRecord, suffix: string, timeoutMs = 10_000): Promise<string> {
  const path = join(w.outbox, `${batch.id}_${batch.fileName}.${suffix}`);
  await waitFor(
    async () => (await readdir(w.outbox)).includes(`${batch.id}_${batch.fileName}.${suffix}`),
    `${suffix} of ${batch.fileName}`,
    timeoutMs,
  );
  return path;
}

/** The cells of an .xlsx file's first sheet, row by row. */
async function sheetOf(path: string): Promise<{ value: unknown; type: ExcelJS.ValueType }[][]> {
  const book = new ExcelJS.Workbook();
  await book.xlsx.readFile(path);
  const rows: { value: unknown; type: ExcelJS.ValueType }[][] = [];
  book.worksheets[0]?.eachRow((row) => {
    const cells: { value: unknown; type: ExcelJS.ValueType }[] = [];
    row.eachCell({ includeEmpty: true }, (cell) => cells.push({ value: cell.value, type: cell.type }));
    rows.push(cells);
  });
  return rows;
}

/** The notice's records as objects (BOM stripped). */
async function notice(path: string): Promise<Record<string, string>[]> {
  return parseCsv(await readFile(path), { bom: true, columns: true }) as Record<string, string>[];
}

async function untilNoticeFor(w: World, batchId: string, size: number): Promise<BatchRecord> {
  let b: BatchRecord | undefined;
  await waitFor(
    async () => {
      b = await w.p.batch(batchId);
      return b.uploadContinuedSize === size;
    },
    `the notice for ${size} bytes`,
    15_000,
  );
  return b as BatchRecord;
}

const rows = (prefix: string, from: number, to: number): string[] =>
  Array.from({ length: to - from + 1 }, (_, i) => csvRow(`${prefix}-${from + i}`));

describe('pipeline: a taken file whose upload goes on', () => {
  it('after its batch is COMPLETE: a notice and a remainder of the rows that came later; the remainder pays exactly those', async () => {
    const w = await world();
    const batch = await drop(w, 'grows.csv', csvFile(rows('TG', 1, 3)), ['COMPLETE']);
    const later = `${rows('TG', 4, 6).join('\n')}\n`;
    await appendFile(batch.storedPath, later);
    const size = batch.size + Buffer.byteLength(later);

    const noticed = await untilNoticeFor(w, batch.id, size);
    const remainderPath = await outboxFile(w, batch, 'remainder.csv');
    // The input format, with a BOM like every outbox file.
    expect(await readFile(remainderPath, 'utf8')).toBe(`\uFEFF${HEADER}\n${later}`);
    const records = await notice(await outboxFile(w, batch, 'upload-continued.csv'));
    expect(
      records.map((r) => [
        r['part'],
        r['first_line'],
        r['last_line'],
        r['rows'],
        r['from_byte'],
        r['to_byte'],
        r['status'],
        r['currency'],
        r['amount'],
      ]),
    ).toEqual([
      ['TAKEN', '2', '4', '3', '0', String(batch.size), 'COMPLETE', '', ''],
      ['READ', '', '', '3', '', '', 'PAID', 'PHP', '301.5'],
      ['NOT_READ', '5', '7', '3', String(batch.size), String(size), 'NOT_PAID', '', ''],
    ]);
    expect(records[0]?.['note']).toContain(`nothing after byte ${batch.size} was read`);
    expect(records[2]?.['note']).toContain(`${batch.id}_grows.csv.remainder.csv`);
    expect(noticed.uploadContinuedNote).toContain(`grew from ${batch.size} to ${size} bytes`);
    const warned = w.p.logLines.filter((l) => l.includes('"level":"warn"') && l.includes('the upload of a taken file went on'));
    expect(warned.length).toBeGreaterThanOrEqual(1);

    // Dropped back, the remainder pays the rows that came later, and nothing twice.
    const rest = await drop(w, 'grows.csv.remainder.csv', await readFile(remainderPath, 'utf8'), ['COMPLETE']);
    expect(rest.rowCount).toBe(3);
    for (let i = 1; i <= 6; i++) expect(w.p.ledgerCount(`TG-${i}`), `TG-${i}`).toBe(1);
  });

  it('the remainder keeps out a trailing partial line and control lines, escapes formula-like cells, and is written again as the file grows', async () => {
    const w = await world();
    const batch = await drop(w, 'parts.csv', csvFile(rows('TP', 1, 2)), ['COMPLETE']);
    const formula = csvRow('TP-F', { 'beneficiary.accountName': '=HYPERLINK("http://e","c")' }).replace(
      '=HYPERLINK("http://e","c")',
      '"=HYPERLINK(""http://e"",""c"")"',
    );
    const partial = csvRow('TP-4').slice(0, 20);
    await appendFile(batch.storedPath, `${csvRow('TP-3')}\n${formula}\n#CONTROL,rows,5\n${partial}`);
    const first = await untilNoticeFor(w, batch.id, (await readFile(batch.storedPath)).length);
    const remainderPath = await outboxFile(w, batch, 'remainder.csv');
    const remainder = await readFile(remainderPath, 'utf8');
    expect(remainder.split('\n')).toEqual([`\uFEFF${HEADER}`, csvRow('TP-3'), formula.replace('"=HYPERLINK', `"'=HYPERLINK`), '']);
    const parts = (await notice(await outboxFile(w, batch, 'upload-continued.csv'))).map((r) => r['part']);
    expect(parts).toEqual(['TAKEN', 'READ', 'NOT_READ', 'CONTROL_LINES', 'PARTIAL_LINE']);
    expect(first.uploadContinuedNote).toContain('2 complete row(s) not paid');

    // The upload goes on: the partial line is completed, and both files are written again.
    await appendFile(batch.storedPath, `${csvRow('TP-4').slice(20)}\n`);
    await untilNoticeFor(w, batch.id, (await readFile(batch.storedPath)).length);
    expect((await readFile(remainderPath, 'utf8')).split('\n').slice(-2)).toEqual([csvRow('TP-4'), '']);
    expect((await notice(await outboxFile(w, batch, 'upload-continued.csv'))).map((r) => r['part'])).toEqual([
      'TAKEN',
      'READ',
      'NOT_READ',
      'CONTROL_LINES',
    ]);
  });

  it('rewritten after it was taken: the notice says so, no remainder, never ignored', async () => {
    const w = await world();
    const batch = await drop(w, 'rewritten.csv', csvFile(rows('TR', 1, 2)), ['COMPLETE']);
    await appendFile(batch.storedPath, `${csvRow('TR-3')}\n`);
    await untilNoticeFor(w, batch.id, (await readFile(batch.storedPath)).length);
    const remainderFiles = [`${batch.id}_rewritten.csv.remainder.csv`, `${batch.id}_rewritten.csv.remainder.xlsx`];
    expect(await readdir(w.outbox)).toEqual(expect.arrayContaining(remainderFiles));

    // The same file written again from the start, with another amount in its first row.
    await writeFile(batch.storedPath, csvFile([csvRow('TR-1', { payoutAmount: '999.00' }), ...rows('TR', 2, 3)]));
    await waitFor(
      async () => /^rewritten after it was taken/.test((await w.p.batch(batch.id)).uploadContinuedNote ?? ''),
      'the notice of the rewrite',
      15_000,
    );
    const records = await notice(await outboxFile(w, batch, 'upload-continued.csv'));
    expect(records.map((r) => r['part'])).toEqual(['TAKEN', 'READ', 'REWRITTEN']);
    expect(records[2]?.['note']).toContain('No remainder is written');
    // Neither remainder file of what the file was before is left.
    for (const name of remainderFiles) expect(await readdir(w.outbox)).not.toContain(name);
    expect(w.p.ledgerCount('TR-3')).toBe(0);
  });

  it('before its batch is final: held FILE_CHANGED, the ack says so; cancel gets it its result file, and the notice follows the outcome', async () => {
    // The balance check holds the batch at acceptance, so its rows wait READY when its upload goes on.
    const w = await world({ balance: '1', balanceCheck: true });
    const batch = await drop(w, 'held.csv', csvFile(rows('TH', 1, 2)), ['ACTIVE']);
    expect((await w.p.batch(batch.id)).holdCode).toBe('INSUFFICIENT_BALANCE');
    await appendFile(batch.storedPath, `${csvRow('TH-3')}\n`);
    await waitFor(async () => (await w.p.batch(batch.id)).holdCode === 'FILE_CHANGED', 'the FILE_CHANGED hold');
    await waitFor(
      async () => (await readFile(join(w.outbox, `${batch.id}_held.csv.ack.csv`), 'utf8')).includes(',HELD,'),
      'the ack to say HELD',
    );
    const ackRecords = parseCsv(await readFile(join(w.outbox, `${batch.id}_held.csv.ack.csv`)), { bom: true, columns: true }) as Record<
      string,
      string
    >[];
    // The totals line first says the batch is held; then the hold and the rows.
    expect(ackRecords[0]).toMatchObject({ line: '', verdict: 'TOTAL' });
    expect(ackRecords[0]?.['reason']).toMatch(/^PHP: 2 rows, .* Batch HELD: /);
    const ack = ackRecords.slice(1);
    expect(ack[0]).toMatchObject({ line: '', verdict: 'HELD' });
    expect(ack[0]?.['reason']).toMatch(/^FILE_CHANGED: size changed from \d+ to \d+ bytes after the claim/);
    expect(ack.slice(1).map((r) => r['verdict'])).toEqual(['ACCEPTED', 'ACCEPTED']);
    const held = await untilNoticeFor(w, batch.id, (await readFile(batch.storedPath)).length);
    const heldNotice = await notice(await outboxFile(w, batch, 'upload-continued.csv'));
    expect(heldNotice[0]?.['note']).toContain('is held (FILE_CHANGED');
    // Its rows wait READY, never sent: held with the batch, not PENDING (a payout the service holds).
    expect(heldNotice.filter((r) => r['part'] === 'READ').map((r) => [r['status'], r['rows'], r['currency'], r['note']])).toEqual([
      ['HELD', '2', 'PHP', expect.stringMatching(/^not sent: held with the batch/)],
    ]);

    // The operator cancels (payoutd cancel): the rows not sent are final, the batch finishes.
    expect(await cancelReadyRows(w.p.db, batch.id, 'cancelled by an operator: test', Date.now())).toEqual({
      notSubmitted: 2,
      claimed: 0,
      unknown: 0,
    });
    const result = await readFile(await outboxFile(w, batch, 'result.csv'), 'utf8');
    expect(result).toMatch(/TH-1,NOT_SUBMITTED/);
    expect(result).toMatch(/TH-2,NOT_SUBMITTED/);
    // The notice is written again for the finished batch.
    await waitFor(async () => ((await w.p.batch(batch.id)).uploadContinuedAt ?? 0) > (held.uploadContinuedAt ?? 0), 'the notice again');
    const records = await notice(await outboxFile(w, batch, 'upload-continued.csv'));
    expect(records[0]?.['status']).toBe('COMPLETE');
    expect(records[1]).toMatchObject({ part: 'READ', status: 'NOT_SUBMITTED', rows: '2' });
    expect(w.p.ledgerCount('TH-1')).toBe(0);
  });

  it('changed while it was read: held at acceptance, and the ack written then already says so', async () => {
    const w = await world();
    const claimed = await w.p.claim('read-changed.csv', csvFile(rows('TA', 1, 2)));
    // The record says the file was older than it is: it changed between the claim and the acceptance.
    const batch = await w.daemon.intake.receive({ ...claimed, mtimeMs: claimed.mtimeMs - 5000 });
    expect([batch.state, batch.holdCode]).toEqual(['ACTIVE', 'FILE_CHANGED']);
    const ack = (
      parseCsv(await readFile(join(w.outbox, `${batch.id}_read-changed.csv.ack.csv`)), { bom: true, columns: true }) as Record<
        string,
        string
      >[]
    ).filter((r) => r['verdict'] !== 'TOTAL');
    expect(ack.map((r) => [r['line'], r['verdict']])).toEqual([
      ['', 'HELD'],
      ['2', 'ACCEPTED'],
      ['3', 'ACCEPTED'],
    ]);
    expect(ack[0]?.['reason']).toMatch(/NONE will be paid until an operator decides/);
    expect(w.p.ledgerCount('TA-1')).toBe(0);
  });

  it('grown between its claim and its reading: only the bytes claimed are read; the rows that came later are the remainder, not paid', async () => {
    const w = await world();
    const claimed = await w.p.claim('grown.csv', csvFile(rows('TR', 1, 2)));
    // The upload went on into the moved inode before the reader opened it.
    const later = `${csvRow('TR-3')}\n`;
    await appendFile(claimed.storedPath, later);
    const batch = await w.daemon.intake.receive(claimed);
    expect([batch.state, batch.holdCode, batch.rowCount]).toEqual(['ACTIVE', 'FILE_CHANGED', 2]);
    const ack = (
      parseCsv(await readFile(join(w.outbox, `${batch.id}_grown.csv.ack.csv`)), { bom: true, columns: true }) as Record<string, string>[]
    ).filter((r) => r['verdict'] !== 'TOTAL');
    expect(ack.map((r) => [r['line'], r['verdict']])).toEqual([
      ['', 'HELD'],
      ['2', 'ACCEPTED'],
      ['3', 'ACCEPTED'],
    ]);
    await releaseBatchHold(w.p.db, batch.id, Date.now()); // payoutd release
    await untilNoticeFor(w, batch.id, claimed.size + Buffer.byteLength(later));
    const remainder = await readFile(await outboxFile(w, batch, 'remainder.csv'), 'utf8');
    expect(remainder).toBe(`\uFEFF${HEADER}\n${later}`);
    const noticePath = await outboxFile(w, batch, 'upload-continued.csv');
    // The notice follows the batch's outcome: written again once it is COMPLETE.
    await waitFor(async () => (await notice(noticePath))[0]?.['status'] === 'COMPLETE', 'the notice of the COMPLETE batch', 15_000);
    const records = await notice(noticePath);
    expect(records.map((r) => [r['part'], r['rows'], r['status']])).toEqual([
      ['TAKEN', '2', 'COMPLETE'],
      ['READ', '2', 'PAID'],
      ['NOT_READ', '1', 'NOT_PAID'],
    ]);
    expect([w.p.ledgerCount('TR-1'), w.p.ledgerCount('TR-2'), w.p.ledgerCount('TR-3')]).toEqual([1, 1, 0]);
  });

  it('held FILE_CHANGED and released by an operator: not held again for the same upload; its rows are paid and its result written', async () => {
    const w = await world({ balance: '1', balanceCheck: true });
    const batch = await drop(w, 'released.csv', csvFile(rows('TL', 1, 2)), ['ACTIVE']);
    await appendFile(batch.storedPath, `${csvRow('TL-3')}\n`);
    await waitFor(async () => (await w.p.batch(batch.id)).holdCode === 'FILE_CHANGED', 'the FILE_CHANGED hold');
    w.p.sandbox.setBalance('M001', 'USDT', '1000000');
    await releaseBatchHold(w.p.db, batch.id, Date.now()); // payoutd release
    await outboxFile(w, batch, 'result.csv', 15_000);
    // The finisher writes the result file first, then records COMPLETE.
    await waitFor(async () => (await w.p.batch(batch.id)).state === 'COMPLETE', 'COMPLETE after the result file');
    const done = await w.p.batch(batch.id);
    expect([done.state, done.holdCode]).toEqual(['COMPLETE', null]);
    expect(w.p.ledgerCount('TL-1')).toBe(1);
    expect(w.p.ledgerCount('TL-2')).toBe(1);
    expect(w.p.ledgerCount('TL-3')).toBe(0);
  });

  it('of a Windows-1252 file: the remainder stays in its encoding, its .xlsx twin reads as written; each pays the later rows once', async () => {
    const w = await world({ encoding: 'auto' });
    const named = (from: number, to: number): string[] =>
      Array.from({ length: to - from + 1 }, (_, i) =>
        csvRow(`TW-${from + i}`, { 'beneficiary.accountName': 'José Müller', 'beneficiary.accountNumber': '0012345670' }),
      );
    const batch = await drop(w, 'latin.csv', Buffer.from(csvFile(named(1, 2)), 'latin1'), ['COMPLETE']);
    expect(batch.encoding).toBe('windows-1252');
    const later = Buffer.from(`${named(3, 4).join('\n')}\n`, 'latin1');
    await appendFile(batch.storedPath, later);
    await untilNoticeFor(w, batch.id, batch.size + later.length);
    const remainder = await readFile(await outboxFile(w, batch, 'remainder.csv'));
    // A UTF-8 byte order mark before Windows-1252 bytes would have the file read as UTF-8, and refused.
    expect(remainder).toEqual(Buffer.concat([Buffer.from(`${HEADER}\n`), later]));

    // The twins (outbox.xlsx is on by default): the remainder's cells are text, accents and leading zeros intact.
    const sheet = await sheetOf(await outboxFile(w, batch, 'remainder.xlsx'));
    expect(sheet.map((cells) => cells.map((c) => c.value))).toEqual([HEADER, ...named(3, 4)].map((line) => line.split(',')));
    expect(sheet[1]?.every((c) => c.type === ExcelJS.ValueType.String)).toBe(true);
    const notice = await sheetOf(await outboxFile(w, batch, 'upload-continued.xlsx'));
    expect(notice.map((cells) => String(cells[0]?.value ?? ''))).toEqual(['batch_id', batch.id, batch.id, batch.id]);

    // Dropped back, the .xlsx pays the later rows; the CSV dropped after it is read as it was written, and pays nothing twice.
    const fromXlsx = await drop(w, 'latin.remainder.xlsx', await readFile(await outboxFile(w, batch, 'remainder.xlsx')), ['COMPLETE']);
    expect(fromXlsx.rowCount).toBe(2);
    for (const row of await w.p.rows(fromXlsx.id)) expect(row.requestValues).toContain('José Müller');
    // Its rows are duplicates now (reject-file refuses the file for them), but it was read as Windows-1252.
    const fromCsv = await drop(w, 'latin.csv.remainder.csv', remainder, ['COMPLETE', 'REJECTED']);
    expect([fromCsv.rejectCode, fromCsv.rowCount, fromCsv.encoding]).toEqual(['INVALID_ROWS', 2, 'windows-1252']);
    expect(fromCsv.rejectReason).toContain('2 duplicate reference');
    for (let i = 1; i <= 4; i++) expect(w.p.ledgerCount(`TW-${i}`), `TW-${i}`).toBe(1);
  });

  it('a file refused whole for a cut last row, whose upload then ends: the remainder holds every row (nothing was paid)', async () => {
    const w = await world();
    const full = csvFile(rows('TC', 1, 3));
    const cut = full.slice(0, full.length - 4); // inside the last row's last field, no line break
    const batch = await drop(w, 'cut.csv', cut, ['REJECTED']);
    expect(batch.rejectReason).toMatch(/upload may be incomplete/);
    await appendFile(batch.storedPath, full.slice(cut.length));
    const b = await untilNoticeFor(w, batch.id, Buffer.byteLength(full));
    expect(b.uploadContinuedNote).toContain('3 complete row(s) not paid, lines 2-4');
    expect(await readFile(await outboxFile(w, batch, 'remainder.csv'), 'utf8')).toBe(`\uFEFF${full}`);
    const records = await notice(await outboxFile(w, batch, 'upload-continued.csv'));
    expect(records[0]?.['note']).toContain('refused whole');
    expect(records.find((r) => r['part'] === 'NOT_READ')?.['note']).toContain('every complete row of the file');
  });
});
