/**
 * The bytes exceljs's streaming reader reads a workbook from. That reader stops taking the zip's parts once the
 * unzipper it uses says the zip has ended, which it says on reading the central directory even while parts it
 * has parsed are still waiting to be taken (exceljs issue 3064): those parts are lost, xl/workbook.xml often among
 * them, now and then under load and nearly always in an uncompressed workbook. So the directory is held back
 * until the reader has reported (its `entry` events) every part it takes while reading through the zip.
 */
import type { FileHandle } from 'node:fs/promises';
import { Readable } from 'node:stream';

const CHUNK_BYTES = 65_536;

/**
 * Bytes `start` to `end` (excluded) of an open file. Read by position, so several readings share the one handle,
 * and none closes it (a file stream closes its descriptor when destroyed).
 */
export function fileRange(handle: FileHandle, start: number, end: number): Readable {
  async function* chunks(): AsyncGenerator<Buffer> {
    for (let at = start; at < end;) {
      const length = Math.min(CHUNK_BYTES, end - at);
      const { bytesRead, buffer } = await handle.read(Buffer.alloc(length), 0, length, at);
      if (bytesRead === 0) return;
      at += bytesRead;
      yield buffer.subarray(0, bytesRead);
    }
  }
  return Readable.from(chunks(), { objectMode: false });
}

/** The reader's input, and what it is told of the reader. */
export interface ReaderInput {
  input: Readable;
  /** An `entry` event of the reader, by its key (readerEntry). */
  taken(key: string): void;
  /** A row the reader gave: it is at work. */
  progress(): void;
  /** Reading is over (read, refused or left): what is held back is never read. */
  close(): void;
  /** Why the file could not be read to its end, if it could not (the input then ends short). */
  failure(): Error | null;
}

/**
 * The first `size` bytes of the workbook, its directory held back until every entry in `awaited` is taken. Should
 * one never come (a part read otherwise than the scan foresaw), the directory goes once the reader has given
 * nothing for `giveUpMs`: a part lost is a refusal, a wait for ever would stop the daemon's reading of files.
 */
export function readerInput(
  handle: FileHandle,
  size: number,
  directory: number | null,
  awaited: ReadonlySet<string>,
  giveUpMs: number,
): ReaderInput {
  const left = new Set(awaited);
  const held = directory === null || left.size === 0 ? size : directory;
  let release: (go: boolean) => void = () => {};
  const released = new Promise<boolean>((resolve) => (release = resolve));
  let steps = 0;
  let watch: NodeJS.Timeout | undefined;
  let failure: Error | null = null;
  const settle = (go: boolean) => {
    clearInterval(watch);
    release(go);
  };
  async function* chunks(): AsyncGenerator<Buffer> {
    try {
      yield* fileRange(handle, 0, held);
      if (held === size) return;
      let seen = steps;
      watch = setInterval(() => {
        if (steps === seen) settle(true);
        seen = steps;
      }, giveUpMs).unref();
      if (await released) yield* fileRange(handle, held, size);
    } catch (err) {
      // Ended short instead: exceljs's pipe would pass no error on, and wait for the rest for ever.
      failure = err as Error;
    }
  }
  return {
    input: Readable.from(chunks(), { objectMode: false }),
    taken(key) {
      steps++;
      left.delete(key);
      if (left.size === 0) settle(true);
    },
    progress: () => void steps++,
    // Before the input is destroyed: a generator waiting on `released` cannot be stopped from outside.
    close: () => settle(false),
    failure: () => failure,
  };
}
