/**
 * A console upload let into a real inbox folder, recorded in a real SQLite
 * file: a refused duplicate leaves the record of the upload that got in.
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { acceptUpload, type UploadTarget } from '../../src/console/upload.js';
import { consoleUploaderOf } from '../../src/store/index.js';
import { useTestDatabase } from '../support/database.js';

const CSV = 'merchantReferenceId,payoutAmount\nINV-1,1000.00\n';
const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');
const body = (text: string): Readable => Readable.from([Buffer.from(text)]);

describe('console upload', () => {
  const t = useTestDatabase('payoutd-console-upload-');
  let dir = '';
  let target: UploadTarget;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'payoutd-console-upload-dirs-'));
    for (const d of ['inbox', 'state']) await mkdir(join(dir, d));
    // One clock reading for every upload: two identical uploads in the same millisecond.
    target = { db: t.db, inbox: join(dir, 'inbox'), stateDir: join(dir, 'state'), maxBytes: 1 << 20, ignore: [], now: () => 1_000 };
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('an identical upload refused in the same millisecond keeps the record of the one let in', async () => {
    await acceptUpload(target, 'same.csv', 'mallory', body(CSV));
    await expect(acceptUpload(target, 'same.csv', 'mallory', body(CSV))).rejects.toMatchObject({ code: 'UPLOAD_NAME_TAKEN' });
    expect(await readdir(target.inbox)).toEqual(['same.csv']);
    // Otherwise the waiting file's batch would name no console uploader, and she could approve it.
    expect(await consoleUploaderOf(t.db, { fileName: 'same.csv', sha256: sha256(CSV), receivedAt: 2_000 })).toBe('mallory');
  });
});
