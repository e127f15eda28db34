import { describe, expect, it } from 'vitest';
import { faultPointFromSpec } from '../../src/daemon/fault-points.js';

describe('fault points (chaos testing)', () => {
  it('fires on the n-th time the named point is reached, and only then', () => {
    let kills = 0;
    const point = faultPointFromSpec('after-intent:3', () => kills++);
    expect(point).not.toBeNull();
    point?.('after-record');
    point?.('after-intent');
    point?.('after-intent');
    expect(kills).toBe(0);
    point?.('after-intent');
    expect(kills).toBe(1);
    point?.('after-intent');
    expect(kills).toBe(1);
  });

  it('ignores a missing or malformed spec instead of killing by mistake', () => {
    for (const spec of [undefined, '', 'after-intent', 'after-intnet:1', 'after-intent:x', 'mid-result-file:1:2']) {
      expect(
        faultPointFromSpec(spec, () => {
          throw new Error('must not be called');
        }),
      ).toBeNull();
    }
  });
});
