/**
 * Uploads are paid whole or not at all: the real `payoutd run` process
 * against real OpenSSH sftp uploads (a private sshd on loopback,
 * test/support/sftp.ts), with the amount as the last column so that a row
 * cut inside its last field still validates (`1500.50` cut to `150`).
 *
 * A real sftp upload grows its file one write request (`-B` bytes) at a
 * time, paced by the bandwidth limit, so a stall (the client stopped with
 * SIGSTOP, like a laptop that sleeps) leaves the file at a multiple of `-B`.
 * Where that lands in a row is chosen honestly by the layout of the file:
 * every data line is exactly LINE bytes (the beneficiary's name padded with
 * letters), LINE divides `-B`, and the header's length (its last name padded
 * with spaces, which the header match trims) sets where every multiple of
 * `-B` falls within a row: at a row's end, or 5 bytes before it (inside the
 * amount). The cut actually taken is checked against that in each test.
 *
 * Skipped, with the reason, only where there is no sshd or no root.
 */
import { statSync } from 'node:fs';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Decimal } from '../../src/domain/money.js';
import { FIELD_PATHS } from '../../src/ingest/rules/index.js';
import { VALID_ROW } from '../support/rows.js';
import { SftpServer, sftpSkipReason } from '../support/sftp.js';
import { makeRows, toCsv } from './batch-files.js';
import { ledgerByReference, readOutboxCsv, startE2e, waitFor, type BatchStatus, type E2e } from './harness.js';

const skip = sftpSkipReason();
if (skip !== null) console.warn(`test/e2e/sftp-uploads.test.ts: the real-sftp tests are skipped: ${skip}`);

/** Every data line's length; it divides REQUEST. */
const LINE = 128;
/** sftp's write request (`-B`): each step of the file's growth. */
const REQUEST = 1024;

const COLUMNS = [...FIELD_PATHS.filter((f) => f !== 'payoutAmount'), 'payoutAmount' as const];

interface Row {
  ref: string;
  amount: string;
}

/** The header line, exactly `bytes` long (its last name padded with spaces). */
function headerOf(bytes: number): string {
  const bare = COLUMNS.join(',');
  if (bare.length + 1 > bytes) throw new Error(`a header needs ${bare.length + 1} bytes`);
  return `${bare}${' '.repeat(bytes - bare.length - 1)}\n`;
}

/** A PHP row with the amount last, exactly `bytes` long (the beneficiary's name padded with letters). */
function lineOf(row: Row, bytes: number): string {
  const cells = (name: string): string =>
    `${COLUMNS.map((f) => (f === 'merchantReferenceId' ? row.ref : f === 'payoutAmount' ? row.amount : f === 'beneficiary.accountName' ? name : VALID_ROW[f])).join(',')}\n`;
  const base = cells('Juan Dela Cruz');
  if (Buffer.byteLength(base) > bytes) throw new Error(`a row needs ${Buffer.byteLength(base)} bytes`);
  return cells(`Juan Dela Cruz${'x'.repeat(bytes - Buffer.byteLength(base))}`);
}

/** `count` rows, amounts of seven characters (`1000.50`...), so cutting 4 of them leaves 3 that still validate. */
function rowsOf(prefix: string, count: number): Row[] {
  return Array.from({ length: count }, (_, i) => ({ ref: `${prefix}-${String(i + 1).padStart(4, '0')}`, amount: `${1000 + i}.50` }));
}

/** A header of `headerBytes`, then every row LINE bytes long. */
function fixedFile(rows: Row[], headerBytes: number): string {
  return headerOf(headerBytes) + rows.map((r) => lineOf(r, LINE)).join('');
}

/** The first header length from `min` on whose end is `offset` bytes past a multiple of LINE. */
function headerBytesAt(offset: number, min = 256): number {
  return min + ((offset - (min % LINE) + LINE) % LINE);
}

