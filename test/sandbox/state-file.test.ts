/**
 * The sandbox's `stateFile`: every change is on disk (journal, fsync'd)
 * before the answer that reports it, changes waiting together share one
 * fsync, and a restart rebuilds the ledger from the snapshot and the
 * journal: a torn last line ignored, a damaged earlier line refused, lines
 * the snapshot already holds skipped, a fold cut short finished on start.
 * "The files as they were when the answer arrived" are copied at that
 * moment: what a SIGKILL would leave.
 * (test/e2e/sandbox-kill.test.ts kills a real sandbox process.)
 */
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/domain/clock.js';
import { startSandbox, type SandboxServer } from '../../src/sandbox/index.js';
import { Ledger, type NewPayout } from '../../src/sandbox/ledger.js';
import { LedgerFile } from '../../src/sandbox/ledger-file.js';
import { silentLogger } from '../../src/sandbox/logger.js';
import { emptyStats } from '../../src/sandbox/stats.js';
import { makeKeys, merchant, payoutBody, str, TestCaller, type TestKeys } from './harness.js';

const CREATE = '/apis/v1/fiat-payout/create';
const QUERY = '/apis/v1/fiat-payout/query';

let keys: TestKeys;
const servers: SandboxServer[] = [];
const dirs: string[] = [];
beforeAll(() => {
  keys = makeKeys();
});
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'payoutd-sandbox-state-'));
  dirs.push(dir);
  return dir;
}

async function start(stateFile: string): Promise<{ sandbox: SandboxServer; caller: TestCaller }> {
  const clock = new ManualClock(Date.UTC(2026, 0, 1, 12));
  const sandbox = await startSandbox({
    merchants: [merchant(keys, { balances: { USDT: '100000', USDC: '500' } })],
    clock,
    seed: 7,
    settlement: { minDelayMs: 600_000, maxDelayMs: 600_000 },
    stateFile,
  });
  servers.push(sandbox);
  const caller = new TestCaller({ url: sandbox.url, apiKey: 'api-key-M001', merchantCode: 'M001', privateKey: keys.privateKey, clock });
  await caller.accessToken();
  return { sandbox, caller };
}

/** Copies the state files as they are now into a fresh folder; returns the copy's stateFile. */
function copyState(stateFile: string): string {
  const copy = join(tempDir(), 'ledger.json');
  for (const suffix of ['', '.journal', '.journal.folding'])
    if (existsSync(stateFile + suffix)) copyFileSync(stateFile + suffix, copy + suffix);
  return copy;
}

async function create(caller: TestCaller, accountNumber = '1234567890'): Promise<{ ref: string; payoutId: string }> {
  const body = payoutBody({}, accountNumber);
  const reply = await caller.business(CREATE, body);
  expect(reply.code).toBe('0000');
  return { ref: body['merchantReferenceId'] as string, payoutId: str(reply.data, 'payoutId') };
}

