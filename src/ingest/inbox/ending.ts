/**
 * How a file in the inbox ends: honest exports end with a line break, a cut upload mostly does not. A zip
 * archive (.xlsx) ends with its end record instead, UTF-16 text with a two-byte line feed; a gzip file is
 * judged when it is read (a cut one cannot be decompressed).
 */
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { errnoCode } from './errors.js';

const LINE_FEED = 0x0a;
const ZIP_START = Buffer.from([0x50, 0x4b, 0x03, 0x04]);
// A zip archive's end record: its signature, within the record's size plus the longest comment from the end.
const ZIP_END_SIGNATURE = Buffer.from([0x50, 0x4b, 0x05, 0x06]);
const ZIP_END_SPAN = 22 + 0xffff;

/**
 * Whether the file ends as a whole upload does (false for an empty file); null when the path no longer holds that
 * inode. Opened even when empty: a file payoutd may not read fails here (EACCES), before it is waited for or claimed.
 */
export async function endsWithLineBreak(path: string, ino: number, size: number): Promise<boolean | null> {
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
    if (size === 0) return false;
    const head = Buffer.alloc(4);
    await handle.read(head, 0, 4, 0);
    // A zip archive (.xlsx and its kin) ends with its end record; a gzip file is judged when it is read.
    if (head.subarray(0, 4).equals(ZIP_START)) {
      const span = Math.min(size, ZIP_END_SPAN);
      const end = Buffer.alloc(span);
      const { bytesRead } = await handle.read(end, 0, span, size - span);
      return end.subarray(0, bytesRead).lastIndexOf(ZIP_END_SIGNATURE) >= 0;
    }
    if (head[0] === 0x1f && head[1] === 0x8b) return true;
    // UTF-16 text (a byte order mark first) ends with a two-byte line feed.
    const tail = Buffer.alloc(2);
    const { bytesRead } = await handle.read(tail, 0, Math.min(2, size), Math.max(0, size - 2));
    const last = tail.subarray(0, bytesRead);
    if (size >= 4 && head[0] === 0xff && head[1] === 0xfe) return last[0] === LINE_FEED && last[1] === 0;
    if (size >= 4 && head[0] === 0xfe && head[1] === 0xff) return last[0] === 0 && last[1] === LINE_FEED;
    return last[last.length - 1] === LINE_FEED;
  } finally {
    await handle.close();
  }
}
