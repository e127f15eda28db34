/**
 * ReadRetries: the intakes that failed in this process (a batch whose reading failed, a taken file whose batch
 * could not be recorded) and when each may be tried again. The wait doubles with each failure of the same one,
 * so an error that lasts (a full disk) does not have the finish loop read the same file over and over, while
 * one that passes (the write lock held by a command for a moment) costs little.
 */
import { intervalPassed, type Clock } from '../domain/clock.js';
import { backoffStep, type BackoffPolicy } from '../domain/backoff.js';
import { FileReadFailure } from '../ingest/index.js';

/** The first wait after a failure, and the longest. */
export const READ_RETRY: BackoffPolicy = { baseMs: 2_000, maxMs: 300_000 };

export class ReadRetries {
  private readonly failures = new Map<string, { count: number; at: number; waitMs: number }>();

  constructor(
    private readonly clock: Clock,
    private readonly policy: BackoffPolicy = READ_RETRY,
  ) {}

  /** Records a failure of `key`; the wait before it is tried again. */
  failed(key: string): number {
    const count = (this.failures.get(key)?.count ?? 0) + 1;
    // No jitter: one process retries its own work, there is no crowd to spread out.
    const waitMs = backoffStep(count, this.policy);
    this.failures.set(key, { count, at: this.clock.now(), waitMs });
    return waitMs;
  }

  /** Whether `key` failed here and is not yet tried again with success. */
  has(key: string): boolean {
    return this.failures.has(key);
  }

  /** Whether `key` may be tried now: it never failed, or its wait is over (or the clock went back since). */
  due(key: string): boolean {
    const f = this.failures.get(key);
    return f === undefined || intervalPassed(this.clock.now(), f.at, f.waitMs);
  }

  /** `key` went through: a later failure starts from the first wait again. */
  forget(key: string): void {
    this.failures.delete(key);
  }

  /** Forgets every key but these (work another instance finished, or that ended otherwise). */
  keepOnly(keys: Iterable<string>): void {
    const kept = new Set(keys);
    for (const key of [...this.failures.keys()]) if (!kept.has(key)) this.failures.delete(key);
  }
}

/**
 * Whether a failed reading may pass by itself: anything but the reading of the file failing (the store, a dropped
 * connection, a lost lease), or the file system failing it (an errno code such as EIO or ENOSPC). The reader's
 * own failure (a bug, a library throwing on odd input, its thread out of memory) repeats on the same file.
 */
export function isPassingReadFailure(err: unknown): boolean {
  if (!(err instanceof FileReadFailure)) return true;
  const { code } = err;
  // Node's own ERR_* codes are its refusals of a call (a bug), not the system's.
  return code !== undefined && /^E[A-Z0-9_]+$/.test(code) && !code.startsWith('ERR_');
}

/** The way a reading failed, as compared between readings: the reader's error's name and code, never its message. */
export function readFailureKind(err: FileReadFailure): string {
  return err.code === undefined ? err.errorName : `${err.errorName}:${err.code}`;
}