/** An upload's source in the test's folder: 200 rows `<prefix>-NNNN` after a header of headerBytesAt(`offset`). */
async function writeSource(
  e2e: E2e,
  prefix: string,
  offset: number,
): Promise<{ rows: Row[]; headerBytes: number; text: string; source: string }> {
  const rows = rowsOf(prefix, 200);
  const headerBytes = headerBytesAt(offset);
  const text = fixedFile(rows, headerBytes);
  const source = join(e2e.dir, 'source.csv');
  await writeFile(source, text);
  return { rows, headerBytes, text, source };
}

/** Each reference of `rows` paid exactly once, for the amount written, and no other payout. */
function expectPaidOnceAsWritten(e2e: E2e, rows: Row[]): void {
  const byRef = ledgerByReference(e2e.ledger());
  expect([...byRef.keys()].sort()).toEqual(rows.map((r) => r.ref).sort());
  for (const r of rows) {
    const entries = byRef.get(r.ref) ?? [];
    expect(entries, r.ref).toHaveLength(1);
    expect(
      new Decimal(entries[0]?.payoutAmount ?? '0').eq(r.amount),
      `${r.ref}: paid ${entries[0]?.payoutAmount}, written ${r.amount}`,
    ).toBe(true);
  }
}

type Watched = BatchStatus & { size: number; uploadContinuedNote: string | null; completedAt: string | null };

async function watched(e2e: E2e, id: string): Promise<Watched> {
  return (await e2e.batches()).find((b) => b.id === id) as Watched;
}

function outboxPath(e2e: E2e, b: Pick<BatchStatus, 'id' | 'fileName'>, suffix: string): string {
  return join(e2e.outbox, `${b.id}_${b.fileName}.${suffix}`);
}

async function waitForFile(path: string, timeoutMs: number): Promise<void> {
  const dir = join(path, '..');
  const name = path.slice(dir.length + 1);
  await waitFor(async () => (await readdir(dir)).includes(name), name, timeoutMs, 100);
}

let server: SftpServer | undefined;
beforeAll(async () => {
  if (skip === null) server = await SftpServer.start();
}, 30_000);
afterAll(() => server?.close());

