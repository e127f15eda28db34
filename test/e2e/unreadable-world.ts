/**
 * A daemon that may not read a dropped file, as when an SFTP sender uploads with mode 0600 (OpenSSH `put` keeps
 * the local mode). Root reads any file, so as root (as in CI) the daemon runs as another user of this machine and
 * the file is root's, mode 0600; as any other user the daemon runs as that user and the file has mode 0000, which
 * its owner may not read either. Both make open() fail with EACCES, deterministically.
 */
import { execFileSync } from 'node:child_process';
import { chmod, chown, mkdir, rename, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { IS_ROOT, machineUsers } from './approval-world.js';
import { readOutboxCsv, type E2e, type RunAs } from './harness.js';

function otherUser(): RunAs {
  const [user] = machineUsers(1);
  if (!user) throw new Error('no user besides root on this machine to run the daemon as');
  return { uid: user.uid, gid: Number(execFileSync('id', ['-g', user.name]).toString()) };
}

/** Who the daemon runs as: another user when the tests run as root, else the tests' own user. */
export const DAEMON_USER: RunAs | undefined = IS_ROOT ? otherUser() : undefined;

/** Makes `dir` (made by the test) the daemon's, as the folders of its world are. */
export async function makeDaemonDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  if (DAEMON_USER) await chown(dir, DAEMON_USER.uid, DAEMON_USER.gid);
}

/** The mode of a file the daemon may not read (see above). */
export const UNREADABLE_MODE = IS_ROOT ? 0o600 : 0o000;

/** Writes `path` so that the daemon may not read it: staged beside it, its mode set, then renamed into place. */
export async function writeUnreadable(path: string, content: string | Uint8Array): Promise<void> {
  const staged = join(dirname(path), `.${basename(path)}.staged`);
  await writeFile(staged, content, { mode: 0o600 });
  await chmod(staged, UNREADABLE_MODE); // after the write: a mode given to writeFile is narrowed by the umask only
  await rename(staged, path);
}

/** The refusal acks in the outbox for `name` (`<refusal id>_<name>.ack.csv`, no batch id), read. */
export async function refusalsOf(e2e: E2e, name: string): Promise<Record<string, string>[]> {
  const acks = (await e2e.outboxNames()).filter((n) => /^\d{8}T\d{6}Z-[0-9a-f]{12}_/.test(n) && n.endsWith(`_${name}.ack.csv`));
  return Promise.all(acks.map(async (n) => (await readOutboxCsv(join(e2e.outbox, n))).rows[0] ?? {}));
}
