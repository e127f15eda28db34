/**
 * How a file in the inbox ends: a one-byte read at the size judged stable.
 * Honest exports end with a line break; an upload cut short mostly does not.
 * A workbook (.xlsx, a zip archive) ends with the archive's end record
 * instead, and a .gz file is judged by its reading (a cut one cannot be
 * decompressed), so both count as ending well when they do.
 */
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { errnoCode } from './errors.js';

const LINE_FEED = 0x0a;
/** A zip archive's end-of-central-directory record: its signature, within its size plus the longest comment from the end. */
const ZIP_END_SIGNATURE = Buffer.from([0x50, 0x4b, 0x05, 0x06]);
const ZIP_END_SPAN = 22 + 0xffff;

/**
 * True when the byte at `size - 1` is `\n`, false when it is not or the file is empty; null when the
 * path no longer holds that inode (gone or replaced): judge it again on the next pass.
 */
export async function endsWithLineBreak(path: string, ino: number, size: number): Promise<boolean | null> {
  if (size === 0) return false;
  let handle;
  try {
    // O_NOFOLLOW and O_NONBLOCK: whatever raced into the name, never follow a link nor block on a FIFO.
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = errnoCode(error);
    if (code === 'ENOENT' || code === 'ELOOP') return null;
    throw error;
  }
  try {
    const st = await handle.stat();
    if (!st.isFile() || st.ino !== ino || st.size < size) return null;
    const lower = path.toLowerCase();
    if (lower.endsWith('.gz')) return true;
    if (lower.endsWith('.xlsx')) {
      const span = Math.min(size, ZIP_END_SPAN);
      const tail = Buffer.alloc(span);
      const { bytesRead } = await handle.read(tail, 0, span, size - span);
      return tail.subarray(0, bytesRead).lastIndexOf(ZIP_END_SIGNATURE) >= 0;
    }
    const byte = Buffer.alloc(1);
    const { bytesRead } = await handle.read(byte, 0, 1, size - 1);
    return bytesRead === 1 && byte[0] === LINE_FEED;
  } finally {
    await handle.close();
  }
}
