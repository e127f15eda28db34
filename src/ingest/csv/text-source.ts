/**
 * A CSV batch's bytes as UTF-8: a `.csv.gz` decompressed while read, another encoding decoded by TextDecoder.
 * `encoding: auto` decides from the bytes: a UTF-16 byte order mark, else UTF-8 if every byte is, else
 * Windows-1252 (Excel's "CSV" on Western Windows).
 */
import { createReadStream } from 'node:fs';
import { Readable, Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { lineAtByte, lineAtByteOf } from './lines.js';
import { InvalidUtf8Error, Utf8Check } from './utf8.js';

export type BatchFileKind = 'text' | 'gzip' | 'xlsx';

/** What a file's name says it holds. */
export function batchFileKind(name: string): BatchFileKind {
  const lower = name.toLowerCase();
  if (lower.endsWith('.xlsx')) return 'xlsx';
  if (lower.endsWith('.gz')) return 'gzip';
  return 'text';
}

/** The bytes are not text in the encoding they were read as. */
export class TextDecodeError extends Error {
  override readonly name = 'TextDecodeError';
  constructor(readonly encoding: string) {
    super(`the file is not valid ${encoding} text`);
  }
}

/** Decodes `encoding` into UTF-8 bytes, strictly: a byte sequence the encoding does not have stops the read. */
function transcode(encoding: string): Transform {
  const decoder = new TextDecoder(encoding, { fatal: true });
  const utf8 = (text: string): Buffer | undefined => (text === '' ? undefined : Buffer.from(text, 'utf8'));
  return new Transform({
    transform(chunk: Buffer, _enc, callback) {
      try {
        callback(null, utf8(decoder.decode(chunk, { stream: true })));
      } catch {
        callback(new TextDecodeError(encoding));
      }
    },
    flush(callback) {
      try {
        callback(null, utf8(decoder.decode()));
      } catch {
        callback(new TextDecodeError(encoding));
      }
    },
  });
}

/** Stops a read that has what it came for. */
class Enough extends Error {}

export interface TextSource {
  kind: 'text' | 'gzip';
  /** The WHATWG name of the encoding read (lower case). */
  encoding: string;
  /** Decided from the bytes (`encoding: auto`): the ack says which. */
  detected: boolean;
  /** The streams from the file to UTF-8 bytes, fresh for each read. */
  streams(readChunkBytes?: number): [Readable, ...Transform[]];
  /** The line holding byte `offset` of the UTF-8 bytes (for a bad byte in a UTF-8 file). */
  lineAt(offset: number): Promise<number>;
}

function isUtf8Name(name: string): boolean {
  return new TextDecoder(name).encoding === 'utf-8';
}

/** The file's first `bytes` bytes (all of it when undefined), as they were claimed: an upload that went on writing after the claim adds nothing to the read. */
function fileBytes(path: string, bytes: number | undefined, readChunkBytes: number): Readable {
  if (bytes === 0) return Readable.from([]);
  return createReadStream(path, { highWaterMark: readChunkBytes, ...(bytes === undefined ? {} : { start: 0, end: bytes - 1 }) });
}

function rawStreams(path: string, kind: 'text' | 'gzip', readChunkBytes: number, bytes: number | undefined): [Readable, ...Transform[]] {
  const file = fileBytes(path, bytes, readChunkBytes);
  return kind === 'gzip' ? [file, createGunzip()] : [file];
}

/** The first `max` bytes the streams give (fewer when there are fewer). */
async function headOf(streams: (Readable | Transform)[], max: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let size = 0;
  try {
    await pipeline([
      ...streams,
      new Writable({
        write(chunk: Buffer, _enc, callback) {
          parts.push(chunk);
          size += chunk.length;
          callback(size >= max ? new Enough() : null);
        },
      }),
    ]);
  } catch (err) {
    if (!(err instanceof Enough)) throw err;
  }
  return Buffer.concat(parts).subarray(0, max);
}

/** Whether every byte the streams give is UTF-8 (a sequence cut by the end counts as UTF-8: the read says the upload is cut). */
async function allUtf8(streams: (Readable | Transform)[]): Promise<boolean> {
  const check = new Utf8Check();
  try {
    await pipeline([...streams, check.stream, new Writable({ write: (_c, _e, cb) => cb() })]);
    return true;
  } catch (err) {
    if (err instanceof InvalidUtf8Error) return err.truncated;
    throw err;
  }
}

/** The encoding `auto` reads a file in. */
async function detectEncoding(path: string, kind: 'text' | 'gzip', bytes: number | undefined): Promise<string> {
  const head = await headOf(rawStreams(path, kind, 64 * 1024, bytes), 3);
  if (head[0] === 0xff && head[1] === 0xfe) return 'utf-16le';
  if (head[0] === 0xfe && head[1] === 0xff) return 'utf-16be';
  if (head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf) return 'utf-8';
  return (await allUtf8(rawStreams(path, kind, 64 * 1024, bytes))) ? 'utf-8' : 'windows-1252';
}

/**
 * The source of a CSV batch (`kind` text or gzip), in the encoding configured or detected: the file's first
 * `bytes` bytes (those claimed), or all of it.
 */
export async function textSource(path: string, kind: 'text' | 'gzip', encodingOption: string, bytes?: number): Promise<TextSource> {
  const detected = encodingOption === 'auto';
  const encoding = detected ? await detectEncoding(path, kind, bytes) : new TextDecoder(encodingOption).encoding;
  const utf8 = isUtf8Name(encoding);
  const streams = (readChunkBytes = 64 * 1024): [Readable, ...Transform[]] => {
    const raw = rawStreams(path, kind, readChunkBytes, bytes);
    return utf8 ? raw : [...raw, transcode(encoding)];
  };
  return {
    kind,
    encoding,
    detected,
    streams,
    lineAt: (offset) => {
      if (kind === 'text') return lineAtByte(path, offset);
      const [file, gunzip] = rawStreams(path, kind, 64 * 1024, bytes);
      return lineAtByteOf(gunzip ? file.pipe(gunzip) : file, offset);
    },
  };
}

/**
 * Why a file read as UTF-8 looks like UTF-16 instead, and which one, from its first bytes: a UTF-16 byte order mark,
 * or a NUL every other byte (text of Latin letters in UTF-16 without one); null when it does not.
 */
export function utf16Look(head: Uint8Array): { encoding: 'utf-16le' | 'utf-16be'; why: string; bom: boolean } | null {
  if (head[0] === 0xff && head[1] === 0xfe)
    return { encoding: 'utf-16le', why: 'it starts with the UTF-16 byte order mark FF FE', bom: true };
  if (head[0] === 0xfe && head[1] === 0xff)
    return { encoding: 'utf-16be', why: 'it starts with the UTF-16 byte order mark FE FF', bom: true };
  const pairs = Math.floor(Math.min(head.length, 64) / 2);
  if (pairs < 2) return null;
  let le = true;
  let be = true;
  for (let i = 0; i < pairs; i++) {
    const [a, b] = [head[2 * i] as number, head[2 * i + 1] as number];
    le &&= a !== 0 && b === 0;
    be &&= a === 0 && b !== 0;
  }
  if (!le && !be) return null;
  return { encoding: le ? 'utf-16le' : 'utf-16be', why: 'every other byte of its start is a NUL, a zero byte', bom: false };
}

/** The first `max` UTF-8 bytes of the source (for the header line). */
export function sourceHead(source: TextSource, max: number): Promise<Buffer> {
  return headOf(source.streams(), max);
}
