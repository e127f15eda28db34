/**
 * The acknowledgement drafted while a file is read (src/ingest/read) stands
 * in for the one written from the stored rows whenever the acceptance changed
 * no row. So the two must be the same bytes, invalid rows and their reasons
 * included: the intake writes the ack from its drafts, and the same batch's
 * ack is written again from the database by the outbox, and compared. In one
 * thread and in parts, on a real SQLite file with the real outbox.
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BatchOutbox } from '../../src/daemon/outbox.js';
import { ManualClock } from '../../src/domain/clock.js';
import { BatchIntake } from '../../src/ingest/index.js';
import { AckDraftFile } from '../../src/ingest/read/ack-draft.js';
import { DEFAULT_BATCH_FORMAT } from '../../src/ingest/csv/index.js';
import { DEFAULT_VALIDATION_RULES, FIELD_PATHS } from '../../src/ingest/rules/index.js';
import { createLogger } from '../../src/log/index.js';
import type { BatchRecord } from '../../src/store/batches.js';
import type { Database } from '../../src/store/db.js';
import { validCsvRow } from '../support/rows.js';
import { openTestDatabase } from '../support/database.js';

const dirs: string[] = [];
const dbs: Database[] = [];
afterEach(async () => {
  for (const db of dbs.splice(0)) await db.destroy();
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

/**
 * 600 rows, 168 invalid: an unquoted decimal comma (a field too many), three errors at once, (12 rows) a
 * country with a comma and quotes, which the reason quotes, and (36 rows) references a spreadsheet would
 * take for a formula (refused, and written with the spreadsheet's prefix) or that need quoting themselves.
 */
function mixedFile(length = 600): string {
  const rows = Array.from({ length }, (_, i) => {
    const ref = `ACK-${i}`;
    switch (i % 10) {
      case 3:
        return validCsvRow(ref, { payoutAmount: '12,5' });
      case 7:
        return validCsvRow(ref, { payoutAmount: '-5', payoutCurrency: 'XXX', 'beneficiary.accountNumber': '' });
      default:
        switch (i % 50) {
          case 19:
            return validCsvRow(`-${ref}`); // a spreadsheet would take it for a formula: refused
          case 29:
            return validCsvRow(`=${ref}`);
          case 39:
            return validCsvRow(`"${ref}, ""x"""`); // a reference to quote, with a reason to quote
          case 49:
            return validCsvRow(ref, { 'sender.country': '"P, ""H"""' });
          default:
            return validCsvRow(ref);
        }
    }
  });
  return `${[FIELD_PATHS.join(','), ...rows].join('\r\n')}\r\n`;
}

/** The file received by an intake reading in `workers` parts; its ack as drafted, and as written from the stored rows. */
async function acks(workers: number, fileName: string, rows = 600): Promise<{ batch: BatchRecord; drafted: string; fromRows: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'payoutd-ack-drafts-'));
  dirs.push(dir);
  const db = await openTestDatabase(dir);
  dbs.push(db);
  const outbox = new BatchOutbox(db, join(dir, 'outbox'), true);
  const again = new BatchOutbox(db, join(dir, 'outbox-again'), true);
  const draftsUsed: boolean[] = [];
  const intake = new BatchIntake(
    {
      db,
      clock: new ManualClock(Date.UTC(2026, 10, 26, 9)),
      logger: createLogger('silent'),
      effects: {
        writeAck: (b, reason, drafts) => {
          draftsUsed.push(drafts !== undefined);
          return outbox.writeAck(b, reason, drafts);
        },
        writeFileRejection: (b, reason) => outbox.writeFileRejection(b, reason),
        writeResult: (b) => outbox.writeResult(b),
        balanceRecheckMs: 60_000,
      },
    },
    {
      format: DEFAULT_BATCH_FORMAT,
      rules: DEFAULT_VALIDATION_RULES,
      onInvalidRows: 'skip-rows',
      rejectedDir: join(dir, 'rejected'),
      readingDir: join(dir, 'reading'),
      read: { workers, minBytes: 0 },
      instanceId: 'test',
      leaseMs: 120_000,
    },
  );
  for (const d of ['outbox', 'outbox-again', 'claimed']) await mkdir(join(dir, d), { recursive: true });
  const content = mixedFile(rows);
  const storedPath = join(dir, 'claimed', `c1__${fileName}`);
  await writeFile(storedPath, content);
  const st = await stat(storedPath);
  const batch = await intake.receive({
    claimId: 'c1',
    originalName: fileName,
    storedPath,
    size: st.size,
    mtimeMs: st.mtimeMs,
    sha256: createHash('sha256').update(content).digest('hex'),
  });
  expect(draftsUsed).toEqual([true]);
  const drafted = await readFile(join(dir, 'outbox', `${batch.id}_${fileName}.ack.csv`), 'utf8');
  const fromRows = await readFile(await again.writeAck(batch), 'utf8');
  return { batch, drafted, fromRows };
}

