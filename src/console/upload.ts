/**
 * A file uploaded in the console joins the inbox exactly as a careful SFTP
 * sender's does: written under a temp name in `<stateDir>/console-upload/`
 * (the state directory is on the inbox's filesystem, as claims require),
 * recorded with its uploader, hash and inode, then linked into the inbox
 * under its name (a link never replaces a file of that name waiting there), the
 * temp name removed, and its `<name>.done` marker written last (the upload is
 * complete: `inbox.requireDoneMarker` takes it, and a CSV without a final line
 * break is not held as a cut upload). The daemon then takes, validates, acknowledges
 * and deduplicates it like any other file. Names that would land elsewhere, be
 * ignored by the inbox or are not CSV/XLSX are refused, as are files over
 * the size limit or whose bytes are not of their kind.
 */
import { createHash, randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { link, lstat, mkdir, open, unlink } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Readable } from 'node:stream';
import { compileIgnore, isIgnoredName } from '../ingest/inbox/index.js';
import { DONE_SUFFIX } from '../ingest/inbox/names.js';
import { forgetConsoleUpload, recordConsoleUpload, type Database } from '../store/index.js';
import { ConsoleError } from './errors.js';

export interface UploadTarget {
  db: Database;
  inbox: string;
  stateDir: string;
  maxBytes: number;
  ignore: readonly string[];
  now(): number;
}

const KINDS = ['.csv', '.xlsx'] as const;

/** Filesystems take names of at most 255 bytes; this leaves room for the `.done` marker's name. */
export const MAX_UPLOAD_NAME_BYTES = 200;

/** The name a file may have in the inbox, or a ConsoleError saying why not. */
export function checkUploadName(name: string, ignore: readonly string[]): string {
  const shown = JSON.stringify(name);
  if (name === '') throw new ConsoleError('UPLOAD_BAD_NAME', 'the file has no name: rename the file');
  const bytes = Buffer.byteLength(name, 'utf8');
  if (bytes > MAX_UPLOAD_NAME_BYTES) {
    throw new ConsoleError(
      'UPLOAD_BAD_NAME',
      `the file name ${shown} is too long: ${bytes} bytes, at most ${MAX_UPLOAD_NAME_BYTES} (a letter such as ü takes 2, most others 3): rename the file with a shorter name`,
    );
  }
  if (/[/\\\0]/.test(name) || name !== basename(name) || name === '.' || name === '..') {
    throw new ConsoleError('UPLOAD_BAD_NAME', `the file name ${shown} names a folder: upload a file whose name has no / or \\`);
  }
  if (/[\p{Cc}\p{Cf}]/u.test(name))
    throw new ConsoleError('UPLOAD_BAD_NAME', `the file name ${shown} holds control characters: rename the file`);
  if (!KINDS.some((k) => name.toLowerCase().endsWith(k))) {
    throw new ConsoleError('UPLOAD_BAD_TYPE', `${shown} is not a .csv or .xlsx file: export the batch as CSV or XLSX`);
  }
  if (isIgnoredName(name, compileIgnore(ignore))) {
    throw new ConsoleError(
      'UPLOAD_BAD_NAME',
      `the inbox never takes a file named ${shown} (hidden, temporary or ignored): rename the file`,
    );
  }
  return name;
}

/** Whether the first bytes fit the kind the name says: an .xlsx is a zip; a .csv is text (no NUL byte). */
export function checkUploadBytes(name: string, head: Buffer): void {
  const xlsx = name.toLowerCase().endsWith('.xlsx');
  const ok = xlsx ? head.length >= 4 && head.readUInt32LE(0) === 0x04034b50 : !head.includes(0);
  if (!ok) {
    throw new ConsoleError(
      'UPLOAD_BAD_TYPE',
      `${JSON.stringify(name)} is not ${xlsx ? 'an Excel workbook' : 'a text CSV file'}: export the batch again as ${xlsx ? 'XLSX' : 'CSV'}`,
    );
  }
}

export interface Uploaded {
  name: string;
  size: number;
  sha256: string;
}

