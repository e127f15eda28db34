/**
 * Answers the spec leaves open (its 2.6 and 4.5: "not shown"), sent by a real sandbox through a proxy that
 * rewrites them, or by a sandbox set to answer in another shape: an answer payoutd cannot read is never taken
 * to mean "no such payout", so a reference the service holds is never created again.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ENDPOINTS, PayoutApiClient } from '../../src/api/index.js';
import { payoutQueryShapeSchema } from '../../src/domain/wire-shapes.js';
import { canonicalStringify, parseLossless } from '../../src/json/index.js';
import { SettlementPoller, nextPollDelay } from '../../src/poll/index.js';
import { PayoutSubmitter } from '../../src/submit/index.js';
import { startMitm, type Mitm } from '../api/mitm.js';
import { CREATE_PATH, QUERY_PATH, closePipelines, linesContaining, payoutRequest, startPipeline, type Pipeline } from './harness.js';

let mitm: Mitm | null = null;
afterEach(async () => {
  await closePipelines();
  await mitm?.close();
  mitm = null;
});

/** A submitter of the pipeline's database whose client reaches the sandbox through the rewriting proxy. */
async function throughProxy(p: Pipeline): Promise<{ submitter: PayoutSubmitter; mitm: Mitm }> {
  mitm = await startMitm(p.sandbox.url);
  const client = new PayoutApiClient({ ...p.clientOptions, baseUrl: mitm.url });
  const submitter = new PayoutSubmitter(
    { db: p.db, service: client, clock: p.clock, monotonic: p.monotonic, logger: p.logger, holds: p.holds, random: () => 0.5 },
    p.submitterOptions,
  );
  return { submitter, mitm };
}

/** A poller of the pipeline's database whose client reaches the sandbox through the rewriting proxy. */
async function pollerThroughProxy(p: Pipeline): Promise<{ poller: SettlementPoller; mitm: Mitm }> {
  mitm = await startMitm(p.sandbox.url);
  const client = new PayoutApiClient({ ...p.clientOptions, baseUrl: mitm.url });
  return { poller: new SettlementPoller({ db: p.db, service: client, clock: p.clock, logger: p.logger }, p.pollerOptions), mitm };
}

type Envelope = { code: string; msg: string; data: { payouts: unknown[] } };
type Json = Record<string, unknown>;

/** Rewrites the records of every query answer: `change` returns the record to send instead, or null to leave it out. */
function rewriteRecords(proxy: Mitm, change: (record: Json) => Json | null): void {
  proxy.rewriteAnswer = (path, text) => {
    if (path !== QUERY_PATH) return text;
    const env = parseLossless(text) as Envelope;
    const payouts = (env.data.payouts as Json[]).map(change).filter((r) => r !== null);
    return canonicalStringify({ code: env.code, msg: env.msg, data: { ...env.data, payouts } });
  };
}

/** The record as sent, with `fields` changed (undefined: left out). */
function withFields(record: Json, fields: Json): Json {
  const out: Json = { ...record, ...fields };
  for (const [k, v] of Object.entries(fields)) if (v === undefined) delete out[k];
  return out;
}

/** Rows made UNKNOWN with their payouts on the service: every create's answer dropped, every query answer unreadable. */
async function unknownRows(p: Pipeline, through: { submitter: PayoutSubmitter; mitm: Mitm }, refs: string[]): Promise<string> {
  p.sandbox.setFaults({ commitThenDropRate: 1, endpoints: [CREATE_PATH] });
  through.mitm.rewriteAnswer = (path, text) => (path === QUERY_PATH ? 'not an answer' : text);
  const batchId = await p.insertReadyBatch(refs.map((r) => payoutRequest(r)));
  await through.submitter.runOnce(p.signal);
  p.sandbox.setFaults({ commitThenDropRate: 0 });
  expect(await p.states(batchId)).toEqual(refs.map(() => 'UNKNOWN'));
  for (const ref of refs) expect(p.ledgerCount(ref)).toBe(1);
  // Past the backoff of the failed reference queries.
  p.clock.advance(120_000);
  return batchId;
}

