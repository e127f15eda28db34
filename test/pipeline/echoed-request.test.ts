/**
 * A payout service, or a proxy in front of it, that echoes the request in its error answers: the msg then holds
 * the API key and the access token (headers), the beneficiary's account number and the sender's ID number (body).
 * With the real sandbox behind a real HTTP proxy answering so, none of them may reach a log line, a row's reason
 * (what the console shows), the result file or the refusal of the credentials at start-up; the refusal itself
 * must still read as the service wrote it.
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { afterEach, describe, expect, it } from 'vitest';
import { PayoutApiClient, ServiceBreaker } from '../../src/api/index.js';
import { checkPayoutService } from '../../src/daemon/startup-checks.js';
import { startMitm, type Forwarded, type Mitm } from '../api/mitm.js';
import type { PayoutRequest } from '../../src/domain/payout.js';
import { VALID_ROW } from '../support/rows.js';
import { firstAcceptedBatch, pipelineDaemon, stopPipelineDaemons } from './daemon-world.js';
import { API_KEY, closePipelines, csvFile, csvRow, startPipeline, waitFor, type Pipeline } from './harness.js';

const proxies: Mitm[] = [];

afterEach(async () => {
  await stopPipelineDaemons();
  await Promise.all(proxies.splice(0).map((m) => m.close()));
  await closePipelines();
});

const SECOND_ACCOUNT = '9876543210';

/** The request as a proxy's error text shows it: its line, its headers (as JSON) and its body, in `order`. */
function echoOf(f: Forwarded, order: 'headers-first' | 'body-first'): string {
  const headers = `headers=${JSON.stringify(Object.fromEntries(f.headers))}`;
  const body = `body=${f.body.toString('utf8')}`;
  return order === 'headers-first' ? `invalid request: ${f.method} ${f.url} ${headers} ${body}` : `invalid request ${body} ${headers}`;
}

function envelope(code: string, msg: string): string {
  return JSON.stringify({ code, msg, data: null });
}

/** A proxy in front of the pipeline's sandbox, and a client reaching the sandbox through it. */
async function behindEchoingProxy(p: Pipeline): Promise<{ mitm: Mitm; client: PayoutApiClient }> {
  const mitm = await startMitm(p.sandbox.url);
  proxies.push(mitm);
  return { mitm, client: new PayoutApiClient({ ...p.clientOptions, baseUrl: mitm.url }) };
}

/** Every secret the client held: the API key and each credential the sandbox issued through the proxy. */
function secretsOf(mitm: Mitm): string[] {
  return [API_KEY, ...mitm.issued.flatMap((c) => [c.accessToken, c.refreshToken, c.secretKey])];
}

function holding(texts: readonly string[], values: readonly string[]): string[] {
  return texts.filter((t) => values.some((v) => t.includes(v)));
}

/** Runs the daemon on a file of `rows` through `client` until its batch completes; the batch and its result file. */
async function runBatch(p: Pipeline, client: PayoutApiClient, rows: string[]): Promise<{ batchId: string; result: string }> {
  const { daemon, inbox, outbox } = await pipelineDaemon(
    { ...p, client },
    {
      inbox: { stableForMs: 20 },
      batch: { onInvalidRows: 'reject-file', balanceCheck: { enabled: false } },
      submit: { notFoundGraceMs: 0, unsafeShortGrace: true },
      poll: { tickMs: 20, firstPollDelayMs: 0, minIntervalMs: 20, maxIntervalMs: 100 },
    },
  );
  await writeFile(join(inbox, 'echo.csv'), csvFile(rows));
  await daemon.start();
  const batch = await firstAcceptedBatch(p, daemon);
  await waitFor(async () => (await p.batch(batch.id)).state === 'COMPLETE', 'the batch to complete', 15_000);
  await daemon.stop();
  const name = (await readdir(outbox)).find((f) => f.startsWith(batch.id) && f.endsWith('.result.csv'));
  expect(name).toBeDefined();
  return { batchId: batch.id, result: await readFile(join(outbox, name as string), 'utf8') };
}

