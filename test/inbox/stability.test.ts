import { describe, expect, it } from 'vitest';
import { type Observation, type Patience, PAUSE_FACTOR, observe, stabilityVerdict } from '../../src/ingest/inbox/stability.js';

const patience: Patience = { stableForMs: 5000, maxStableForMs: 600_000, unterminatedStableForMs: 600_000 };

/** Observations once a second (as the daemon's timer looks) of a file whose fingerprint at time t is `keyAt(t)`. */
function watch(keyAt: (t: number) => string, fromMs: number, toMs: number, start?: Observation): Observation {
  let o = start;
  for (let t = fromMs; t <= toMs; t += 1000) o = observe(o, keyAt(t), t);
  return o as Observation;
}

const stableAt = (o: Observation, now: number, p: Patience = patience): boolean => stabilityVerdict(o, now, p).stable;

describe('stability window', () => {
  it('needs the same fingerprint at least stableForMs apart when the file never paused', () => {
    let o = observe(undefined, 'k1', 1000);
    expect(stableAt(o, 1000)).toBe(false);
    o = observe(o, 'k1', 5999);
    expect(stableAt(o, 5999)).toBe(false);
    o = observe(o, 'k1', 6000);
    expect(stabilityVerdict(o, 6000, patience)).toEqual({ stable: true, stableAt: 6000, reason: 'stable-window' });
  });

  it('restarts on every change', () => {
    let o = observe(undefined, 'k1', 0);
    o = observe(o, 'k2', 4000);
    expect(o).toMatchObject({ key: 'k2', since: 4000 });
    expect(stableAt(observe(o, 'k2', 8999), 8999)).toBe(false);
  });

  it('restarts instead of waiting when the clock goes backwards, keeping the pauses seen', () => {
    let o = watch(() => 'k1', 3_600_000, 3_602_000);
    o = observe(o, 'k2', 3_603_000);
    const back = observe(o, 'k2', 0);
    expect(back.since).toBe(0);
    expect(back.longestPauseMs).toBe(2000);
    expect(stableAt(observe(back, 'k2', 6000), 6000)).toBe(true);
  });

  it('a file growing in bursts with 8 s pauses under a 5 s window is not offered 5 s after a burst', () => {
    // Bursts at 0, 8, 16 and 24 s; the last one ends the upload.
    const keyAt = (t: number): string => `size-${Math.min(Math.floor(t / 8000), 3)}`;
    const o = watch(keyAt, 0, 24_000);
    expect(o.longestPauseMs).toBe(7000); // seen unchanged from 0 to 7 s, then changed at 8 s
    expect(stableAt(watch(keyAt, 25_000, 29_000, o), 29_000)).toBe(false); // 5 s after the last burst
    const verdict = stabilityVerdict(o, 29_000, patience);
    expect(verdict).toEqual({ stable: false, stableAt: 24_000 + PAUSE_FACTOR * 7000, reason: 'upload-pauses' });
    expect(stableAt(watch(keyAt, 25_000, 45_000, o), 45_000)).toBe(true);

    // And the pause itself was never long enough to take the file mid-upload.
    for (let now = 8000; now < 24_000; now += 1000) expect(stableAt(watch(keyAt, 0, now), now), `at ${now} ms`).toBe(false);
  });

  it('counts only time the file was seen unchanged: a watcher that looked late does not inflate the pause', () => {
    let o = observe(undefined, 'k1', 0);
    o = observe(o, 'k1', 1000);
    o = observe(o, 'k2', 60_000); // nobody looked between 1 s and 60 s
    expect(o.longestPauseMs).toBe(1000);
    expect(stabilityVerdict(o, 65_000, patience).stable).toBe(true);
  });

  it('is bounded by maxStableForMs, and never below stableForMs', () => {
    let o = watch(() => 'k1', 0, 3_600_000, undefined);
    o = observe(o, 'k2', 3_601_000);
    expect(o.longestPauseMs).toBe(3_600_000);
    expect(stabilityVerdict(o, 3_601_000, patience)).toMatchObject({ stableAt: 3_601_000 + 600_000, reason: 'upload-pauses' });
    const tightCap = { ...patience, maxStableForMs: 1000 };
    expect(stabilityVerdict(o, 3_601_000, tightCap)).toMatchObject({ stableAt: 3_601_000 + 5000, reason: 'stable-window' });
  });

  it('an unterminated file waits unterminatedStableForMs unless a done marker vouches for it', () => {
    const o = watch(() => 'k1', 0, 5000);
    expect(stabilityVerdict(o, 5000, patience).stable).toBe(true); // the window alone
    expect(stabilityVerdict(o, 5000, patience, { terminated: true, doneMarker: false })).toMatchObject({ stable: true });
    expect(stabilityVerdict(o, 5000, patience, { terminated: false, doneMarker: false })).toEqual({
      stable: false,
      stableAt: 600_000,
      reason: 'unterminated',
    });
    expect(stabilityVerdict(o, 599_999, patience, { terminated: false, doneMarker: false }).stable).toBe(false);
    expect(stabilityVerdict(o, 600_000, patience, { terminated: false, doneMarker: false }).stable).toBe(true);
    expect(stabilityVerdict(o, 5000, patience, { terminated: false, doneMarker: true })).toMatchObject({ stable: true });
  });
});
