/**
 * Atomic file commit for the outbox: content goes to a hidden temp file in the same directory, is fsynced,
 * renamed over the final name, and the directory fsynced. A reader sees no file or the whole file.
 */
import { randomBytes } from 'node:crypto';
import { open, rename, rm } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { AtomicWriteOptions } from './types.js';

export type FileChunk = string | Uint8Array;

/** Small chunks are gathered to this size before a write, to keep syscalls few. */
const FLUSH_BYTES = 64 * 1024;
const DEFAULT_MODE = 0o640;
/** Keeps `.name.random.tmp` under NAME_MAX (255) for long file names. */
const MAX_TEMP_BASE = 200;

export function tempPathFor(path: string): string {
  const base = basename(path).slice(0, MAX_TEMP_BASE);
  return join(dirname(path), `.${base}.${randomBytes(6).toString('hex')}.tmp`);
}

export function isTempName(name: string): boolean {
  return name.startsWith('.') && name.endsWith('.tmp');
}

export async function writeFileAtomic(
  path: string,
  chunks: AsyncIterable<FileChunk> | Iterable<FileChunk>,
  opts: AtomicWriteOptions = {},
): Promise<void> {
  const tmp = await writeWorkFile(path, chunks, { mode: opts.mode, signal: opts.signal, sync: true });
  try {
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
  await syncDirectory(dirname(path));
}

/**
 * A hidden temp file beside `path`, written whole (and fsynced with `sync`); on failure none is left. It is
 * committed by writeFileAtomic, or read back by a caller that removes it (removed at start if the process dies).
 */
export async function writeWorkFile(
  path: string,
  chunks: AsyncIterable<FileChunk> | Iterable<FileChunk>,
  o: { mode?: number; signal?: AbortSignal; sync?: boolean } = {},
): Promise<string> {
  const tmp = tempPathFor(path);
  const fh = await open(tmp, 'wx', o.mode ?? DEFAULT_MODE).catch((err: unknown) => {
    throw namingFile(err, tmp, path);
  });
  let closed = false;
  try {
    await writeChunks(fh, chunks, o.signal);
    if (o.sync) await fh.sync();
    closed = true;
    await fh.close();
  } catch (err) {
    if (!closed) {
      await fh.close().catch(() => {
        // The write error is the one worth reporting; a failed close adds nothing.
      });
    }
    await rm(tmp, { force: true });
    throw err;
  }
  return tmp;
}

/**
 * A failure to make the hidden temp file (no such folder, permission denied), said of the file the caller
 * named: the temp file's name means nothing to whoever chose the path (`payoutd report --out`).
 */
function namingFile(err: unknown, tmp: string, path: string): unknown {
  const e = err as NodeJS.ErrnoException;
  if (e.path !== tmp) return err;
  return Object.assign(new Error(e.message.replace(tmp, path), { cause: err }), { code: e.code, errno: e.errno, syscall: e.syscall, path });
}

async function writeChunks(fh: FileHandle, chunks: AsyncIterable<FileChunk> | Iterable<FileChunk>, signal?: AbortSignal): Promise<void> {
  let pending: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of chunks) {
    signal?.throwIfAborted();
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    pending.push(bytes);
    size += bytes.length;
    if (size >= FLUSH_BYTES) {
      // A chunk as large as a write on its own is written as it is, not copied.
      await writeFully(fh, pending.length === 1 ? bytes : Buffer.concat(pending, size));
      pending = [];
      size = 0;
    }
  }
  signal?.throwIfAborted();
  if (size > 0) await writeFully(fh, Buffer.concat(pending, size));
}

/** `write` may write less than asked; loop until all is out. */
async function writeFully(fh: FileHandle, buf: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < buf.length) {
    const { bytesWritten } = await fh.write(buf, offset, buf.length - offset);
    offset += bytesWritten;
  }
}

/** Makes the rename itself durable: the new directory entry reaches the disk. */
async function syncDirectory(dir: string): Promise<void> {
  const dh = await open(dir, 'r');
  try {
    await dh.sync();
  } finally {
    await dh.close();
  }
}