describe('uploads are paid whole or not at all', () => {
  it.skipIf(skip !== null)(
    'a stall cut inside the last field pays nothing, says the upload looks incomplete, and the resumed upload is reported',
    async () => {
      const e2e = await startE2e({
        config: { inbox: { stableForMs: 1000, unterminatedStableForMs: 3000, rescanIntervalMs: 500 } },
      });
      // Every multiple of REQUEST is 5 bytes before the end of a row: inside its amount (`1012.50` read as `101`).
      const { headerBytes, text, source } = await writeSource(e2e, 'CUT', 5);
      const daemon = await e2e.startDaemon();

      await server!.upload({
        source,
        targetDir: e2e.inbox,
        remoteName: 'cut.csv',
        rateKbit: 100,
        bufferBytes: REQUEST,
        stall: { afterMs: 1000, forMs: 9000 },
        timeoutMs: 60_000,
      });
      const batch = await e2e.waitForBatch('cut.csv', ['REJECTED', 'ACTIVE', 'COMPLETE'], 20_000);
      const taken = await watched(e2e, batch.id);
      // The premise: taken mid-upload, cut inside a row's last field (5 bytes before its end).
      expect(taken.size).toBeLessThan(text.length);
      expect((taken.size - headerBytes) % LINE).toBe(LINE - 5);
      expect(batch.state).toBe('REJECTED');
      expect(batch.rejectReason).toMatch(/upload may be incomplete/);
      const ack = await readOutboxCsv(outboxPath(e2e, batch, 'ack.csv'));
      expect(ack.rows.map((r) => [r['line'], r['verdict']])).toEqual([['', 'REJECTED']]);
      expect(ack.rows[0]?.['reason']).toMatch(/upload may be incomplete; upload it again/);
      expect(e2e.ledger()).toEqual([]);

      // The upload went on into the taken file, and ended: reported, with every row (none was paid).
      await waitForFile(outboxPath(e2e, batch, 'upload-continued.csv'), 20_000);
      await waitFor(
        async () => (await watched(e2e, batch.id)).uploadContinuedNote?.includes(`to ${text.length} bytes`),
        'the notice of the whole file',
        20_000,
      );
      expect(await readFile(outboxPath(e2e, batch, 'remainder.csv'), 'utf8')).toBe(`\uFEFF${text}`);
      const notice = await readOutboxCsv(outboxPath(e2e, batch, 'upload-continued.csv'));
      expect(notice.rows[0]?.['note']).toContain('refused whole');
      expect(daemon.logs.some((l) => l.level === 'warn' && String(l.msg).startsWith('the upload of a taken file went on'))).toBe(true);
      expect(e2e.ledger()).toEqual([]);
    },
    120_000,
  );

  it.skipIf(skip !== null)(
    'a stall cut at a row boundary that resumes after the batch is COMPLETE: notice and remainder within seconds; the remainder pays exactly the missing rows',
    async () => {
      const e2e = await startE2e({ config: { inbox: { stableForMs: 1000, rescanIntervalMs: 500 } } });
      // Every multiple of REQUEST is a row's end.
      const { rows, headerBytes, text, source } = await writeSource(e2e, 'ROW', 0);
      await e2e.startDaemon();

      // The upload stays stopped until the batch of what was taken is final: that is the premise, whatever the machine's speed.
      let finished!: () => void;
      const batchFinal = new Promise<void>((resolve) => (finished = resolve));
      const uploaded = server!.upload({
        source,
        targetDir: e2e.inbox,
        remoteName: 'boundary.csv',
        rateKbit: 100,
        bufferBytes: REQUEST,
        stall: { atBytes: Math.floor(text.length / 3), until: batchFinal },
        timeoutMs: 180_000,
      });
      const batch = await e2e.waitForBatch('boundary.csv', ['COMPLETE', 'REJECTED'], 90_000).finally(finished);
      const resumedAt = Date.now();
      await uploaded;
      const complete = await watched(e2e, batch.id);
      // The premise: taken mid-upload at a row's end, and finished before the upload resumed.
      expect(complete.state).toBe('COMPLETE');
      expect(complete.size).toBeLessThan(text.length);
      expect((complete.size - headerBytes) % LINE).toBe(0);
      expect(complete.completedAt === null ? Infinity : Date.parse(complete.completedAt)).toBeLessThanOrEqual(resumedAt);
      const read = (complete.size - headerBytes) / LINE;

      // Within seconds of the upload's end: the notice, and the rows after the cut ready to drop.
      await waitForFile(outboxPath(e2e, batch, 'remainder.csv'), 15_000);
      await waitFor(
        async () => (await watched(e2e, batch.id)).uploadContinuedNote?.includes(`to ${text.length} bytes`),
        'the notice',
        15_000,
      );
      const remainder = await readFile(outboxPath(e2e, batch, 'remainder.csv'), 'utf8');
      expect(remainder).toBe(
        '\uFEFF' +
          headerOf(headerBytes) +
          rows
            .slice(read)
            .map((r) => lineOf(r, LINE))
            .join(''),
      );
      const notice = await readOutboxCsv(outboxPath(e2e, batch, 'upload-continued.csv'));
      expect(notice.rows.map((r) => [r['part'], r['rows'], r['status']])).toEqual([
        ['TAKEN', String(read), 'COMPLETE'],
        ['READ', String(read), 'PAID'],
        ['NOT_READ', String(rows.length - read), 'NOT_PAID'],
      ]);
      expect(notice.rows[0]?.['note']).toContain(`nothing after byte ${complete.size} was read`);
      const status = await e2e.cli(['status', '--batch', batch.id]);
      expect(status.stdout).toMatch(/UPLOAD CONTINUED/);
      expect(status.stdout).toContain(`grew from ${complete.size} to ${text.length} bytes`);

      // Dropped back, the remainder pays exactly the rows that were missing: every reference once, none twice.
      await e2e.drop('boundary-remainder.csv', remainder);
      const rest = await e2e.waitForBatch('boundary-remainder.csv', ['COMPLETE', 'REJECTED'], 20_000);
      expect([rest.state, rest.rowCount]).toEqual(['COMPLETE', rows.length - read]);
      expectPaidOnceAsWritten(e2e, rows);
    },
    240_000,
  );

  it.skipIf(skip !== null)(
    'a .done marker left from an earlier upload of that name vouches for nothing: the next upload, stalled inside its last value, is not taken; whole, it is paid as written',
    async () => {
      const e2e = await startE2e({ config: { inbox: { stableForMs: 1000, rescanIntervalMs: 500 } } });
      // Every multiple of REQUEST is 5 bytes before the end of a row: inside its amount.
      const { rows, headerBytes, text, source } = await writeSource(e2e, 'STALE', 5);
      // The earlier upload's marker, landed after its file was taken (`put x.csv; put x.csv.done`), and a marker alone.
      await writeFile(join(e2e.inbox, 'stale.csv.done'), '');
      await writeFile(join(e2e.inbox, 'alone.csv.done'), '');

      // The daemon starts once the next upload of that name has stalled: it finds the file and the old marker side by side.
      let resume!: () => void;
      const resumed = new Promise<void>((resolve) => (resume = resolve));
      const atBytes = Math.floor(text.length / 3);
      const uploaded = server!.upload({
        source,
        targetDir: e2e.inbox,
        remoteName: 'stale.csv',
        rateKbit: 100,
        bufferBytes: REQUEST,
        stall: { atBytes, until: resumed },
        timeoutMs: 120_000,
      });
      const sizeNow = (): number => statSync(join(e2e.inbox, 'stale.csv'), { throwIfNoEntry: false })?.size ?? 0;
      await waitFor(() => sizeNow() >= atBytes, 'the stall', 60_000);
      await new Promise((r) => setTimeout(r, 300)); // the client is stopped within the sftp harness's 10 ms check
      const stalledAt = sizeNow();
      expect((stalledAt - headerBytes) % LINE).toBe(LINE - 5);
      try {
        const daemon = await e2e.startDaemon();
        await daemon.running();
        // Many windows later the stalled file is still waiting, and nothing is paid.
        await new Promise((r) => setTimeout(r, 6000));
        expect(await e2e.batches()).toEqual([]);
        expect(e2e.ledger()).toEqual([]);
        expect((await readdir(e2e.inbox)).sort()).toEqual(['stale.csv', 'stale.csv.done']);
        const warned = daemon.logs.filter((l) => l.level === 'warn' && l['marker'] === 'stale.csv.done');
        expect(warned.map((l) => l.msg)).toEqual([expect.stringContaining('older than the file') as unknown]);
        expect(Date.parse(String(warned[0]?.['markerChangedAt']))).toBeLessThan(Date.parse(String(warned[0]?.['fileChangedAt'])));
        expect(daemon.logs.filter((l) => l.level === 'info' && l['marker'] === 'alone.csv.done')).toHaveLength(1);
        expect(sizeNow()).toBe(stalledAt);
      } finally {
        resume();
      }
      await uploaded;
      const batch = await e2e.waitForBatch('stale.csv', ['COMPLETE', 'REJECTED'], 90_000);
      expect([batch.state, (await watched(e2e, batch.id)).size]).toEqual(['COMPLETE', text.length]);
      expectPaidOnceAsWritten(e2e, rows);
    },
    240_000,
  );

  it('a file rewritten after it was taken is reported, never silently ignored', async () => {
    const e2e = await startE2e({ config: { inbox: { stableForMs: 300, rescanIntervalMs: 500 } } });
    const daemon = await e2e.startDaemon();
    const rows = makeRows('REWRITE', 4);
    await e2e.drop('rewritten.csv', toCsv(rows));
    const batch = await e2e.waitForBatch('rewritten.csv', ['COMPLETE'], 20_000);
    const claimed = join(e2e.stateDir, 'claimed');
    const stored = join(claimed, (await readdir(claimed)).find((n) => n.endsWith('__rewritten.csv')) as string);

    // Written again in place (an editor, a second upload over the first): another first row, one row more.
    const changed = rows.map((r, i) => (i === 0 ? { ...r, payoutAmount: '7777.77' } : r));
    await writeFile(stored, toCsv([...changed, ...makeRows('REWRITE-MORE', 1)]));
    await waitForFile(outboxPath(e2e, batch, 'upload-continued.csv'), 15_000);
    const notice = await readOutboxCsv(outboxPath(e2e, batch, 'upload-continued.csv'));
    // The rows read, per status and currency, then the rewrite; nothing offered to pay.
    expect([...new Set(notice.rows.map((r) => r['part']))]).toEqual(['TAKEN', 'READ', 'REWRITTEN']);
    expect(notice.rows.at(-1)?.['note']).toMatch(/rewritten after it was taken.*No remainder is written/);
    expect(await e2e.outboxNames()).not.toContain(`${batch.id}_rewritten.csv.remainder.csv`);
    const status = await e2e.cli(['status', '--batch', batch.id]);
    expect(status.stdout).toMatch(/upload continued after the file was taken: rewritten after it was taken/);
    expect(daemon.logs.some((l) => l.level === 'warn' && String(l.msg).includes('rewritten after it was taken'))).toBe(true);
    // Nothing of the rewrite is paid on its own.
    expect(ledgerByReference(e2e.ledger()).has('REWRITE-MORE-0001')).toBe(false);
  }, 60_000);

  it.skipIf(skip !== null)(
    'a slow upload (40 kbit/s, bursts with pauses longer than inbox.stableForMs), amount last: paid whole, once, with the right amounts',
    async () => {
      // Pauses between bursts of a 16 KiB request at 40 kbit/s: about 3 s, longer than the 2 s window.
      const request = 16_384;
      const e2e = await startE2e({ config: { inbox: { stableForMs: 2000, rescanIntervalMs: 500 } } });
      // The first burst ends inside a row (an unterminated file waits inbox.unterminatedStableForMs); the later ones
      // end at rows' ends (the window grows with the pauses seen): a header 64 bytes off the rows' grid, and one row
      // 64 bytes longer after the first burst, put every later multiple of the request on a row's end.
      const rows = rowsOf('SLOW', 470);
      const headerBytes = headerBytesAt(64);
      const wideAt = rows.findIndex((_, i) => headerBytes + (i + 1) * LINE > request);
      const text = headerOf(headerBytes) + rows.map((r, i) => lineOf(r, i === wideAt ? LINE + 64 : LINE)).join('');
      const ends = new Set<number>();
      for (let at = headerBytes, i = 0; i < rows.length; i++) ends.add((at += i === wideAt ? LINE + 64 : LINE));
      expect(ends.has(request)).toBe(false);
      for (let k = 2; k * request < text.length; k++) expect(ends.has(k * request), `${k * request} is a row's end`).toBe(true);
      const source = join(e2e.dir, 'source.csv');
      await writeFile(source, text);
      await e2e.startDaemon();

      const sizes: { at: number; size: number }[] = [];
      const sampler = setInterval(() => {
        const size = statSync(join(e2e.inbox, 'slow.csv'), { throwIfNoEntry: false })?.size;
        if (size !== undefined && sizes.at(-1)?.size !== size) sizes.push({ at: Date.now(), size });
      }, 50);
      try {
        await server!.upload({
          source,
          targetDir: e2e.inbox,
          remoteName: 'slow.csv',
          rateKbit: 40,
          bufferBytes: request,
          timeoutMs: 60_000,
        });
      } finally {
        clearInterval(sampler);
      }
      const batch = await e2e.waitForBatch('slow.csv', ['ACTIVE', 'COMPLETE', 'REJECTED'], 40_000);
      expect(batch.state, batch.rejectReason ?? '').not.toBe('REJECTED');
      expect(batch.rowCount).toBe(rows.length);
      expect((await watched(e2e, batch.id)).size).toBe(text.length);
      // The premise: it grew under its name in the inbox with pauses longer than the window.
      const pauses = sizes.slice(1).map((s, i) => s.at - (sizes[i] as { at: number }).at);
      expect(Math.max(...pauses), JSON.stringify(sizes)).toBeGreaterThan(2000);
      await e2e.waitForBatch('slow.csv', ['COMPLETE'], 30_000);
      expect((await e2e.batches()).map((b) => b.fileName)).toEqual(['slow.csv']);
      expectPaidOnceAsWritten(e2e, rows);
    },
    150_000,
  );
});