describe('a query answer payoutd cannot read', () => {
  for (const [shape, data] of [
    ['data the list of records itself', (d: Envelope['data']) => d.payouts],
    ['data empty', () => ({})],
    ['data null', () => null],
    ['payouts not a list', (d: Envelope['data']) => ({ payouts: d.payouts[0] ?? {} })],
  ] as const) {
    it(`(${shape}) leaves the row UNKNOWN; the reference is never created again`, async () => {
      const p = await startPipeline({ sandbox: { duplicatePolicy: 'allow' }, submitter: { notFoundGraceMs: 5000 } });
      const { submitter, mitm } = await throughProxy(p);
      mitm.rewriteAnswer = (path, text) => {
        if (path !== QUERY_PATH) return text;
        const env = parseLossless(text) as Envelope;
        return canonicalStringify({ code: env.code, msg: env.msg, data: data(env.data) });
      };
      p.sandbox.setFaults({ commitThenDropRate: 1, endpoints: [CREATE_PATH] });
      const batchId = await p.insertReadyBatch([payoutRequest('QS-1')]);
      await submitter.runOnce(p.signal);
      p.sandbox.setFaults({ commitThenDropRate: 0 });
      for (let i = 0; i < 3; i++) {
        p.clock.advance(10_000);
        await submitter.runOnce(p.signal);
      }
      expect(p.ledgerCount('QS-1'), 'payouts the service holds for QS-1').toBe(1);
      expect(await p.states(batchId)).toEqual(['UNKNOWN']);
      expect(await p.events('QS-1')).not.toContain('reconciled-absent');
      // Once the service answers as agreed, the row is adopted.
      mitm.rewriteAnswer = null;
      p.clock.advance(120_000);
      await submitter.runOnce(p.signal);
      expect(await p.states(batchId)).toEqual(['PENDING']);
      expect(p.ledgerCount('QS-1')).toBe(1);
    });
  }
});

describe('a query answer whose list is under another field (api.payoutQuery.listField)', () => {
  /** A batch of one row sent once, its create taken by the service and its answer lost. */
  async function lostCreate(p: Pipeline, ref: string): Promise<string> {
    p.sandbox.setFaults({ commitThenDropRate: 1, endpoints: [CREATE_PATH] });
    const batchId = await p.insertReadyBatch([payoutRequest(ref)]);
    await p.submitter.runOnce(p.signal);
    p.sandbox.setFaults({ commitThenDropRate: 0 });
    return batchId;
  }

  it("set to the service's: the lost create is found by reference, followed by payoutId and recorded PAID", async () => {
    const shape = { payoutIdsField: 'ids', listField: 'records' };
    const p = await startPipeline({ sandbox: { payoutQuery: shape }, client: { payoutQuery: payoutQueryShapeSchema.parse(shape) } });
    const batchId = await lostCreate(p, 'LF-1');
    expect(await p.events('LF-1')).toEqual(['intent', 'create-unknown', 'reconciled-found']);
    expect(await p.states(batchId)).toEqual(['PENDING']);
    p.sandbox.settle({ merchantReferenceId: 'LF-1' }, 'PAID');
    p.clock.advance(60_000);
    await p.poller.runPass(p.signal);
    expect(await p.states(batchId)).toEqual(['PAID']);
    expect(p.ledgerCount('LF-1')).toBe(1);
  });

  it('left at the default: never "no payouts": the row stays UNKNOWN, is never created again, and the log names the setting', async () => {
    const p = await startPipeline({
      sandbox: { payoutQuery: { listField: 'records' }, duplicatePolicy: 'allow' },
      submitter: { notFoundGraceMs: 5000 },
    });
    const lost = await lostCreate(p, 'LF-2');
    expect(await p.states(lost)).toEqual(['UNKNOWN']);
    const sent = await p.insertReadyBatch([payoutRequest('LF-3')]);
    for (let i = 0; i < 3; i++) {
      p.clock.advance(120_000);
      await p.submitter.runOnce(p.signal);
    }
    expect(p.ledgerCount('LF-2'), 'payouts the service holds for LF-2').toBe(1);
    expect(await p.states(lost)).toEqual(['UNKNOWN']);
    expect(await p.events('LF-2')).not.toContain('reconciled-absent');
    const said = 'field payouts (api.payoutQuery.listField) is missing or not a list';
    expect(linesContaining(p.logLines, 'could not resolve unknown creates yet').join()).toContain(said);

    // A payout that settled stays PENDING until its answer can be read.
    p.sandbox.settle({ merchantReferenceId: 'LF-3' }, 'PAID');
    await p.poller.runPass(p.signal);
    expect(await p.states(sent)).toEqual(['PENDING']);
    expect(linesContaining(p.logLines, 'payout query failed; will retry').join()).toContain(said);
  });
});

