/**
 * A PostgreSQL connection dropped while a batch's rows are stored fails the query with a plain Error (no code, no
 * severity), and the database answers again at once on a new connection. The daemon counted such a failure as the
 * file's own, and refused a good file after batch.readRetry.maxAttempts drops; it is a passing one.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { isPassingReadFailure } from '../../src/daemon/read-retries.js';
import { DEFAULT_BATCH_FORMAT, readBatchFileOnThread } from '../../src/ingest/csv/index.js';
import { DEFAULT_VALIDATION_RULES } from '../../src/ingest/rules/index.js';
import { closeDatabase, openDatabase, pingDatabase, type Database } from '../../src/store/db.js';
import { HEADER, row, tempCsv } from '../ingest/helpers.js';
import { PG_URL, pgReachable } from './pg.js';

/** A TCP proxy in front of the server whose connections the test can cut. */
async function cuttableProxy(): Promise<{ server: Server; url: string; cut: () => void }> {
  const sockets: Socket[] = [];
  const target = new URL(PG_URL);
  const server = createServer((client) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    sockets.push(client, upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    // A cut connection's sockets fail: that is the point.
    for (const s of [client, upstream]) s.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(PG_URL);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as { port: number }).port);
  return { server, url: url.toString(), cut: () => sockets.splice(0).forEach((s) => s.destroy()) };
}

describe.skipIf(!pgReachable)('a PostgreSQL connection dropped while a file is read', () => {
  let db: Database | null = null;
  let server: Server | null = null;
  afterEach(async () => {
    if (db) await closeDatabase(db);
    server?.close();
    db = server = null;
  });

  it('fails the reading with an error that may pass, not one counted against the file', async () => {
    const proxy = await cuttableProxy();
    server = proxy.server;
    db = openDatabase({ client: 'pg', url: proxy.url, filename: '', poolMax: 2, busyTimeoutMs: 5000, synchronous: 'FULL' });
    const store = db;
    await pingDatabase(store);
    const path = await tempCsv(`${HEADER}\n${row('PD-1')}\n`);
    const failure = await readBatchFileOnThread(path, 'batch.csv', {
      format: DEFAULT_BATCH_FORMAT,
      rules: DEFAULT_VALIDATION_RULES,
      batchId: 'B1',
      // The rows' store, cut off mid-query.
      onRows: async () => {
        const query = store.raw('select pg_sleep(5)');
        setTimeout(proxy.cut, 200);
        await query;
      },
    }).then(
      () => null,
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toMatch(/Connection terminated unexpectedly/);
    expect(isPassingReadFailure(failure)).toBe(true);
    // The database answers again: a ping could not tell this failure from the file's own.
    await pingDatabase(store);
  });
});
