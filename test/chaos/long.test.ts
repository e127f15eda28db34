/**
 * The long chaos run, off in `npm test`: `npm run chaos -- --iterations N
 * --seed S [--runs R] [--rows N] [--stop SIGTERM]` (bench/chaos.mjs) sets
 * the CHAOS_* variables below and runs this file. Each run prints
 * "seed S: PASS/FAIL …"; a failing seed replays with the same --seed.
 */
import { appendFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runChaos } from './runner.js';

const env = process.env;
const enabled = env.CHAOS_ITERATIONS !== undefined || env.CHAOS_SEED !== undefined;
const iterations = Number.parseInt(env.CHAOS_ITERATIONS ?? '12', 10);
const rows = Number.parseInt(env.CHAOS_ROWS ?? '300', 10);
const runs = Number.parseInt(env.CHAOS_RUNS ?? '1', 10);
const firstSeed = env.CHAOS_SEED !== undefined ? Number.parseInt(env.CHAOS_SEED, 10) : Math.floor(Math.random() * 1_000_000);
const stopWith = env.CHAOS_STOP === 'SIGTERM' ? 'SIGTERM' : 'SIGKILL';
const seeds = Array.from({ length: Math.max(1, runs) }, (_, i) => firstSeed + i);

function report(line: string): void {
  console.log(line);
  if (env.CHAOS_REPORT) appendFileSync(env.CHAOS_REPORT, `${line}\n`);
}

describe.skipIf(!enabled)('chaos, long run (npm run chaos)', () => {
  it.each(seeds)(`seed %i: ${iterations} stops by ${stopWith}, ${rows} rows`, { timeout: (iterations * 15 + 180) * 1000 }, async (seed) => {
    const verdict = await runChaos({ seed, iterations, rows, stopWith, log: (l) => console.log(l), finishTimeoutMs: 150_000 });
    report(verdict.summary);
    expect(verdict.failures, verdict.summary).toEqual([]);
  });
});
