/** What kind of directory entry a stat describes, and the reason given when a non-regular entry is in the inbox. */
import type { Stats } from 'node:fs';

export type EntryKind =
  'file' | 'directory' | 'symlink' | 'fifo' | 'socket' | 'block-device' | 'character-device' | 'invalid-name' | 'unknown';

/** From an lstat: a symlink is reported as such, never followed. */
export function entryKind(st: Stats): EntryKind {
  if (st.isFile()) return 'file';
  if (st.isDirectory()) return 'directory';
  if (st.isSymbolicLink()) return 'symlink';
  if (st.isFIFO()) return 'fifo';
  if (st.isSocket()) return 'socket';
  if (st.isBlockDevice()) return 'block-device';
  if (st.isCharacterDevice()) return 'character-device';
  return 'unknown';
}

const REASONS: Record<EntryKind, string> = {
  file: 'a regular file',
  directory: 'a directory: the inbox is not searched recursively; left in place',
  symlink: 'a symbolic link, not a regular file: links are never followed',
  fifo: 'a FIFO (named pipe), not a regular file: never opened',
  socket: 'a socket, not a regular file',
  'block-device': 'a block device, not a regular file',
  'character-device': 'a character device, not a regular file',
  'invalid-name': 'the file name is not valid UTF-8: rename it (left in place)',
  unknown: 'not a regular file',
};

export function rejectionReason(kind: EntryKind): string {
  return REASONS[kind];
}
