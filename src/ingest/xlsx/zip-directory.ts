/**
 * The zip's central directory, read by position from the end of the file: where it starts (so exceljs's input can
 * hold it back, ./reader-input.ts) and the CRC-32 it states for each part (so the scan can tell a damaged part:
 * neither unzipper's stream nor exceljs checks one, and a damaged byte in an uncompressed part reads as other text).
 */
import type { FileHandle } from 'node:fs/promises';

const END_RECORD = 0x06054b50;
const DIRECTORY_HEADER = 0x02014b50;
const END_RECORD_BYTES = 22;
const DIRECTORY_HEADER_BYTES = 46;

/**
 * Where the zip's central directory starts, from an end record that agrees with the bytes around it (its comment
 * runs to the end; its directory ends where it starts and opens with a directory header); null when there is none.
 */
export async function directoryStart(handle: FileHandle, size: number): Promise<number | null> {
  // The end record, then a comment of at most 65,535 bytes.
  const length = Math.min(size, END_RECORD_BYTES + 0xffff);
  const tail = Buffer.alloc(length);
  const { bytesRead } = await handle.read(tail, 0, length, size - length);
  const header = Buffer.alloc(4);
  for (let at = bytesRead - END_RECORD_BYTES; at >= 0; at--) {
    if (tail.readUInt32LE(at) !== END_RECORD || tail.readUInt16LE(at + 20) !== bytesRead - at - END_RECORD_BYTES) continue;
    const [directoryBytes, start] = [tail.readUInt32LE(at + 12), tail.readUInt32LE(at + 16)];
    // Bytes of a comment that look like a record, or a zip64 workbook's 0xffffffff: not this one.
    if (start === 0 || start + directoryBytes !== size - length + at) continue;
    await handle.read(header, 0, 4, start);
    if (header.readUInt32LE(0) === DIRECTORY_HEADER) return start;
  }
  return null;
}

/** The CRC-32 the directory states for each part, by path; a path stored twice has one a copy, in stored order. */
export type PartChecksums = ReadonlyMap<string, readonly number[]>;

/** The checksums of the directory that starts at `start` (directoryStart) of a file of `size` bytes. */
export async function partChecksums(handle: FileHandle, start: number, size: number): Promise<PartChecksums> {
  const bytes = Buffer.alloc(size - start);
  const { bytesRead } = await handle.read(bytes, 0, bytes.length, start);
  const parts: { path: string; offset: number; crc: number }[] = [];
  for (let at = 0; at + DIRECTORY_HEADER_BYTES <= bytesRead && bytes.readUInt32LE(at) === DIRECTORY_HEADER;) {
    const [nameBytes, extraBytes, commentBytes] = [bytes.readUInt16LE(at + 28), bytes.readUInt16LE(at + 30), bytes.readUInt16LE(at + 32)];
    // As unzipper names the part, flagged UTF-8 or not.
    const path = bytes.toString('utf8', at + DIRECTORY_HEADER_BYTES, at + DIRECTORY_HEADER_BYTES + nameBytes);
    parts.push({ path, offset: bytes.readUInt32LE(at + 42), crc: bytes.readUInt32LE(at + 16) });
    at += DIRECTORY_HEADER_BYTES + nameBytes + extraBytes + commentBytes;
  }
  const checksums = new Map<string, number[]>();
  for (const { path, crc } of parts.sort((a, b) => a.offset - b.offset)) {
    const list = checksums.get(path);
    if (list === undefined) checksums.set(path, [crc]);
    else list.push(crc);
  }
  return checksums;
}
