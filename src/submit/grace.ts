/**
 * The not-found grace: how long a reference the service does not show is still taken for a create that may be
 * on its way in. It is counted on two clocks. The system clock, from when the outcome became unknown (stored
 * with the row, so it survives a restart), can step ahead (an NTP correction, a resumed VM) and end the grace
 * at once; the process's steady clock cannot, but counts only from when this process first looked at the row.
 * Both must have run out, so a step of the system clock never shortens the wait, and a restart or another
 * instance taking the row over lengthens it by at most one grace.
 */

/** The readings the grace is decided from: the system clock's (ms since the epoch) and the steady clock's. */
export interface GraceReadings {
  graceMs: number;
  /** The system clock now, and when the row's outcome became unknown. */
  now: number;
  unknownSince: number;
  /** The steady clock now, and when this process first looked at the row since its outcome became unknown. */
  steadyNow: number;
  steadySince: number;
}

/**
 * Null when a reference still absent may be taken as never created; otherwise the system-clock time to ask
 * again, when the grace will have run out on both clocks: whole milliseconds, as stored, never before the end
 * (a steady clock reads fractions).
 */
export function notFoundGraceEnd(r: GraceReadings): number | null {
  const left = Math.max(r.unknownSince + r.graceMs - r.now, r.steadySince + r.graceMs - r.steadyNow);
  return left > 0 ? Math.ceil(r.now + left) : null;
}

/** One row's outcome becoming unknown: a later create that becomes unknown too is another. */
export interface UnknownEpisode {
  id: number;
  createAttempts: number;
  unknownSince: number | null;
}

interface Look {
  createAttempts: number;
  unknownSince: number | null;
  /** Steady clock: the first look, and the last. */
  first: number;
  last: number;
}

/**
 * When this process first looked at each UNKNOWN row, on its steady clock. An entry goes when its row leaves
 * UNKNOWN here, or when its row was not looked at for `forgetAfterMs` (it left UNKNOWN in another process, or
 * this one lost it); a row forgotten while still UNKNOWN only waits one more grace.
 */
export class FirstLooks {
  private readonly looks = new Map<number, Look>();
  private sweptAt: number;

  constructor(
    private readonly steady: () => number,
    private readonly forgetAfterMs: () => number,
  ) {
    this.sweptAt = steady();
  }

  /** Records a look at the row now; returns the steady time of the first look at this episode of it. */
  look(row: UnknownEpisode): number {
    const now = this.steady();
    const seen = this.looks.get(row.id);
    if (seen && seen.createAttempts === row.createAttempts && seen.unknownSince === row.unknownSince) {
      seen.last = now;
      return seen.first;
    }
    this.looks.set(row.id, { createAttempts: row.createAttempts, unknownSince: row.unknownSince, first: now, last: now });
    return now;
  }

  forget(id: number): void {
    this.looks.delete(id);
  }

  /** Drops the rows not looked at for `forgetAfterMs` (checked at most that often). */
  sweep(): void {
    const now = this.steady();
    const after = this.forgetAfterMs();
    if (now - this.sweptAt < after) return;
    this.sweptAt = now;
    for (const [id, look] of this.looks) if (now - look.last > after) this.looks.delete(id);
  }

  get size(): number {
    return this.looks.size;
  }
}
