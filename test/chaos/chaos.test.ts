/**
 * Chaos, bounded for `npm test`: a few fixed seeds, each a run of
 * test/chaos/runner.ts — batch files paid while the daemon is stopped again
 * and again (SIGKILL at seeded moments and at named kill points; SIGTERM in
 * the graceful variant) under a seeded mix of service faults, then let
 * finish. The long version is `npm run chaos -- --iterations N --seed S`.
 */
import { describe, expect, it } from 'vitest';
import { runChaos } from './runner.js';

const log = (line: string): void => console.log(line);

describe('chaos: exactly once while the daemon is stopped again and again', () => {
  it.each([11, 22])('SIGKILL at seeded moments and kill points, seed %i', { timeout: 120_000 }, async (seed) => {
    const verdict = await runChaos({ seed, iterations: 4, rows: 80, log });
    expect(verdict.failures, verdict.summary).toEqual([]);
  });

  it('SIGTERM at seeded moments: every stop exits 0 in time, nothing lost or repeated, seed 33', { timeout: 120_000 }, async () => {
    const verdict = await runChaos({ seed: 33, iterations: 3, rows: 60, stopWith: 'SIGTERM', log });
    expect(verdict.failures, verdict.summary).toEqual([]);
  });
});
