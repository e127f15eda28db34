import { describe, expect, it } from 'vitest';
import { isStable, observe } from '../../src/ingest/inbox/stability.js';

describe('stability window', () => {
  it('needs the same fingerprint at least stableForMs apart', () => {
    let o = observe(undefined, 'k1', 1000);
    expect(isStable(o, 1000, 5000)).toBe(false);
    o = observe(o, 'k1', 5999);
    expect(isStable(o, 5999, 5000)).toBe(false);
    o = observe(o, 'k1', 6000);
    expect(isStable(o, 6000, 5000)).toBe(true);
  });

  it('restarts on every change', () => {
    let o = observe(undefined, 'k1', 0);
    o = observe(o, 'k2', 4000);
    expect(o).toEqual({ key: 'k2', since: 4000 });
    expect(isStable(observe(o, 'k2', 8999), 8999, 5000)).toBe(false);
  });

  it('restarts instead of waiting when the clock goes backwards', () => {
    const o = observe(observe(undefined, 'k1', 3_600_000), 'k1', 0);
    expect(o.since).toBe(0);
    expect(isStable(observe(o, 'k1', 5000), 5000, 5000)).toBe(true);
  });
});