describe('the acknowledgement drafted while reading', () => {
  it.each([
    ['in one thread', 0, 'mixed.csv'],
    ['in two parts', 2, 'mixed.csv'],
    // Every line's file cell is quoted.
    ['of a file whose name needs quoting', 2, 'mixed, v2.csv'],
  ])('is the acknowledgement written from the stored rows, invalid rows and reasons included (%s)', async (_, workers, fileName) => {
    const { batch, drafted, fromRows } = await acks(workers, fileName);
    expect(batch.state).toBe('ACTIVE');
    expect(batch.validCount).toBe(432);
    expect(batch.invalidCount).toBe(168);
    expect(drafted).toBe(fromRows);
    expect(drafted.match(/,REJECTED,/g)).toHaveLength(168);
    expect(drafted).toMatch(/,ACK-49,REJECTED,"[^\r\n]*""/);
    expect(drafted).toMatch(/,ACK-7,REJECTED,"CURRENCY_UNKNOWN .*; AMOUNT_NEGATIVE .*; REQUIRED /);
    expect(drafted).toMatch(/,ACK-3,REJECTED,"COLUMN_COUNT_MISMATCH/);
    expect(drafted).toMatch(/,'-ACK-19,REJECTED,"FORMULA_LIKE_TEXT \[merchantReferenceId\]: /);
    expect(drafted).toMatch(/,'=ACK-29,REJECTED,"FORMULA_LIKE_TEXT \[merchantReferenceId\]: merchantReferenceId starts with ""="", /);
    expect(drafted).toMatch(/,"ACK-39, ""x""",REJECTED,"REFERENCE_INVALID /);
    expect(drafted.includes(`,"${fileName}",`)).toBe(fileName.includes(','));
  });

  it("is copied whole into the acknowledgement when each part's draft is larger than a read of it (1 MiB)", async () => {
    // 48,000 rows: two drafts of about 1.5 MB each.
    const { batch, drafted, fromRows } = await acks(2, 'large.csv', 48_000);
    expect(batch.validCount).toBe(432 * 80);
    expect(drafted.length).toBeGreaterThan(2.5 * 1024 * 1024);
    expect(drafted).toBe(fromRows);
  });
});

describe('a draft file', () => {
  it('holds every text appended, in order: small ones gathered, multi-byte ones, and one too long to gather', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'payoutd-ack-draft-file-'));
    dirs.push(dir);
    const draft = await AckDraftFile.create(join(dir, 'drafts', 'B1.ack-0.csv'));
    const texts: string[] = [];
    for (let i = 0; i < 5000; i++) texts.push(`B1,f.csv,${i + 2},REF-${i},${i % 7 === 0 ? 'REJECTED,Müller ✓ 😀' : 'ACCEPTED,'}\r\n`);
    // Longer than the draft gathers (a quarter megabyte of bytes, at up to 3 a character), then more small ones.
    texts.splice(2500, 0, `B1,f.csv,x,REF-long,REJECTED,${'é'.repeat(100_000)}\r\n`);
    for (const text of texts) await draft.append(text);
    await draft.close();
    const written = await readFile(draft.path);
    expect(written.equals(Buffer.from(texts.join(''), 'utf8'))).toBe(true);
  });
});
