/**
 * E2E: the real `payoutd run` reading files in parts on reader threads
 * (`batch.read`, forced here for small files) writes the very
 * acknowledgement it writes reading them in one thread: for a clean file
 * (the ack drafted while reading) and for a file whose acceptance changes
 * rows (a reference used twice, one use in each part, and invalid rows
 * under skip-rows: the ack written from the stored rows).
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeRows, toCsv } from './batch-files.js';
import { outboxFileName, startE2e } from './harness.js';
import { spawnPayoutd } from '../chaos/world.js';

const CLEAN = toCsv(makeRows('CLEAN', 400));
const MIXED = (() => {
  const rows = makeRows('MIX', 400);
  // The reference of line 11 again on line 391 (the other part), and two invalid amounts, one in each part.
  rows[389] = { ...(rows[389] as (typeof rows)[number]), merchantReferenceId: 'MIX-0010' };
  rows[50] = { ...(rows[50] as (typeof rows)[number]), payoutAmount: '12.3.4' };
  rows[350] = { ...(rows[350] as (typeof rows)[number]), payoutAmount: '-5' };
  return toCsv(rows);
})();

interface Acks {
  clean: string;
  mixed: string;
  readInParts: number[];
}

/** Both files through one daemon with the given `batch.read`; their acks with the batch ids taken out. */
async function acksWith(read: Record<string, unknown>): Promise<Acks> {
  const e2e = await startE2e({ config: { batch: { read, onInvalidRows: 'skip-rows', balanceCheck: { enabled: false } } } });
  const daemon = await e2e.startDaemon();
  const acks: Record<string, string> = {};
  for (const [name, content] of [
    ['clean.csv', CLEAN],
    ['mixed.csv', MIXED],
  ] as const) {
    await e2e.drop(name, content);
    const batch = await e2e.waitForBatch(name, ['ACTIVE', 'COMPLETE', 'REJECTED']);
    expect(batch.state).not.toBe('REJECTED');
    await e2e.waitForOutbox(batch, 'ack');
    acks[name] = (await readFile(join(e2e.outbox, outboxFileName(batch, 'ack')), 'utf8')).replaceAll(batch.id, '<batch>');
  }
  const accepted = daemon.logs.filter((l) => l.msg === 'batch accepted');
  return {
    clean: acks['clean.csv'] as string,
    mixed: acks['mixed.csv'] as string,
    readInParts: accepted.map((l) => Number(l.readInParts)),
  };
}

describe('e2e: a file read in parts', () => {
  it('gets the acknowledgement of a file read in one thread, byte for byte', async () => {
    const inParts = await acksWith({ workers: 2, minBytes: 0 });
    const inOne = await acksWith({ workers: 0 });
    expect(inParts.readInParts).toEqual([2, 2]);
    expect(inOne.readInParts).toEqual([1, 1]);
    expect(inParts.clean).toBe(inOne.clean);
    expect(inParts.mixed).toBe(inOne.mixed);
    // And it says what the rows are: both uses of the reference refused, the invalid amounts named.
    expect(inParts.clean.match(/,ACCEPTED,/g)).toHaveLength(400);
    expect(inParts.mixed).toMatch(/,11,MIX-0010,REJECTED,.*DUPLICATE_IN_FILE/);
    expect(inParts.mixed).toMatch(/,391,MIX-0010,REJECTED,.*DUPLICATE_IN_FILE/);
    expect(inParts.mixed.match(/,ACCEPTED,/g)).toHaveLength(396);
  });

  it('killed while storing a part, reads the file again from the start at the next start: every row once, no draft left', async () => {
    const rows = 25_000;
    const e2e = await startE2e({ config: { batch: { read: { workers: 2, minBytes: 0 }, balanceCheck: { enabled: false } } } });
    // Killed right after the first 10,000-row chunk is committed, both readers still going.
    const first = spawnPayoutd(e2e, 'killed', { PAYOUTD_FAULT_KILL_AT: 'mid-read:1' });
    await first.running();
    await e2e.drop('big.csv', toCsv(makeRows('BIG', rows)));
    const exit = await first.exit;
    expect(exit.signal).toBe('SIGKILL');
    expect((await e2e.batches())[0]?.state).toBe('VALIDATING');

    const second = await e2e.startDaemon();
    const batch = await e2e.waitForBatch('big.csv', ['ACTIVE', 'COMPLETE', 'REJECTED'], 60_000);
    expect(batch.state).not.toBe('REJECTED');
    await e2e.waitForOutbox(batch, 'ack');
    const ack = await readFile(join(e2e.outbox, outboxFileName(batch, 'ack')), 'utf8');
    const lines = ack.split('\r\n').filter((l) => l.includes(',ACCEPTED,'));
    expect(lines).toHaveLength(rows);
    // Line order, each line once: line k + 1 holds BIG-k.
    lines.forEach((l, k) => expect(l.split(',').slice(2, 4)).toEqual([String(k + 2), `BIG-${String(k + 1).padStart(4, '0')}`]));
    expect(second.logs.find((l) => l.msg === 'batch accepted')?.readInParts).toBe(2);
    expect(await readdir(join(e2e.stateDir, 'reading'))).toEqual([]);
  });
});
