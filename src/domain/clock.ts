/** Time as an injectable dependency, so tests can move time instead of sleeping. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock tests move by hand. */
export class ManualClock implements Clock {
  constructor(private ms = Date.UTC(2026, 0, 1)) {}
  now(): number {
    return this.ms;
  }
  advance(ms: number): void {
    this.ms += ms;
  }
  set(ms: number): void {
    this.ms = ms;
  }
}

/**
 * Whether `everyMs` has passed since `since` at `now`. A clock that went back before `since` counts as passed:
 * waiting for it to catch up would hold the work back for as long as the jump.
 */
export function intervalPassed(now: number, since: number, everyMs: number): boolean {
  return now < since || now - since >= everyMs;
}

/** A duration for people (console pages, `payoutd status`): 45s, 12m, 3h, 2d. */
export function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  if (s < 172_800) return `${Math.round(s / 3600)}h`;
  return `${Math.round(s / 86_400)}d`;
}

/** How far the system clock may run ahead of the counted time between two readings before it is taken for a jump. */
const CLOCK_JUMP_MS = 60_000;

/**
 * The system clock, never ahead of the time counted on a monotonic clock since its last reading: what deletes
 * by age must not act on a clock that jumped ahead (a restored VM, a wrong time source). A clock that went back
 * is followed, as it only makes things look younger; one that jumped ahead is not, until it is back in line or
 * the daemon restarts: a monotonic clock cannot tell a wrong jump from a correction.
 */
export class SteadyClock implements Clock {
  private last: number;
  private lastTick: number;
  private jump: { wall: number; counted: number } | undefined;

  constructor(
    private readonly wall: Clock,
    private readonly monotonic: () => number = () => performance.now(),
  ) {
    this.last = wall.now();
    this.lastTick = monotonic();
  }

  now(): number {
    const wall = this.wall.now();
    const tick = this.monotonic();
    const counted = this.last + (tick - this.lastTick);
    this.jump = wall - counted > CLOCK_JUMP_MS ? { wall, counted } : undefined;
    this.last = this.jump ? counted : wall;
    this.lastTick = tick;
    // Whole milliseconds, as the system clock gives: a monotonic reading has a fraction, which a bigint column refuses.
    return Math.floor(this.last);
  }

  /** At the last reading, when the system clock was ahead of the counted time: both times. */
  get ahead(): { wall: number; counted: number } | undefined {
    return this.jump;
  }
}
