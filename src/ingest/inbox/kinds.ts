/**
 * What kind of directory entry a stat describes, and the reason given when an entry of the inbox is refused: a
 * non-regular entry, a name that is not UTF-8, or a regular file payoutd may not read.
 */
import type { Stats } from 'node:fs';
import { userInfo } from 'node:os';

export type EntryKind =
  'file' | 'directory' | 'symlink' | 'fifo' | 'socket' | 'block-device' | 'character-device' | 'invalid-name' | 'unreadable' | 'unknown';

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

const MAKE_READABLE =
  "make it readable by the user payoutd runs as or by one of its groups (chmod g+r, with the inbox's group), or upload it with a mode that allows that (an SFTP put keeps the local mode, such as 0600)";

const REASONS: Record<EntryKind, string> = {
  file: 'a regular file',
  directory: 'a directory: the inbox is not searched recursively; left in place',
  symlink: 'a symbolic link, not a regular file: links are never followed',
  fifo: 'a FIFO (named pipe), not a regular file: never opened',
  socket: 'a socket, not a regular file',
  'block-device': 'a block device, not a regular file',
  'character-device': 'a character device, not a regular file',
  'invalid-name': 'the file name is not valid UTF-8: rename it (left in place)',
  unreadable: unreadableText(''),
  unknown: 'not a regular file',
};

export function rejectionReason(kind: EntryKind): string {
  return REASONS[kind];
}

/**
 * The reason for a file payoutd may not open: its mode and owner as seen (null: not seen), who payoutd is, and what
 * to do. `setAsideIn`: a file taken before claims opened it first, since moved into that folder.
 */
export function unreadableReason(st: Pick<Stats, 'mode' | 'uid' | 'gid'> | null, runAs: string, setAsideIn?: string): string {
  const seen = st === null ? '' : `: mode ${(st.mode & 0o7777).toString(8).padStart(4, '0')}, owner uid ${st.uid}, group gid ${st.gid}`;
  return unreadableText(`${seen}; payoutd runs as ${runAs}`, setAsideIn);
}

function unreadableText(seen: string, setAsideIn?: string): string {
  const cause = `payoutd may not read this file (permission denied${seen})`;
  if (setAsideIn !== undefined) {
    return `${cause}; it was taken from the inbox and then set aside in ${setAsideIn}. To have it paid, ${MAKE_READABLE}, and drop it into the inbox again`;
  }
  return `${cause}. To have it paid, ${MAKE_READABLE}; it is left in the inbox and taken once readable`;
}

/** What follows the reason in the outbox answer: nothing of the entry is paid, and what to do. */
export function refusalOutcome(kind: EntryKind): string {
  if (kind === 'unreadable') return 'nothing from it is paid until then';
  return 'nothing from it is paid: drop the batch again as a plain file';
}

/** The user this process runs as, by name and uid when the system names it, for the reasons above. */
export function processUser(): string {
  const uid = process.getuid?.();
  try {
    return `${userInfo().username}, uid ${uid ?? '?'}`;
  } catch {
    return `uid ${uid ?? '?'}`; // a uid with no passwd entry (a container's)
  }
}
