/**
 * The approval gate at acceptance, and the end of a wait that ran out. When
 * a batch has been read, the gate adds up what it pays, counts what the last
 * 24 hours paid, and decides under the policy: let go, wait for approval
 * (held AWAITING_APPROVAL, nothing sent), or refused for a limit. A batch
 * still waiting after `approval.expiresAfter` ends NOT_SUBMITTED.
 */
import type { BatchHold } from '../domain/holds.js';
import { compareAmounts } from '../domain/money.js';
import type { ReadyMoney } from '../domain/ready-money.js';
import { holdForApproval } from '../holds/index.js';
import { endUnpaid, listExpiredApprovals, readyMoneyOf, updateBatch, withBatchForDecision, type BatchRecord } from '../store/index.js';
import { endExpiredWait, rollingTotalReader, shownRound, uploaderKnown, waitRanOut, type ApprovalDeps } from './decide.js';
import { assess, awaitingApprovalText, emptyFigures, type BatchFigures } from './policy.js';

/** What the gate made of a batch being accepted. */
export type GateVerdict = { kind: 'release' } | { kind: 'hold'; hold: BatchHold } | { kind: 'refuse'; code: string; reason: string };

/** The batch's figures from its READY rows' money: the request's own values, for what is sent is what counts (a cell written 1000.00 is sent as 1000). */
function figuresOfMoney(money: ReadyMoney): BatchFigures {
  const f = { ...emptyFigures(), totals: money.payoutTotals() };
  for (const pair of money.entries()) {
    f.rows += pair.rows;
    const largest = f.largest[pair.payoutCurrency];
    if (largest === undefined || compareAmounts(pair.largest, largest) > 0) f.largest[pair.payoutCurrency] = pair.largest;
  }
  return f;
}

/**
 * Decides on a batch read whole and about to be accepted (still VALIDATING, so nothing of it can be sent);
 * `ready`, its READY rows' money when the caller has added it up.
 */
export async function approvalAtAcceptance(deps: ApprovalDeps, batch: BatchRecord, ready?: ReadyMoney | null): Promise<GateVerdict> {
  const figures = figuresOfMoney(ready ?? (await readyMoneyOf(deps.db, batch.id)));
  const rolling24h = await rollingTotalReader(deps);
  return withBatchForDecision(deps.db, batch.id, async (trx) => {
    const now = deps.clock.now();
    const rolling = await rolling24h(trx, batch.id, now);
    const a = assess(figures, deps.policy, rolling);
    const figuresJson = JSON.stringify(figures);
    if (a.kind === 'release') {
      await updateBatch(trx, batch.id, { approvalState: 'NONE', approvalFiguresJson: figuresJson, releasedAt: now }, now);
      return { kind: 'release' };
    }
    if (a.kind === 'refuse') {
      const reason = `over a limit: ${a.reasons.map((r) => r.text).join('; ')}; limits.onExceeded is refuse, so no row of this file is paid`;
      await updateBatch(trx, batch.id, { approvalFiguresJson: figuresJson, approvalReasonsJson: JSON.stringify(a.reasons) }, now);
      await endUnpaid(trx, batch.id, { approvalState: 'REFUSED', code: 'LIMIT_EXCEEDED', reason }, now);
      return { kind: 'refuse', code: 'LIMIT_EXCEEDED', reason };
    }
    const needed = deps.policy.approval.approvals;
    const expiresAt = now + deps.policy.approval.expiresAfter;
    const reason = awaitingApprovalText({
      id: batch.id,
      sha256: batch.sha256,
      figures,
      reasons: a.reasons,
      needed,
      expiresAt,
      uploaderKnown: uploaderKnown(batch),
      round: shownRound(batch),
    });
    await updateBatch(
      trx,
      batch.id,
      {
        approvalState: 'REQUIRED',
        approvalsNeeded: needed,
        approvalReasonsJson: JSON.stringify(a.reasons),
        approvalFiguresJson: figuresJson,
        approvalExpiresAt: expiresAt,
      },
      now,
    );
    const hold = await holdForApproval(trx, batch.id, reason, now);
    return { kind: 'hold', hold };
  });
}

/** Batches whose wait for approval ran out end NOT_SUBMITTED (once, whichever instance sees it first). */
export async function expireDueApprovals(deps: ApprovalDeps): Promise<string[]> {
  const ended: string[] = [];
  for (const id of await listExpiredApprovals(deps.db, deps.clock.now())) {
    const done = await withBatchForDecision(deps.db, id, async (trx, b) => {
      const now = deps.clock.now();
      if (!b || !waitRanOut(b, now)) return false;
      await endExpiredWait(deps, trx, b, now);
      return true;
    });
    if (done) {
      ended.push(id);
      deps.logger?.warn({ batchId: id }, 'batch not approved in time (approval.expiresAfter): it ends NOT_SUBMITTED');
    }
  }
  return ended;
}