describe('a query answer with one record payoutd cannot read', () => {
  it('the poller records the other payouts; the one in a status it does not know stays PENDING, warned once per status', async () => {
    const p = await startPipeline();
    const { poller, mitm } = await pollerThroughProxy(p);
    const batchId = await p.insertReadyBatch(['UR-1', 'UR-2', 'UR-3'].map((r) => payoutRequest(r)));
    await p.submitter.runOnce(p.signal);
    p.sandbox.settle({ merchantReferenceId: 'UR-1' }, 'PAID');
    p.sandbox.settle({ merchantReferenceId: 'UR-3' }, 'PAID');
    rewriteRecords(mitm, (r) =>
      r.merchantReferenceId === 'UR-2'
        ? withFields(r, { status: 'PROCESSING' })
        : r.merchantReferenceId === 'UR-3'
          ? withFields(r, { deductionAmount: undefined })
          : r,
    );
    p.clock.advance(p.submitterOptions.firstPollDelayMs);
    await poller.runPass(p.signal);
    expect(await p.states(batchId)).toEqual(['PAID', 'PENDING', 'PENDING']);
    const ur2 = await p.row('UR-2');
    expect(ur2).toMatchObject({ serviceStatus: 'PROCESSING', pollCount: 1 });
    // Asked again on its own schedule, like any PENDING payout.
    expect(ur2.nextPollAt).toBe(p.clock.now() + nextPollDelay(1, p.pollerOptions));
    // Said PAID but without its deducted amount: not recorded as paid until it can be read.
    expect(await p.row('UR-3')).toMatchObject({ state: 'PENDING', serviceStatus: 'PAID', completeTime: null });
    const warned = (payoutId: string | null): string[] =>
      linesContaining(p.logLines, 'cannot read; still following it as PENDING').filter((l) => l.includes(String(payoutId)));
    expect(warned(ur2.payoutId)).toHaveLength(1);
    expect(warned(ur2.payoutId)[0]).toContain('"status":"PROCESSING"');
    expect(warned(ur2.payoutId)[0]).toContain('"merchantReferenceId":"UR-2"');
    expect(warned((await p.row('UR-3')).payoutId)[0]).toContain('deductionAmount');

    // The same status again: no second warning. Once it can be read, it settles.
    p.clock.advance(60_000);
    await poller.runPass(p.signal);
    expect(warned(ur2.payoutId)).toHaveLength(1);
    expect((await p.row('UR-2')).pollCount).toBe(2);
    mitm.rewriteAnswer = null;
    p.sandbox.settle({ merchantReferenceId: 'UR-2' }, 'PAID');
    p.clock.advance(60_000);
    await poller.runPass(p.signal);
    expect(await p.states(batchId)).toEqual(['PAID', 'PAID', 'PAID']);
    expect((await p.row('UR-3')).completeTime).not.toBeNull();
  });

  it('a record naming no payout: the payouts it may be are polled on their backoff, and it is warned of once', async () => {
    const p = await startPipeline();
    const { poller, mitm } = await pollerThroughProxy(p);
    const batchId = await p.insertReadyBatch(['NP-1', 'NP-2'].map((r) => payoutRequest(r)));
    await p.submitter.runOnce(p.signal);
    p.sandbox.settle({ merchantReferenceId: 'NP-1' }, 'PAID');
    rewriteRecords(mitm, (r) =>
      r.merchantReferenceId === 'NP-2' ? withFields(r, { payoutId: undefined, merchantReferenceId: undefined }) : r,
    );
    p.clock.advance(p.submitterOptions.firstPollDelayMs);
    const nextPolls: number[] = [];
    for (let n = 1; n <= 4; n++) {
      await poller.runPass(p.signal);
      const row = await p.row('NP-2');
      // Counted as polled, and asked again after the backoff its count gives, not at the minimum interval each time.
      expect(row).toMatchObject({ state: 'PENDING', pollCount: n });
      expect(row.nextPollAt).toBe(p.clock.now() + nextPollDelay(n, p.pollerOptions));
      nextPolls.push((row.nextPollAt as number) - p.clock.now());
      p.clock.advance((row.nextPollAt as number) - p.clock.now());
    }
    expect(nextPolls[3]).toBeGreaterThan(nextPolls[0] as number);
    expect(await p.states(batchId)).toEqual(['PAID', 'PENDING']);
    expect(linesContaining(p.logLines, 'a record of a payout query cannot be read')).toHaveLength(1);
  });

  it('reconciliation adopts a payout in a status it does not know; a nameless record lets no reference be taken as absent', async () => {
    const p = await startPipeline({ sandbox: { duplicatePolicy: 'allow' }, submitter: { notFoundGraceMs: 0 } });
    const { submitter, mitm } = await throughProxy(p);
    const batchId = await unknownRows(p, { submitter, mitm }, ['UQ-1', 'UQ-2', 'UQ-3', 'UQ-4']);
    // UQ-1 in a status spec 3 does not name, UQ-2 readable, UQ-3 naming no payout, UQ-4 left out (absent, were it alone).
    rewriteRecords(mitm, (r) => {
      if (r.merchantReferenceId === 'UQ-1') return withFields(r, { status: 'PROCESSING' });
      if (r.merchantReferenceId === 'UQ-3') return withFields(r, { payoutId: undefined, merchantReferenceId: undefined });
      return r.merchantReferenceId === 'UQ-4' ? null : r;
    });
    await submitter.runOnce(p.signal);
    expect(await p.states(batchId)).toEqual(['PENDING', 'PENDING', 'UNKNOWN', 'UNKNOWN']);
    const uq1 = await p.row('UQ-1');
    expect(uq1.payoutId).toBe(p.sandbox.ledger().find((e) => e.merchantReferenceId === 'UQ-1')?.payoutId);
    expect(uq1.serviceStatus).toBe('PROCESSING');
    expect(await p.events('UQ-4')).not.toContain('reconciled-absent');
    expect(linesContaining(p.logLines, 'whose record payoutd cannot read').join()).toContain('"status":"PROCESSING"');
    expect(linesContaining(p.logLines, 'no reference of its answer is taken as absent')).toHaveLength(1);
    for (const ref of ['UQ-1', 'UQ-2', 'UQ-3', 'UQ-4']) expect(p.ledgerCount(ref), ref).toBe(1);

    // Without the nameless record, UQ-3 is adopted and UQ-4 is absent as far as the service says: created again.
    mitm.rewriteAnswer = null;
    p.clock.advance(120_000);
    await submitter.runOnce(p.signal);
    expect(await p.states(batchId)).toEqual(['PENDING', 'PENDING', 'PENDING', 'PENDING']);
    expect(p.ledgerCount('UQ-3')).toBe(1);
  });
});