/** Streams `body` into the inbox as `name` for `uploader`; refuses with a ConsoleError. */
export async function acceptUpload(target: UploadTarget, name: string, uploader: string, body: Readable): Promise<Uploaded> {
  checkUploadName(name, target.ignore);
  const dir = join(target.stateDir, 'console-upload');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const temp = join(dir, `${randomBytes(8).toString('hex')}.part`);
  const handle = await open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o640);
  const hash = createHash('sha256');
  let size = 0;
  let head = Buffer.alloc(0);
  let ino = 0n;
  try {
    try {
      for await (const chunk of body) {
        const bytes = chunk as Buffer;
        size += bytes.length;
        if (size > target.maxBytes) {
          throw new ConsoleError(
            'UPLOAD_TOO_LARGE',
            `${JSON.stringify(name)} is larger than ${target.maxBytes} bytes (console.maxUploadBytes): split the batch`,
          );
        }
        if (head.length < 8192) head = Buffer.concat([head, bytes.subarray(0, 8192 - head.length)]);
        hash.update(bytes);
        await handle.write(bytes);
      }
      if (size === 0) throw new ConsoleError('UPLOAD_EMPTY', `${JSON.stringify(name)} is empty: nothing to pay`);
      checkUploadBytes(name, head);
      await handle.sync();
      // As a bigint: an inode number may exceed a JS number's exact range.
      ino = (await handle.stat({ bigint: true })).ino;
    } finally {
      await handle.close();
    }
    const uploaded = { name, size, sha256: hash.digest('hex') };
    const record = { fileName: name, sha256: uploaded.sha256, size, inode: ino.toString(), uploader, uploadedAt: target.now() };
    // Recorded before the file can be taken: its batch always finds its uploader, by the inode the link and the
    // claim's rename keep (the name and bytes alone may be someone else's later upload once this file is taken).
    const recorded = await recordConsoleUpload(target.db, record);
    try {
      await link(temp, join(target.inbox, name));
    } catch (err) {
      // Left behind, the record would name this user the uploader of the file waiting under that name.
      await forgetConsoleUpload(target.db, recorded);
      throw linkRefusal(name, err);
    }
    // Before the marker: dropping a link changes the file's ctime, and a marker older than that vouches for nothing.
    await unlink(temp).catch(() => undefined);
    await markDone(join(target.inbox, name), ino);
    return uploaded;
  } finally {
    await unlink(temp).catch(() => undefined);
  }
}

/** Why the file could not be linked into the inbox, saying what to do; nothing of it is in the inbox. */
function linkRefusal(name: string, err: unknown): ConsoleError {
  const shown = JSON.stringify(name);
  const code = (err as NodeJS.ErrnoException).code ?? 'error';
  switch (code) {
    case 'EEXIST':
      return new ConsoleError(
        'UPLOAD_NAME_TAKEN',
        `a file named ${shown} is waiting in the inbox already: wait until it is taken, or rename yours`,
      );
    case 'ENAMETOOLONG':
      return new ConsoleError(
        'UPLOAD_BAD_NAME',
        `the file name ${shown} is too long for the inbox's filesystem: rename the file with a shorter name`,
      );
    case 'EXDEV':
      return new ConsoleError(
        'UPLOAD_FAILED',
        `${shown} was not uploaded: the inbox is not on the filesystem of payoutd's state directory, so the console cannot put files into it; tell the administrator (docs/console.md, Uploading)`,
      );
    default:
      return new ConsoleError(
        'UPLOAD_FAILED',
        `${shown} was not uploaded: it could not be put into the inbox (${code}); try again, and tell the administrator if it fails again`,
      );
  }
}

/**
 * Writes `<path>.done` for the file just linked in as inode `ino`. After the link, never before: a marker
 * left by an upload refused at the link (or cut short by a crash) would vouch for someone else's file of
 * that name, perhaps still being sent. One already there is older than the link, so the inbox ignores it
 * (a marker vouches only when it arrived after its file last changed): it is replaced.
 */
async function markDone(path: string, ino: bigint): Promise<void> {
  const marker = path + DONE_SUFFIX;
  const create = async (): Promise<void> => {
    await (await open(marker, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o640)).close();
  };
  let mine = false;
  try {
    try {
      await create();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      await unlink(marker).catch((gone: NodeJS.ErrnoException) => {
        if (gone.code !== 'ENOENT') throw gone;
      });
      // EEXIST again: written by someone else since the unlink, after the link, so it vouches for this file too.
      await create();
    }
    mine = true;
    // Taken already (its claim consumes only a marker it finds): left behind, ours would vouch for the next file.
    if ((await lstat(path, { bigint: true }).catch(() => null))?.ino !== ino) await unlink(marker).catch(() => undefined);
  } catch (err) {
    if (!mine && (err as NodeJS.ErrnoException).code === 'EEXIST') return;
    throw new ConsoleError(
      'UPLOAD_FAILED',
      `${JSON.stringify(basename(path))} is in the inbox, but its ${DONE_SUFFIX} marker could not be written (${(err as NodeJS.ErrnoException).code ?? 'error'}): ask the administrator to create ${JSON.stringify(basename(marker))} next to it, or the inbox may hold it as incomplete`,
    );
  }
}