describe('sandbox stateFile', () => {
  it('has a create on disk before it answers it', async () => {
    const stateFile = join(tempDir(), 'ledger.json');
    const { caller } = await start(stateFile);
    const created = await create(caller);
    const atAnswer = copyState(stateFile);

    const { sandbox: restarted } = await start(atAnswer);
    expect(restarted.ledger().map((e) => [e.merchantReferenceId, e.payoutId, e.status])).toEqual([
      [created.ref, created.payoutId, 'PENDING'],
    ]);
  });

  it('keeps settlements, refunds and balance changes across a restart', async () => {
    const stateFile = join(tempDir(), 'ledger.json');
    const { sandbox, caller } = await start(stateFile);
    const paid = await create(caller);
    const cancelled = await create(caller);
    await create(caller);
    expect(sandbox.settle({ payoutId: paid.payoutId }, 'PAID')).toBe(1);
    expect(sandbox.settle({ merchantReferenceId: cancelled.ref }, 'CANCELLED')).toBe(1);
    const adminReply = await fetch(`${sandbox.url}/__sandbox/balance`, {
      method: 'POST',
      body: JSON.stringify({ merchantCode: 'M001', currency: 'USDC', amount: '750.25' }),
    });
    expect(adminReply.status).toBe(200);
    const atAnswer = copyState(stateFile);

    const { sandbox: restarted } = await start(atAnswer);
    expect(restarted.ledger()).toEqual(sandbox.ledger());
    expect(restarted.balances('M001')).toEqual(sandbox.balances('M001'));
    expect(restarted.balances('M001')['USDC']).toBe('750.25');
    expect(restarted.ledger().map((e) => e.status)).toEqual(['PAID', 'CANCELLED', 'PENDING']);
  });

  it('keeps a reversal (POST /__sandbox/reverse, a test control) across a restart, with its refund undone', async () => {
    const stateFile = join(tempDir(), 'ledger.json');
    const { sandbox, caller } = await start(stateFile);
    const pending = await create(caller);
    const cancelled = await create(caller);
    expect(sandbox.settle({ payoutId: cancelled.payoutId }, 'CANCELLED')).toBe(1);
    const refunded = sandbox.balances('M001')['USDT'];
    const reverse = async (body: unknown): Promise<{ status: number; data: unknown }> => {
      const res = await fetch(`${sandbox.url}/__sandbox/reverse`, { method: 'POST', body: JSON.stringify(body) });
      return { status: res.status, data: ((await res.json()) as { data: unknown }).data };
    };
    expect(await reverse({ payoutId: cancelled.payoutId, status: 'PAID' })).toEqual({ status: 200, data: { moved: 1 } });
    // Only a final payout, and only to the other final status.
    expect(await reverse({ payoutId: cancelled.payoutId, status: 'PAID' })).toEqual({ status: 200, data: { moved: 0 } });
    expect(await reverse({ payoutId: pending.payoutId, status: 'CANCELLED' })).toEqual({ status: 200, data: { moved: 0 } });
    expect((await reverse({ payoutId: cancelled.payoutId, status: 'LOST' })).status).toBe(400);
    expect(sandbox.ledger().map((e) => e.status)).toEqual(['PENDING', 'PAID']);
    expect(sandbox.balances('M001')['USDT']).not.toBe(refunded);
    const atAnswer = copyState(stateFile);

    const { sandbox: restarted, caller: again } = await start(atAnswer);
    expect(restarted.ledger()).toEqual(sandbox.ledger());
    expect(restarted.balances('M001')).toEqual(sandbox.balances('M001'));
    const queried = await again.business(QUERY, { merchantReferenceIds: [cancelled.ref] });
    expect((queried.data['payouts'] as { status: string }[]).map((r) => r.status)).toEqual(['PAID']);
  });

  it('makes the creates that wait together durable with one fsync', async () => {
    const { sandbox, caller } = await start(join(tempDir(), 'ledger.json'));
    const created = await Promise.all(Array.from({ length: 64 }, () => create(caller)));
    const stats = sandbox.stats();
    expect(stats.journal.changes).toBe(created.length);
    expect(stats.journal.syncs).toBeGreaterThan(0);
    expect(stats.journal.syncs).toBeLessThan(created.length);
  });

  it('folds the journal into the snapshot on close, and a restart from the snapshot alone has everything', async () => {
    const stateFile = join(tempDir(), 'ledger.json');
    const { sandbox, caller } = await start(stateFile);
    await create(caller);
    await create(caller);
    const before = sandbox.ledger();
    await sandbox.close();
    expect(readFileSync(`${stateFile}.journal`, 'utf8')).toBe('');
    const { sandbox: restarted } = await start(stateFile);
    expect(restarted.ledger()).toEqual(before);
  });

  it('ignores a torn last journal line (a change never answered for)', async () => {
    const stateFile = join(tempDir(), 'ledger.json');
    const { caller } = await start(stateFile);
    const kept = await create(caller);
    const copy = copyState(stateFile);
    writeFileSync(`${copy}.journal`, '{"seq":2,"change":{"kind":"record","payout":{"payou', { flag: 'a' });

    const { sandbox: restarted, caller: again } = await start(copy);
    expect(restarted.ledger().map((e) => e.payoutId)).toEqual([kept.payoutId]);
    // The torn tail is gone from the journal: new changes are readable after it.
    const next = await create(again);
    const { sandbox: third } = await start(copyState(copy));
    expect(third.ledger().map((e) => e.payoutId)).toEqual([kept.payoutId, next.payoutId]);
  });

  it('refuses to start on a damaged line that has changes after it', async () => {
    const stateFile = join(tempDir(), 'ledger.json');
    const { caller } = await start(stateFile);
    await create(caller);
    await create(caller);
    const copy = copyState(stateFile);
    const lines = readFileSync(`${copy}.journal`, 'utf8').split('\n');
    lines[0] = 'garbage';
    writeFileSync(`${copy}.journal`, lines.join('\n'));

    await expect(start(copy)).rejects.toMatchObject({ code: 'SANDBOX_STATE_DAMAGED', message: expect.stringContaining('line 1') });
  });

  it('skips journal lines the snapshot already holds (a crash between writing the snapshot and emptying the journal)', async () => {
    const stateFile = join(tempDir(), 'ledger.json');
    const { sandbox, caller } = await start(stateFile);
    await create(caller);
    await create(caller);
    const journal = readFileSync(`${stateFile}.journal`, 'utf8');
    expect(journal.trim().split('\n')).toHaveLength(2);
    const before = { ledger: sandbox.ledger(), balances: sandbox.balances('M001') };
    await sandbox.close();
    writeFileSync(`${stateFile}.journal`, journal);

    const { sandbox: restarted } = await start(stateFile);
    expect(restarted.ledger()).toEqual(before.ledger);
    expect(restarted.balances('M001')).toEqual(before.balances);
  });

  it('folds the journal into the snapshot, beside the answers, once it holds as many changes as the ledger has payouts', async () => {
    const stateFile = join(tempDir(), 'ledger.json');
    const merchants = [{ merchantCode: 'M001', balances: { USDT: '1000' } }];
    const payout = (i: number): NewPayout => ({
      payoutId: `PO${i}`,
      merchantReferenceId: `REF-${i}`,
      merchantCode: 'M001',
      accountNumber: '1234567890',
      payoutCurrency: 'PHP',
      payoutAmount: '100',
      deductionCurrency: 'USDT',
      deductionAmount: '2.5',
      rate: '56.25',
      totalFee: '0.5',
      feeCurrency: 'USDT',
      createTime: '2026-01-01T12:00:00.000Z',
    });
    const ledger = new Ledger(merchants);
    const file = new LedgerFile(stateFile, ledger, silentLogger, emptyStats(), 4);
    await file.load();
    const journalLines = (): number => readFileSync(`${stateFile}.journal`, 'utf8').split('\n').filter(Boolean).length;
    for (let i = 0; i < 3; i++) {
      ledger.record(payout(i));
      await file.durable();
    }
    expect(journalLines()).toBe(3);
    expect(existsSync(stateFile)).toBe(false);

    ledger.record(payout(3));
    ledger.record(payout(4));
    await file.durable();
    // The answer waited for the journal only: the fold set it aside, every change on disk, and goes on after.
    expect(journalLines()).toBe(0);
    expect(readFileSync(`${stateFile}.journal.folding`, 'utf8').trim().split('\n')).toHaveLength(5);
    // Settled while the snapshot is written: the snapshot holds the payout as of the fold, the journal the change.
    const po4 = ledger.findById('PO4');
    expect(po4 && ledger.complete(po4, 'PAID', '2026-01-01T13:00:00.000Z', null)).toBe(true);
    await file.idle();
    expect(existsSync(`${stateFile}.journal.folding`)).toBe(false);
    const text = readFileSync(stateFile, 'utf8');
    const snapshot = JSON.parse(text) as { payouts: unknown[]; journalSeq: number };
    expect(snapshot.payouts).toHaveLength(5);
    expect(snapshot.journalSeq).toBe(5);
    // A payout a line between the head and the end: the file is written and read a line at a time.
    const lines = text.trimEnd().split('\n');
    expect(lines).toHaveLength(7);
    expect(lines[0]).toMatch(/^\{"journalSeq":5,"balances":.*,"payouts":\[$/);
    expect(lines.slice(1, 6).map((l) => (JSON.parse(l.replace(/,$/, '')) as { entry: { payoutId: string } }).entry.payoutId)).toEqual([
      'PO0',
      'PO1',
      'PO2',
      'PO3',
      'PO4',
    ]);
    expect(lines[6]).toBe(']}');
    expect((JSON.parse(lines[5] as string) as { entry: { status: string } }).entry.status).toBe('PENDING');

    ledger.setBalance('M001', 'USDC', '20');
    await file.durable();
    expect(journalLines()).toBe(2);

    const again = new Ledger(merchants);
    const reread = new LedgerFile(stateFile, again, silentLogger, emptyStats());
    await reread.load();
    expect(again.entries()).toEqual(ledger.entries());
    expect(again.balanceSnapshot('M001')).toEqual({ USDT: '987.5', USDC: '20' });
    await reread.close();
    await file.close();
  });

  it('a fold cut short (the journal set aside, the snapshot not yet replaced) loses nothing', async () => {
    const stateFile = join(tempDir(), 'ledger.json');
    const { sandbox, caller } = await start(stateFile);
    for (let i = 0; i < 3; i++) await create(caller);
    await sandbox.close();
    // The snapshot now holds the three creates; a fold that was under way left the changes after them in a
    // set-aside journal, and new changes in the journal.
    const journal = readFileSync(`${stateFile}.journal`, 'utf8');
    expect(journal).toBe('');
    const line = (seq: number, change: object): string => `${JSON.stringify({ seq, change })}\n`;
    writeFileSync(`${stateFile}.journal.folding`, line(4, { kind: 'balance', merchantCode: 'M001', currency: 'USDC', amount: '40' }));
    writeFileSync(`${stateFile}.journal`, line(5, { kind: 'balance', merchantCode: 'M001', currency: 'USDC', amount: '41' }));
    const { sandbox: restarted } = await start(stateFile);
    expect(restarted.ledger()).toHaveLength(3);
    expect(restarted.balances('M001')['USDC']).toBe('41');
    // The start folded both into the snapshot.
    expect(existsSync(`${stateFile}.journal.folding`)).toBe(false);
    expect(readFileSync(`${stateFile}.journal`, 'utf8')).toBe('');
    expect((JSON.parse(readFileSync(stateFile, 'utf8')) as { journalSeq: number }).journalSeq).toBe(5);
  });

  it('loads a snapshot written by hand in any JSON layout, and names the line of a damaged one', async () => {
    const stateFile = join(tempDir(), 'ledger.json');
    const { sandbox, caller } = await start(stateFile);
    await create(caller);
    await create(caller);
    const before = { ledger: sandbox.ledger(), balances: sandbox.balances('M001') };
    await sandbox.close();
    const written = readFileSync(stateFile, 'utf8');

    writeFileSync(stateFile, JSON.stringify(JSON.parse(written), null, 2));
    const { sandbox: fromPretty } = await start(stateFile);
    expect(fromPretty.ledger()).toEqual(before.ledger);
    expect(fromPretty.balances('M001')).toEqual(before.balances);
    await fromPretty.close();

    const lines = readFileSync(stateFile, 'utf8').trimEnd().split('\n');
    expect(lines).toHaveLength(4);
    writeFileSync(stateFile, [lines[0], lines[1], '{"entry":', lines[3]].join('\n'));
    await expect(start(stateFile)).rejects.toMatchObject({ code: 'SANDBOX_STATE_DAMAGED', message: expect.stringContaining('line 3') });
    writeFileSync(stateFile, [lines[0], lines[1]].join('\n'));
    await expect(start(stateFile)).rejects.toMatchObject({
      code: 'SANDBOX_STATE_DAMAGED',
      message: expect.stringContaining('ends before'),
    });
  });
});