describe('pipeline: a service echoing the request in its refusals', () => {
  it('keeps the API key, the token, account numbers and ID numbers out of the logs, the reasons and the result file', async () => {
    const p = await startPipeline({ startMs: Date.now(), sandbox: { settlement: { minDelayMs: 0, maxDelayMs: 5 } } });
    const { mitm, client } = await behindEchoingProxy(p);
    mitm.answerInstead = (f) => {
      if (!f.url.endsWith('/fiat-payout/create')) return null;
      const body = f.body.toString('utf8');
      return { status: 200, text: envelope('2002', echoOf(f, body.includes('"ER-1"') ? 'headers-first' : 'body-first')) };
    };
    const { batchId, result } = await runBatch(p, client, [
      csvRow('ER-1'),
      csvRow('ER-2', { 'beneficiary.accountNumber': SECOND_ACCOUNT }),
    ]);

    expect(await p.states(batchId)).toEqual(['REJECTED', 'REJECTED']);
    const secrets = secretsOf(mitm);
    expect(mitm.issued.length).toBeGreaterThan(0);
    const personal = [VALID_ROW['beneficiary.accountNumber'], SECOND_ACCOUNT, VALID_ROW['sender.idValue']];
    const leaks = [...secrets, ...personal];

    expect(holding(p.logLines, leaks)).toEqual([]);
    const rows = [await p.row('ER-1'), await p.row('ER-2')];
    expect(
      holding(
        rows.map((r) => `${r.reasonCode ?? ''} ${r.reason ?? ''}`),
        leaks,
      ),
    ).toEqual([]);
    // Still the service's refusal, in its words, the account shown as the logs show one.
    for (const r of rows) {
      expect(r.reasonCode).toBe('2002');
      expect(r.reason).toMatch(/^invalid request/);
    }
    expect(rows[1]?.reason).toContain('"accountNumber":"******3210"');

    // The result file names each row's account in its own column, as finance needs; never a secret or an ID number.
    expect(holding([result], [...secrets, VALID_ROW['sender.idValue']])).toEqual([]);
    const records = parseCsv(result, { bom: true, columns: true }) as Record<string, string>[];
    const reasons = records.map((r) => r.reason ?? '');
    expect(reasons).toHaveLength(2);
    expect(holding(reasons, leaks)).toEqual([]);
  });

  it('keeps them out when the echo writes them as header lines, XML, a bracketed form, dashed or as a rejected value', async () => {
    const p = await startPipeline({ startMs: Date.now(), sandbox: { settlement: { minDelayMs: 0, maxDelayMs: 5 } } });
    const { mitm, client } = await behindEchoingProxy(p);
    mitm.answerInstead = (f) => {
      if (!f.url.endsWith('/fiat-payout/create')) return null;
      const { sender, beneficiary } = JSON.parse(f.body.toString('utf8')) as PayoutRequest;
      const account = beneficiary.accountNumber;
      const msg = [
        `rejected value [${sender.idValue}] for account ${account.slice(0, 4)}-${account.slice(4, 8)}-${account.slice(8)}`,
        ...f.headers.map(([k, v]) => `${k}: ${v}`),
        `<beneficiary><accountNumber>${account}</accountNumber></beneficiary>`,
        `sender%5BidValue%5D=${encodeURIComponent(sender.idValue)}`,
      ].join('\r\n');
      return { status: 200, text: envelope('2002', msg) };
    };
    const { batchId, result } = await runBatch(p, client, [csvRow('ER-1')]);

    expect(await p.states(batchId)).toEqual(['REJECTED']);
    const leaks = [...secretsOf(mitm), VALID_ROW['beneficiary.accountNumber'], VALID_ROW['sender.idValue']];
    const row = await p.row('ER-1');
    // The result file names the account in its own column, as finance needs; its reason column does not.
    const reasons = (parseCsv(result, { bom: true, columns: true }) as Record<string, string>[]).map((r) => r.reason ?? '');
    expect(holding([...p.logLines, `${row.reasonCode ?? ''} ${row.reason ?? ''}`, ...reasons], leaks)).toEqual([]);
    expect(holding([result], [...secretsOf(mitm), VALID_ROW['sender.idValue']])).toEqual([]);
    expect(row.reason).toMatch(/^rejected value \[\[redacted\]\] for account \*{6}7890\r\n/);
  });

  it('keeps the API key out of the refusal of the credentials at start-up', async () => {
    const p = await startPipeline({ startMs: Date.now() });
    const { mitm, client } = await behindEchoingProxy(p);
    mitm.answerInstead = (f) =>
      f.url.endsWith('/access-token')
        ? { status: 401, text: envelope('1004', `invalid credentials: ${echoOf(f, 'headers-first')}`) }
        : null;
    const check = checkPayoutService({
      client,
      breaker: new ServiceBreaker({ failureThreshold: 3, probe: { baseMs: 10, maxMs: 10 }, clock: p.clock }),
      url: mitm.url,
      clock: p.clock,
      logger: p.logger,
      waitForServiceMs: 0,
      clockSkewSeconds: 300,
    });
    const refusal = await check.then(
      () => null,
      (err: unknown) => err as Error & { code?: string },
    );
    expect(refusal?.code).toBe('CREDENTIALS_REFUSED');
    expect(refusal?.message).toContain('1004 (HTTP 401) invalid credentials: invalid request: POST /apis/v1/access-token');
    expect(refusal?.message).not.toContain(API_KEY);
    expect(holding(p.logLines, [API_KEY])).toEqual([]);
  });
});
