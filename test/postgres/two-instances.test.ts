/**
 * PostgreSQL 2: two `payoutd run` instances on one inbox and one database.
 * Both poll the inbox (as on a shared folder) and see every file; each file
 * is still taken by exactly one of them (one file_claims row, one batch),
 * read by one reader, every row is paid once, each batch's result is
 * written once, and each batch event is delivered once, by one of them.
 * The balance endpoint answers slowly (1.5 s), as a real one may: reading a batch then always outlasts a finish pass, which made the
 * double reading that reading-once.test.ts guards against show every time
 * instead of now and then (seen here with 5-row files on a loaded machine,
 * before its fix: a batch REJECTED while its rows were being paid,
 * "REPORT_NOT_TERMINAL").
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { EventReceiver, newSigningSecret } from '../notify/receivers.js';
import { makeRows, toCsv } from '../e2e/batch-files.js';
import { ledgerByReference, startE2e, waitFor } from '../e2e/harness.js';
import { dropFile, startInstances } from './instances.js';
import { pgQuery, pgReachable, useTestSchema } from './pg.js';

const FILES = ['two-a.csv', 'two-b.csv', 'two-c.csv'];
const ROWS_PER_FILE = 5;

describe.skipIf(!pgReachable)('postgres: two instances, one inbox', () => {
  const schema = useTestSchema();

  it('each file is claimed by one instance, each row paid once, each result written once', async () => {
    const e2e = await startE2e({ sandbox: { faults: { latencyMs: 1500, endpoints: ['/apis/v1/balance/query'] } } });
    // Batch events go to a webhook receiver: each is delivered by one of the instances.
    const secret = newSigningSecret();
    const receiver = new EventReceiver(secret);
    await receiver.start();
    onTestFinished(() => receiver.stop());
    const secretFile = join(e2e.dir, 'notify-secret');
    await writeFile(secretFile, secret, { mode: 0o600 });
    const instances = await startInstances(e2e, schema, {
      inbox: { usePolling: true, stableForMs: 200, rescanIntervalMs: 300 },
      instance: { leaseMs: 8000 },
      api: { timeoutMs: 3900 }, // under half the lease (config refuses more)
      notify: { webhooks: [{ url: receiver.url, name: 'erp', secretFile }] },
    });
    await instances.configure('one');
    await instances.configure('two');
    expect((await instances.cli('one', ['migrate'])).code).toBe(0);
    await Promise.all([instances.start('one'), instances.start('two')]);

    const rows = FILES.map((_name, i) => makeRows(`PG2-${i}`, ROWS_PER_FILE));
    for (const [i, name] of FILES.entries()) await dropFile(e2e, name, toCsv(rows[i] ?? []));

    const done = await e2e.waitForBatches(
      (bs) => {
        // Fails fast on the first sign of a batch read twice or an intake gone wrong.
        for (const msg of [
          'resuming the reading',
          'work loop pass failed',
          'inbox watcher error',
          'batch rejected',
          'batch file refused',
        ]) {
          const hit = instances.logs(msg)[0];
          if (hit) throw new Error(`${hit.instance}: ${msg}: ${JSON.stringify(hit.line).slice(0, 300)}`);
        }
        return bs.filter((b) => b.state === 'COMPLETE').length >= FILES.length ? bs : undefined;
      },
      `${FILES.length} complete batches`,
      40_000,
    );
    await waitFor(() => instances.logs('batch complete').length >= FILES.length, 'a "batch complete" line per batch', 10_000);
    const stored = await waitFor(
      async () => {
        const ids = await pgQuery<{ id: string }>(schema.url, 'select id from batch_events order by seq');
        return ids.length >= FILES.length * 3 && receiver.events.length >= ids.length ? ids : undefined;
      },
      'every batch event at the receiver',
      15_000,
    );
    expect(receiver.events.map((e) => e.id).sort()).toEqual(stored.map((r) => r.id).sort());
    expect(receiver.deliveries, 'each event delivered once: one instance claims it').toBe(stored.length);
    // A graceful stop lets every pass already started finish, so a second writer racing the first would have logged by now.
    for (const d of instances.all()) expect(await d.stop(), d.label).toBe(0);

    // One batch per file, no duplicates or rejections.
    expect(done.map((b) => b.fileName).sort()).toEqual([...FILES].sort());
    expect(done.map((b) => [b.state, b.counts])).toEqual(FILES.map(() => ['COMPLETE', { PAID: ROWS_PER_FILE }]));

    // The database decided who took each file: each was received once, by one instance. (Claim rows are
    // forgotten once older than a lease, so the logs, not file_claims, are the record here.)
    const received = instances.logs('batch file received').map((h) => String(h.line['file']));
    expect(received.sort()).toEqual([...FILES].sort());

    // Every row paid exactly once.
    const perRef = ledgerByReference(e2e.ledger());
    expect(rows.flat().filter((r) => perRef.get(r.merchantReferenceId)?.length !== 1)).toEqual([]);
    expect(e2e.ledger()).toHaveLength(FILES.length * ROWS_PER_FILE);

    // Each batch read once, by one reader.
    expect(
      instances
        .logs('batch accepted')
        .map((l) => String(l.line.batchId))
        .sort(),
    ).toEqual(done.map((b) => b.id).sort());
    expect(instances.logs('resuming the reading')).toEqual([]);

    // One result file per batch, and one "batch complete" across both instances.
    const names = await e2e.outboxNames();
    for (const b of done) expect(names.filter((n) => n.startsWith(`${b.id}_`) && n.endsWith('.result.csv'))).toHaveLength(1);
    expect(names.filter((n) => n.endsWith('.result.csv'))).toHaveLength(FILES.length);
    const completes = instances.logs('batch complete').map((l) => l.line.batchId);
    expect(completes.sort()).toEqual(done.map((b) => b.id).sort());
    const results = await Promise.all(done.map((b) => e2e.waitForOutbox(b, 'result', 1000)));
    for (const r of results) expect(r.rows.map((x) => x['status'])).toEqual(Array(ROWS_PER_FILE).fill('PAID'));
  });
});
