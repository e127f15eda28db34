import { lstat } from 'node:fs/promises';

/** A file's inode number as decimal text, as a console upload records it. */
export async function inodeOf(path: string): Promise<string> {
  return (await lstat(path, { bigint: true })).ino.toString();
}
