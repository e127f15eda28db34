/**
 * FileCounts: what feeds payoutd_files_total{outcome} from the intake. `seen` counts each file whose intake this
 * process takes on (claimed from the inbox, found in claimed/ without a record, a reading resumed after a stop, a
 * failure or another instance's lease, an inbox entry refused) once, however many readings it takes; each such file
 * then counts once by its outcome. So, in one process, seen is at least accepted + rejected + duplicate, the
 * difference being the files still being read. A counter starts from 0 with its process: a file whose reading a
 * stop cut short is seen again by the next process, which is the one that counts its outcome.
 */
import type { BatchState } from '../domain/lifecycle.js';

export type BatchEvent = 'seen' | 'accepted' | 'rejected' | 'duplicate' | 'completed';

/** The outcome counted for an intake that ended with the batch in `state`. */
function intakeOutcome(state: BatchState): BatchEvent {
  return state === 'ACTIVE' ? 'accepted' : state === 'DUPLICATE' ? 'duplicate' : 'rejected';
}

export class FileCounts {
  /** Files counted as seen whose outcome is not counted yet, by stored path (or inbox path for a refused entry). */
  private readonly open = new Set<string>();

  constructor(private readonly count: ((event: BatchEvent) => void) | undefined) {}

  /** This process takes on the intake of the file at `path`: seen, unless it was already since its last outcome. */
  seen(path: string): void {
    if (this.open.has(path)) return;
    this.open.add(path);
    this.count?.('seen');
  }

  /** The intake of the file at `path` ended with its batch in `state`: its outcome, once (and seen, if not yet). */
  ended(path: string, state: BatchState): void {
    this.seen(path);
    this.open.delete(path);
    this.count?.(intakeOutcome(state));
  }
}
