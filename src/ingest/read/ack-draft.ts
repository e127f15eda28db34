/**
 * An acknowledgement drafted while its batch file is read: the lines of the
 * rows read so far, appended to a file of the reader's own (in the state
 * directory, never the outbox) a quarter megabyte at a time. Not synced: a
 * draft is written again whenever its file is read again, and the
 * acknowledgement made from it is written atomically (src/report/atomic.ts).
 */
import { mkdir, open, readdir, rm, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';

const FLUSH_BYTES = 256 * 1024;
/** UTF-8 bytes a UTF-16 code unit can take at most. */
const MAX_BYTES_PER_UNIT = 3;

export class AckDraftFile {
  /**
   * The lines not yet written, as bytes: copied out of their strings as they come. Kept as strings until a
   * flush, a quarter megabyte of lines outlived the reader's young collections, and V8 moved them and the
   * places that make them to the old generation (see PARSED_ROWS_AT_A_TIME in ./rows.ts).
   */
  private readonly pending = Buffer.allocUnsafe(FLUSH_BYTES);
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
    if (this.size + text.length * MAX_BYTES_PER_UNIT > FLUSH_BYTES) {
      await this.flush();
      if (text.length * MAX_BYTES_PER_UNIT > FLUSH_BYTES) {
        await this.handle.appendFile(text);
        return;
      }
    }
    this.size += this.pending.write(text, this.size);
  }

  async close(): Promise<void> {
    try {
      await this.flush();
    } finally {
      await this.handle.close();
    }
  }

  private async flush(): Promise<void> {
    // The write is awaited before the buffer takes more lines.
    if (this.size > 0) await this.handle.appendFile(this.pending.subarray(0, this.size));
    this.size = 0;
  }
}

/** The drafts of one batch's acknowledgement in `dir`: one per part, in line order. */
export function ackDraftPaths(dir: string, batchId: string, parts: number): string[] {
  return Array.from({ length: parts }, (_, k) => join(dir, `${batchId}.ack-${k}.csv`));
}

/** A draft's name, as ackDraftPaths makes it: `<batch id>.ack-<part>.csv`. */
const DRAFT_NAME = /^(.+)\.ack-\d+\.csv$/;

/** Removes drafts (after use, or of a read given up); a draft already gone is fine. */
export async function removeAckDrafts(paths: readonly string[]): Promise<void> {
  for (const path of paths) await rm(path, { force: true });
}

/** Removes the drafts in `dir` of one batch, or of every batch (`batchId` null); returns how many. */
async function removeDraftsIn(dir: string, batchId: string | null): Promise<number> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return 0; // no drafts folder yet: nothing was ever drafted
  }
  const drafts = names.filter((n) => {
    const m = DRAFT_NAME.exec(n);
    return m !== null && (batchId === null || m[1] === batchId);
  });
  await removeAckDrafts(drafts.map((n) => join(dir, n)));
  return drafts.length;
}

/** Removes every draft of a batch in `dir` (a read given up, or left by a stop mid-read). */
export async function removeBatchAckDrafts(dir: string, batchId: string): Promise<void> {
  await removeDraftsIn(dir, batchId);
}

/** Removes every draft in `dir`: at start, before anything is read, what is there was left by a stop mid-read. */
export function removeAllAckDrafts(dir: string): Promise<number> {
  return removeDraftsIn(dir, null);
}
