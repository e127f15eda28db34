/**
 * An acknowledgement drafted while its batch file is read: the lines of the
 * rows read so far, appended to a file of the reader's own (in the state
 * directory, never the outbox) a quarter megabyte at a time. Not synced: a
 * draft is written again whenever its file is read again, and the
 * acknowledgement made from it is written atomically (src/report/atomic.ts).
 */
import { mkdir, open, readdir, rm, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';

const FLUSH_CHARS = 256 * 1024;

export class AckDraftFile {
  private pending: string[] = [];
  private size = 0;

  private constructor(
    readonly path: string,
    private readonly handle: FileHandle,
  ) {}

  /** A new, empty draft at `path` (one left by an earlier read is replaced). */
  static async create(path: string): Promise<AckDraftFile> {
    await mkdir(dirname(path), { recursive: true });
    return new AckDraftFile(path, await open(path, 'w', 0o600));
  }

  async append(text: string): Promise<void> {
    this.pending.push(text);
    this.size += text.length;
    if (this.size >= FLUSH_CHARS) await this.flush();
  }

  async close(): Promise<void> {
    try {
      await this.flush();
    } finally {
      await this.handle.close();
    }
  }

  private async flush(): Promise<void> {
    const text = this.pending.join('');
    this.pending = [];
    this.size = 0;
    if (text !== '') await this.handle.appendFile(text);
  }
}

/** Removes drafts (after use, or of a read given up); a draft already gone is fine. */
export async function removeAckDrafts(paths: readonly string[]): Promise<void> {
  for (const path of paths) await rm(path, { force: true });
}

/** Removes every draft of a batch in `dir` (a read given up, or left by a stop mid-read). */
export async function removeBatchAckDrafts(dir: string, batchId: string): Promise<void> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return; // no drafts folder yet: nothing was ever drafted
  }
  await removeAckDrafts(names.filter((n) => n.startsWith(`${batchId}.ack-`)).map((n) => join(dir, n)));
}

/** Removes every draft in `dir`: at start, before anything is read, what is there was left by a stop mid-read. */
export async function removeAllAckDrafts(dir: string): Promise<number> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return 0; // no drafts folder yet
  }
  const drafts = names.filter((n) => /\.ack-\d+\.csv$/.test(n)).map((n) => join(dir, n));
  await removeAckDrafts(drafts);
  return drafts.length;
}