describe('a record field set to another field the service fills (api.payoutQuery.recordFields)', () => {
  /** The service's records carry its own reference number beside ours, as many services' do. */
  const withServiceNumber = (r: Json): Json => ({ ...r, referenceNo: `SVC-${String(r.payoutId)}` });

  it("merchantReferenceId read from the service's own number: a lost create is never created again, and the log names the setting", async () => {
    const shape = payoutQueryShapeSchema.parse({ recordFields: { merchantReferenceId: 'referenceNo' } });
    const p = await startPipeline({
      sandbox: { duplicatePolicy: 'allow' },
      submitter: { notFoundGraceMs: 5000 },
      client: { payoutQuery: shape },
    });
    const through = await throughProxy(p);
    const batchId = await unknownRows(p, through, ['WF-1']);
    rewriteRecords(through.mitm, withServiceNumber);
    // Past the grace already: once read as absent, a pass would create it again.
    await through.submitter.runOnce(p.signal);
    p.clock.advance(120_000);
    await through.submitter.runOnce(p.signal);
    expect(await p.states(batchId)).toEqual(['UNKNOWN']);
    expect(await p.events('WF-1')).not.toContain('reconciled-absent');
    expect(p.ledgerCount('WF-1'), 'payouts the service holds for WF-1').toBe(1);
    const said = linesContaining(p.logLines, 'api.payoutQuery.recordFields.merchantReferenceId names another field');
    expect(said.length).toBeGreaterThan(0);
    expect(said[0]).toContain('"level":"error"');
    expect(said[0]).toContain('"field":"referenceNo"');
  });

  it('payoutId read from the service\'s own number: the poller keeps following the payout, never "not known to the service"', async () => {
    const shape = payoutQueryShapeSchema.parse({ recordFields: { payoutId: 'referenceNo' } });
    const p = await startPipeline({ client: { payoutQuery: shape } });
    const { poller, mitm } = await pollerThroughProxy(p);
    rewriteRecords(mitm, withServiceNumber);
    const batchId = await p.insertReadyBatch([payoutRequest('WP-1')]);
    await p.submitter.runOnce(p.signal);
    p.sandbox.settle({ merchantReferenceId: 'WP-1' }, 'PAID');
    p.clock.advance(p.submitterOptions.firstPollDelayMs);
    await poller.runPass(p.signal);
    expect(await p.states(batchId)).toEqual(['PENDING']);
    expect(await p.events('WP-1')).not.toContain('polled');
    expect(linesContaining(p.logLines, 'does not know a payout it created')).toEqual([]);
    expect(linesContaining(p.logLines, 'api.payoutQuery.recordFields.payoutId names another field').join()).toContain('"level":"error"');
  });
});

