/** How a file in the inbox ends (a one-byte read): honest exports end with a line break, a cut upload mostly does not. */
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { errnoCode } from './errors.js';

const LINE_FEED = 0x0a;

/** Whether the byte at `size - 1` is `
` (false for an empty file); null when the path no longer holds that inode. */
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
    const byte = Buffer.alloc(1);
    const { bytesRead } = await handle.read(byte, 0, 1, size - 1);
    return bytesRead === 1 && byte[0] === LINE_FEED;
  } finally {
    await handle.close();
  }
}
