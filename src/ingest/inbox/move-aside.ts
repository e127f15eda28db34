/**
 * Parking a file that will not be processed: renamed into the rejected folder under a unique name, with
 * `<name>.reason.txt` beside it. Renames only, never opens the file: safe for FIFOs and symlinks.
 */
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { type Clock, systemClock } from '../../domain/clock.js';
import { InboxError, errnoCode } from './errors.js';
import { newClaimId, parseStoredName, storedName } from './names.js';

export interface MoveAsideOptions {
  clock?: Clock;
  /** The name to show in the reason file, when `path` is already a stored name (a claimed file). */
  originalName?: string;
}

export interface MovedAside {
  storedPath: string;
  reasonPath: string;
}

/** Moves `path` into `rejectedDir` (same filesystem) and writes the reason next to it. */
export async function moveAside(path: string, rejectedDir: string, reason: string, options: MoveAsideOptions = {}): Promise<MovedAside> {
  const clock = options.clock ?? systemClock;
  const base = basename(path);
  // A claimed file already carries a unique claim id: keep its name so claimed/ and rejected/ line up.
  const name = parseStoredName(base) !== null ? base : storedName(newClaimId(clock.now()), base);
  const storedPath = join(rejectedDir, name);
  try {
    await mkdir(rejectedDir, { recursive: true });
    await rename(path, storedPath);
  } catch (error) {
    const code = errnoCode(error);
    if (code === 'ENOENT') throw new InboxError('INBOX_GONE', `cannot move ${base} aside: it is gone`, { cause: error });
    if (code === 'EXDEV') {
      throw new InboxError('INBOX_CROSS_DEVICE', `cannot move ${base} aside: ${rejectedDir} is on another filesystem`, { cause: error });
    }
    throw new InboxError('INBOX_MOVE_ASIDE_FAILED', `cannot move ${base} into ${rejectedDir}: ${code ?? 'error'}`, { cause: error });
  }
  const reasonPath = `${storedPath}.reason.txt`;
  try {
    // 'wx': never write through something already there (a planted symlink).
    await writeFile(reasonPath, reasonText(options.originalName ?? base, reason, clock.now()), { flag: 'wx', mode: 0o640 });
  } catch (error) {
    throw new InboxError(
      'INBOX_MOVE_ASIDE_FAILED',
      `moved ${base} to ${storedPath} but could not write ${reasonPath}: ${errnoCode(error) ?? 'error'}`,
      {
        cause: error,
      },
    );
  }
  return { storedPath, reasonPath };
}

/** The reason file: the reason first, then the original name (JSON-quoted so control characters show) and when. */
export function reasonText(originalName: string, reason: string, nowMs: number): string {
  return `${reason}\nfile: ${JSON.stringify(originalName)}\nmoved aside: ${new Date(nowMs).toISOString()}\n`;
}