describe('numbers with large exponents in service answers', () => {
  // A BigDecimal zero at scale 101 is written 0E-101 by its toString: a genuine value, written out as before.
  /** `text` with the fee of `ref`'s record (keys sorted: totalFee after merchantReferenceId) written `lexeme`. */
  const withFee = (text: string, ref: string, lexeme: string): string =>
    text.replace(new RegExp(`("merchantReferenceId":"${ref}"[^}]*?"totalFee":)[^,}]+`), `$1${lexeme}`);

  it('a query answer: a fee 0E-101 is read; a fee beyond any exponent leaves only its own record unread', async () => {
    const p = await startPipeline();
    const { poller, mitm } = await pollerThroughProxy(p);
    const refs = ['EX-1', 'EX-2', 'EX-3'];
    const batchId = await p.insertReadyBatch(refs.map((r) => payoutRequest(r)));
    await p.submitter.runOnce(p.signal);
    for (const ref of refs) p.sandbox.settle({ merchantReferenceId: ref }, 'PAID');
    mitm.rewriteAnswer = (path, text) => (path === QUERY_PATH ? withFee(withFee(text, 'EX-2', '0E-101'), 'EX-3', '1E-10001') : text);
    p.clock.advance(p.submitterOptions.firstPollDelayMs);
    await poller.runPass(p.signal);
    expect(await p.states(batchId)).toEqual(['PAID', 'PAID', 'PENDING']);
    expect((await p.row('EX-2')).totalFee).toBe('0');
    const unread = linesContaining(p.logLines, 'cannot read; still following it as PENDING');
    expect(unread.join()).toContain('field totalFee (api.payoutQuery.recordFields.totalFee) is a number payoutd cannot write out');
  });

  it('a create answer with a fee 0E-101 is read: the payout is followed, never left UNKNOWN', async () => {
    const p = await startPipeline({ submitter: { notFoundGraceMs: 0 } });
    const { submitter, mitm } = await throughProxy(p);
    mitm.rewriteAnswer = (path, text) => (path === CREATE_PATH ? withFee(text, 'EX-2', '0E-101') : text);
    const batchId = await p.insertReadyBatch(['EX-1', 'EX-2'].map((r) => payoutRequest(r)));
    await submitter.runOnce(p.signal);
    expect(await p.states(batchId)).toEqual(['PENDING', 'PENDING']);
    expect(await p.events('EX-2')).toEqual(['intent', 'created']);
    expect(p.ledgerCount('EX-2')).toBe(1);
  });
});

describe('a query answer cut short (paged or capped by the service)', () => {
  /** References each forwarded query asked about, in order. */
  const queried = (proxy: Mitm): string[][] =>
    proxy.forwarded
      .filter((f) => f.url === QUERY_PATH)
      .map((f) => (JSON.parse(f.body.toString('utf8')) as { merchantReferenceIds: string[] }).merchantReferenceIds);

  it('capped without a word: a row whose record fell off the answer is asked about alone, never created again', async () => {
    const p = await startPipeline({ sandbox: { duplicatePolicy: 'allow' }, submitter: { notFoundGraceMs: 60_000 } });
    const through = await throughProxy(p);
    const refs = ['PG-1', 'PG-2', 'PG-3'];
    const batchId = await unknownRows(p, through, refs);
    // At most two records an answer, and nothing in it says so.
    through.mitm.rewriteAnswer = (path, text) => {
      if (path !== QUERY_PATH) return text;
      const env = parseLossless(text) as Envelope;
      return canonicalStringify({ code: env.code, msg: env.msg, data: { payouts: env.data.payouts.slice(0, 2) } });
    };
    through.mitm.forwarded.length = 0;
    p.clock.advance(60_000);
    await through.submitter.runOnce(p.signal);
    for (const ref of refs) expect(p.ledgerCount(ref), ref).toBe(1);
    expect(await p.states(batchId)).toEqual(['PENDING', 'PENDING', 'PENDING']);
    expect(await p.events('PG-3')).not.toContain('reconciled-absent');
    expect(queried(through.mitm)).toEqual([refs, ['PG-3']]);
  });

  it('saying it is partial: a reference missing even from the answer about it alone is not taken as absent', async () => {
    const p = await startPipeline({ sandbox: { duplicatePolicy: 'allow' }, submitter: { notFoundGraceMs: 60_000 } });
    const through = await throughProxy(p);
    const refs = ['PH-1', 'PH-2'];
    const batchId = await unknownRows(p, through, refs);
    // PH-2's record is left out of every answer, which says there is more (hasMore) or how many there are (total).
    let hint: Json = { hasMore: true };
    through.mitm.rewriteAnswer = (path, text) => {
      if (path !== QUERY_PATH) return text;
      const env = parseLossless(text) as Envelope;
      const payouts = (env.data.payouts as Json[]).filter((r) => r.merchantReferenceId !== 'PH-2');
      return canonicalStringify({ code: env.code, msg: env.msg, data: { payouts, ...hint } });
    };
    p.clock.advance(60_000);
    await through.submitter.runOnce(p.signal);
    expect(await p.states(batchId)).toEqual(['PENDING', 'UNKNOWN']);
    hint = { total: parseLossless('1') };
    p.clock.advance(120_000);
    await through.submitter.runOnce(p.signal);
    expect(await p.states(batchId)).toEqual(['PENDING', 'UNKNOWN']);
    expect(await p.events('PH-2')).not.toContain('reconciled-absent');
    expect(p.ledgerCount('PH-2')).toBe(1);
    expect(linesContaining(p.logLines, 'holds only part of what it found')).toHaveLength(1);
    // Whole again: the payout is found and followed.
    through.mitm.rewriteAnswer = null;
    p.clock.advance(120_000);
    await through.submitter.runOnce(p.signal);
    expect(await p.states(batchId)).toEqual(['PENDING', 'PENDING']);
    expect(p.ledgerCount('PH-2')).toBe(1);
  });

  it('a reference truly absent is created again once an answer about it alone, whole, lacks it', async () => {
    const p = await startPipeline({ submitter: { notFoundGraceMs: 60_000 } });
    const through = await throughProxy(p);
    // A 500 to a create leaves its outcome unknown; here nothing was created.
    p.sandbox.setFaults({ errorRate: 1, endpoints: [CREATE_PATH] });
    const batchId = await p.insertReadyBatch(['PA-1', 'PA-2'].map((r) => payoutRequest(r)));
    await through.submitter.runOnce(p.signal);
    p.sandbox.setFaults({ errorRate: 0 });
    expect(await p.states(batchId)).toEqual(['UNKNOWN', 'UNKNOWN']);
    through.mitm.forwarded.length = 0;
    p.clock.advance(120_000);
    await through.submitter.runOnce(p.signal);
    expect(queried(through.mitm).slice(0, 3)).toEqual([['PA-1', 'PA-2'], ['PA-1'], ['PA-2']]);
    expect(await p.events('PA-1')).toContain('reconciled-absent');
    expect(await p.states(batchId)).toEqual(['PENDING', 'PENDING']);
    for (const ref of ['PA-1', 'PA-2']) expect(p.ledgerCount(ref), ref).toBe(1);
  });
});

describe('a token answer payoutd cannot use', () => {
  // An unusable secret is found only when a call is signed: those credentials stay until renewed, so no later create here.
  for (const [what, change, says, later] of [
    ['without secretKey', { secretKey: undefined }, 'secretKey', true],
    ['without accessTokenExpiresIn', { accessTokenExpiresIn: undefined }, 'accessTokenExpiresIn', true],
    ['with an empty secretKey (no HMAC key)', { secretKey: '' }, 'HMAC secret is empty', false],
  ] as const) {
    it(`(${what}) leaves the create not sent: the row is READY again, never UNKNOWN`, async () => {
      const p = await startPipeline();
      const { submitter, mitm } = await throughProxy(p);
      mitm.rewriteAnswer = (path, text) => {
        if (path !== ENDPOINTS.accessToken) return text;
        const env = parseLossless(text) as { code: string; msg: string; data: Json };
        return canonicalStringify({ ...env, data: withFields(env.data, change) });
      };
      const batchId = await p.insertReadyBatch([payoutRequest('TK-1')]);
      const before = p.clock.now();
      await submitter.runOnce(p.signal);
      expect(p.createRequests(), 'creates that reached the service').toBe(0);
      expect(await p.states(batchId)).toEqual(['READY']);
      expect(await p.events('TK-1')).toEqual(['intent', 'not-sent']);
      const row = await p.row('TK-1');
      // No attempt charged; tried again after the backoff of a row not sent.
      expect(row.createAttempts).toBe(0);
      expect(row.nextAttemptAt).toBeGreaterThan(before);
      const said = linesContaining(p.logLines, 'create not sent; the row is READY again');
      expect(said).toHaveLength(1);
      expect(said[0]).toContain(says);
      if (!later) return;

      mitm.rewriteAnswer = null;
      p.clock.advance(60_000);
      await submitter.runOnce(p.signal);
      expect(await p.states(batchId)).toEqual(['PENDING']);
      expect(p.ledgerCount('TK-1')).toBe(1);
    });
  }
});
