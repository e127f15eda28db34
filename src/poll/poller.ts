/**
 * SettlementPoller: follows PENDING payouts to PAID or CANCELLED by querying them in chunks, each payout on its
 * own backoff, up to `concurrency` calls on the wire, answers recorded together. While creates are sent, due
 * polls wait (within a bound); a mostly settled answer makes the rest of its batch due. The query is the source
 * of truth (spec 1.6); webhooks only make a payout due sooner, or a check of a row they contradicted owed (asked
 * first in each pass: ./checks.ts). A payout pending too long is flagged, never dropped.
 */
import { setImmediate as afterPendingIo } from 'node:timers/promises';
import type { Logger } from 'pino';
import { isApiError } from '../api/errors.js';
import type { Clock } from '../domain/clock.js';
import { requestOfText } from '../domain/request-values.js';
import { REFERENCE_TAKEN_WHILE_CHECKED_NOTE } from '../domain/service-check.js';
import {
  isPayoutOf,
  payoutDifferences,
  payoutDiffersReason,
  type PayoutQueryAnswer,
  type PayoutService,
  type UnreadRecord,
} from '../domain/payout.js';
import {
  type Database,
  flagStale,
  listDueForPoll,
  listStalePending,
  nextPollDue,
  nextServiceCheckDue,
  pollBatchNow,
  reschedulePolls,
  type PayoutRowPatch,
  type PollCursor,
  type PollTarget,
  claimDueRows,
  countRowsInState,
  recordAnswers,
  type RowMove,
} from '../store/index.js';
import {
  logPayoutDiffers,
  logReferenceTaken,
  MoveReports,
  referenceTaken,
  settledDifferingPatch,
  settledPatch,
} from '../submit/outcome.js';
import { ServiceChecks } from './checks.js';
import { CallRate, nextPollDelay, pollIntervalBound, pollIsRecorded, type PollLoad } from './schedule.js';

export interface PollerOptions {
  /** Ids per query call (the contract's max). */
  queryMaxIds: number;
  /** Query calls on the wire at once. */
  concurrency: number;
  /** Queries per pass at most (bounds one pass; the rest wait for the next). */
  maxCallsPerPass: number;
  /** Poll interval after the first poll; doubles per poll up to maxIntervalMs. */
  minIntervalMs: number;
  maxIntervalMs: number;
  /** A payout PENDING longer than this is flagged. */
  staleAfterMs: number;
  /** While `sending()` says creates are out, a due payout waits up to this long past its due time. */
  deferWhileSendingMs: number;
  /** Most of an answer settled: ask about the rest of its batch now (at most once per minIntervalMs per batch). */
  settlementSweep?: boolean;
  /** Payouts taken for a query are not due again for this long unless answered (unused when `exclusive`). */
  leaseMs: number;
  /** This process alone uses the database: a claim is a read, rows on the wire kept off the next call in memory. */
  exclusive?: boolean;
}

export interface PollerDeps {
  db: Database;
  service: PayoutService;
  clock: Clock;
  logger: Logger;
  onPolled?: (payouts: number, lagMs: number) => void;
  /** Creates are being sent by this process (they come first; see deferWhileSendingMs). */
  sending?: () => boolean;
}

/** What one pass did. */
export interface PollPass {
  /** Query calls made. */
  calls: number;
  /** Payouts that reached a final status. */
  settled: number;
}

/** What a pass counts as it goes: calls, answers (and when the first and last came), settlements, pending payouts. */
interface PassTally {
  calls: number;
  answered: number;
  settled: number;
  /** PENDING payouts when the pass found work; -1 before. */
  pending: number;
  firstAnswerAt: number | null;
  lastAnswerAt: number | null;
}

/** One query call: the payouts it asks about, and its answer or failure once back. */
interface Flight {
  due: PollTarget[];
  claimedAt: number;
  oldestDue: number;
  answer?: PayoutQueryAnswer;
  /** When the answer came: the time its payouts were seen (one timestamp per call in their history). */
  answeredAt?: number;
  failed?: unknown;
}

/** A claimed row as polling needs it, with the currency and amount it asked for and whether its payout was proven its own (listDueForPoll). */
function pollTargetOf(row: Awaited<ReturnType<typeof claimDueRows>>[number]): PollTarget {
  if (row.requestValues === null) return { ...row, payoutCurrency: null, payoutAmount: null, deductionCurrency: null };
  const { payoutCurrency, payoutAmount, deductionCurrency } = requestOfText(row.requestValues);
  return { ...row, payoutCurrency, payoutAmount, deductionCurrency };
}

/** Keys seen lately, at most `max` of them (the oldest forgotten first): whether a key is new. */
class SeenOnce {
  private readonly seen = new Set<string>();
  constructor(private readonly max: number) {}

  first(key: string): boolean {
    if (this.seen.has(key)) return false;
    if (this.seen.size >= this.max) this.seen.delete(this.seen.values().next().value as string);
    this.seen.add(key);
    return true;
  }
}

export class SettlementPoller {
  private readonly rate = new CallRate();
  /** Rows of the calls on the wire: a claim never sends one of them twice (a call that outlasted its lease). */
  private readonly asking = new Set<number>();
  /** Exclusive claims: the last row taken in this pass (the next claim continues after it). */
  private cursor: PollCursor | null = null;
  private staleCheckedAt = -Infinity;
  /** Batches swept lately: when, and what was asked of them and came back settled since (see settlementSweep). */
  private readonly sweeping = new Map<string, { at: number; asked: number; settled: number }>();
  private pending = { n: 0, countedAt: -Infinity };
  /** Queries webhooks made owed of rows they contradicted (./checks.ts), asked at the start of each pass. */
  private readonly checks: ServiceChecks;
  /** Unreadable records naming no payout already warned of (their reference, status and problem). */
  private readonly namelessWarned = new SeenOnce(1000);

  constructor(
    private readonly deps: PollerDeps,
    private readonly o: PollerOptions,
  ) {
    this.checks = new ServiceChecks(deps, o);
  }

  /** One pass over due payouts; returns how many reached a final status. */
  async runOnce(signal: AbortSignal): Promise<number> {
    return (await this.runPass(signal)).settled;
  }

  /** One pass over due payouts, up to `concurrency` calls at a time and `maxCallsPerPass` in all. */
  async runPass(signal: AbortSignal): Promise<PollPass> {
    const pass: PassTally = { calls: 0, answered: 0, settled: 0, pending: -1, firstAnswerAt: null, lastAnswerAt: null };
    const onWire = new Set<Promise<void>>();
    const back: Flight[] = [];
    let claiming = true;
    this.cursor = null;
    pass.calls += await this.checks.runDue(signal);
    if (this.o.settlementSweep === true) await this.followUpSweeps();
    try {
      for (;;) {
        while (claiming && !signal.aborted && onWire.size < this.o.concurrency && pass.calls < this.o.maxCallsPerPass) {
          const flight = await this.claim();
          if (!flight) {
            claiming = false;
            break;
          }
          // Pending payouts, for the schedule (a settled row leaves them).
          if (pass.pending < 0) pass.pending = await this.pendingNow();
          if (flight.due.length < this.o.queryMaxIds) claiming = false;
          pass.calls++;
          const call: Promise<void> = this.ask(flight, signal).then(() => {
            onWire.delete(call);
            back.push(flight);
            // A failing call stops the pass from starting new ones (the service is in trouble); those out finish.
            if (flight.failed !== undefined) claiming = false;
          });
          onWire.add(call);
        }
        if (back.length > 0) {
          // Answers that came in meanwhile are read first, so they share this commit.
          if (onWire.size > 0) await afterPendingIo();
          const arrived = back.splice(0);
          try {
            await this.record(arrived, pass);
          } finally {
            this.landed(arrived);
          }
          continue;
        }
        if (onWire.size === 0) break;
        await Promise.race(onWire);
      }
    } finally {
      // Never leave calls behind a pass that failed (their rows stay leased and are asked about again).
      await Promise.all(onWire);
      this.landed(back.splice(0));
    }
    if (pass.firstAnswerAt !== null && pass.lastAnswerAt !== null) this.rate.add(pass.answered - 1, pass.lastAnswerAt - pass.firstAnswerAt);
    await this.flagStale();
    return { calls: pass.calls, settled: pass.settled };
  }

  /** When the next PENDING payout or owed check falls due (null: none), so a caller can be there on time rather than at its next tick. */
  async nextDueAt(): Promise<number | null> {
    const due = [await nextPollDue(this.deps.db), await nextServiceCheckDue(this.deps.db)].filter((at): at is number => at !== null);
    return due.length === 0 ? null : Math.min(...due);
  }

  /** The next due payouts, taken in one statement so instances sharing the database never ask about the same payout in a round. */
  private async claim(): Promise<Flight | null> {
    const { db, clock } = this.deps;
    // The service is unreachable: nothing is asked (the submitter makes the breaker's probe); payouts stay due.
    if (this.deps.service.available?.() === false) return null;
    const now = clock.now();
    const oldestDue = await nextPollDue(db);
    if (oldestDue === null || oldestDue > now) return null;
    // Creates first: a payout not yet owed its result waits while a batch is being sent, within a bound.
    if (this.deps.sending?.() === true && oldestDue > now - this.o.deferWhileSendingMs) return null;
    const claimed = this.o.exclusive
      ? await listDueForPoll(db, now, this.o.queryMaxIds, this.cursor)
      : (await claimDueRows(db, 'PENDING', 'next_poll_at', now, this.o.queryMaxIds, this.o.leaseMs, this.asking)).map(pollTargetOf);
    // Only rows already on the wire left (exclusive claims list them too): nothing new is due until their answers come back.
    const due = claimed.filter((r) => !this.asking.has(r.id)).slice(0, this.o.queryMaxIds);
    if (due.length === 0) return null;
    for (const r of due) this.asking.add(r.id);
    const last = claimed[claimed.length - 1];
    if (last) this.cursor = { at: last.nextPollAt ?? now, id: last.id };
    return { due, claimedAt: now, oldestDue };
  }

  /** Sends one query call; never rejects (the outcome is kept on the flight). */
  private async ask(flight: Flight, signal: AbortSignal): Promise<void> {
    try {
      flight.answer = await this.deps.service.queryByPayoutIds(
        flight.due.map((r) => r.payoutId as string),
        signal,
      );
      flight.answeredAt = this.deps.clock.now();
    } catch (err) {
      flight.failed = err;
    }
  }

  /** The rows of these calls are recorded (or given up for this pass): a later claim may take them again. */
  private landed(flights: Flight[]): void {
    for (const f of flights) for (const r of f.due) this.asking.delete(r.id);
  }

  /** Records the calls that came back: answers in one transaction, failed calls rescheduled (only their own payouts). */
  private async record(flights: Flight[], pass: PassTally): Promise<void> {
    const { db, clock, logger } = this.deps;
    const answered: { flight: Flight; answer: PayoutQueryAnswer; at: number }[] = [];
    for (const f of flights) {
      if (f.answer === undefined || f.answeredAt === undefined) {
        const err = f.failed;
        logger.warn(
          { err: isApiError(err) ? err.toLog() : { code: 'UNEXPECTED' }, payouts: f.due.length },
          'payout query failed; will retry',
        );
        await reschedulePolls(
          db,
          f.due.map((r) => r.id),
          clock.now() + this.o.minIntervalMs,
        );
        continue;
      }
      pass.answered++;
      pass.firstAnswerAt = Math.min(pass.firstAnswerAt ?? f.answeredAt, f.answeredAt);
      pass.lastAnswerAt = Math.max(pass.lastAnswerAt ?? f.answeredAt, f.answeredAt);
      answered.push({ flight: f, answer: f.answer, at: f.answeredAt });
      this.deps.onPolled?.(f.due.length, Math.max(0, f.claimedAt - f.oldestDue));
    }
    if (answered.length === 0) return;
    const load: PollLoad = {
      pending: Math.max(0, pass.pending - pass.settled),
      callsPerSecond: this.rate.perSecond(pass.answered - 1, (pass.lastAnswerAt ?? 0) - (pass.firstAnswerAt ?? 0)),
    };
    const reports = new MoveReports();
    const perCall = answered.map((a) => ({ at: a.at, moves: this.movesOf(a.flight.due, a.answer, a.at, load, reports) }));
    // One commit for all of them; each call's moves keep the time its answer came.
    const applied = await recordAnswers(db, perCall);
    reports.tell(applied);
    this.tellUnrecorded(answered, perCall, applied);
    const settled = applied.filter((m) => m.to !== 'PENDING').length;
    pass.settled += settled;
    this.pending.n = Math.max(0, this.pending.n - settled);
    if (this.o.settlementSweep === true) await this.sweepSettlingBatches(perCall.map((c) => c.moves));
  }

  /**
   * Final answers whose moves were not recorded: the row changed while the query was out. What the service said
   * then is not what the row now says, so it is told; a row still PENDING was made due by the event (no claim of
   * this instance leases a row it is asking about), unless another instance has claimed it since.
   */
  private tellUnrecorded(answered: readonly { flight: Flight }[], decided: readonly { moves: RowMove[] }[], applied: RowMove[]): void {
    const recorded = new Set(applied);
    const targets = new Map(answered.flatMap((a) => a.flight.due.map((r) => [r.id, r])));
    for (const m of decided.flatMap((c) => c.moves)) {
      const row = targets.get(m.row.id);
      if (m.to === 'PENDING' || recorded.has(m) || row === undefined) continue;
      this.deps.logger.info(
        { batchId: row.batchId, line: row.line, merchantReferenceId: row.merchantReferenceId, payoutId: row.payoutId, status: m.to },
        'a final answer to a query of this payout was not recorded: the row changed while the query was out (a payout.updated ' +
          'event made it due, or another instance recorded an answer first); a row still PENDING is due for a query now, ' +
          'unless another instance is asking about it',
      );
    }
  }

  /**
   * A batch whose payouts mostly came back settled in one answer is likely settling as a whole: its other
   * PENDING payouts are asked about now, throttled per batch to the minimum interval.
   */
  private async sweepSettlingBatches(answers: RowMove[][]): Promise<void> {
    const now = this.deps.clock.now();
    const settling = new Set<string>();
    for (const moves of answers) {
      const tally = new Map<string, { asked: number; settled: number }>();
      for (const m of moves) {
        const t = tally.get(m.row.batchId) ?? { asked: 0, settled: 0 };
        t.asked++;
        if (m.to !== 'PENDING') t.settled++;
        tally.set(m.row.batchId, t);
      }
      for (const [batchId, t] of tally) {
        const swept = this.sweeping.get(batchId);
        if (swept) {
          swept.asked += t.asked;
          swept.settled += t.settled;
        }
        if (t.settled * 2 > t.asked) settling.add(batchId);
      }
    }
    for (const batchId of settling) {
      const pulled = await this.sweep(batchId, now);
      // Poll chatter: debug. The info log keeps a line per batch event.
      if (pulled > 0)
        this.deps.logger.debug(
          { batchId, payouts: pulled },
          'most payouts of a query answer settled: asking about the rest of the batch now',
        );
    }
  }

  /**
   * A swept batch whose payouts asked about since mostly came back settled is still settling: its PENDING
   * payouts are asked again one minimum interval after the last sweep, until the answers stop being mostly settled.
   */
  private async followUpSweeps(): Promise<void> {
    const now = this.deps.clock.now();
    for (const [batchId, swept] of this.sweeping) {
      if (now - swept.at < this.o.minIntervalMs) continue;
      if (swept.settled * 2 <= swept.asked) {
        this.sweeping.delete(batchId);
        continue;
      }
      const { asked, settled } = swept;
      const pulled = await this.sweep(batchId, now);
      if (pulled > 0)
        this.deps.logger.debug(
          { batchId, payouts: pulled, asked, settled },
          'batch still settling: asking about its pending payouts again',
        );
    }
  }

  /** Makes the batch's PENDING payouts due now, unless it was swept within the minimum interval; how many were pulled in. */
  private async sweep(batchId: string, now: number): Promise<number> {
    const last = this.sweeping.get(batchId);
    if (last && now - last.at < this.o.minIntervalMs) return 0;
    this.sweeping.set(batchId, { at: now, asked: 0, settled: 0 });
    return pollBatchNow(this.deps.db, batchId, now);
  }

  /** The moves an answer makes of its rows; what to log of a move, once it is recorded, goes into `reports`. */
  private movesOf(due: PollTarget[], answer: PayoutQueryAnswer, now: number, load: PollLoad, reports: MoveReports): RowMove[] {
    const { logger } = this.deps;
    const byId = new Map(answer.records.map((r) => [r.payoutId, r]));
    const unreadById = new Map<string, UnreadRecord>();
    // A record naming no payout may be any asked one's: none of them is taken as unknown to the service.
    let nameless = false;
    for (const u of answer.unread) {
      if (u.payoutId !== null) unreadById.set(u.payoutId, u);
      else {
        nameless = true;
        // Such a record comes back at every poll of its payouts: told once, not at each.
        if (this.namelessWarned.first(`${u.merchantReferenceId ?? ''}\n${u.status ?? ''}\n${u.problem}`))
          logger.warn(
            { merchantReferenceId: u.merchantReferenceId, status: u.status, problem: u.problem },
            'a record of a payout query cannot be read; skipped, its payouts asked again on their backoff (told once)',
          );
      }
    }
    return due.map((row): RowMove => {
      const rec = byId.get(row.payoutId as string);
      const polled = { pollCount: row.pollCount + 1, lastPolledAt: now };
      // Each move is for the payout asked about: a row holding another by the time the answer lands is left alone.
      // Nor is one a webhook made due since the query was claimed: this answer may be older than what the event
      // told (the service reversed a payout), so the query that follows it decides, whatever this one said.
      const still = { payoutId: row.payoutId, pollRound: row.pollRound };
      // A move that keeps it PENDING sets its next poll only if that is still the one claimed: a sweep that made it
      // due while this query was out (its batch settling) is followed by a query at once.
      const stillDue = { ...still, nextPollAt: row.nextPollAt };
      if (!rec) {
        const unread = unreadById.get(row.payoutId as string);
        if (unread) return this.unreadMove(row, unread, polled, reports, stillDue);
        // Not answered for certain: asked again on its backoff, as a payout the service did not find is (the
        // record may stay unreadable for long, and is no reason to ask more often).
        if (nameless)
          return {
            row,
            from: 'PENDING',
            to: 'PENDING',
            patch: { ...polled, nextPollAt: now + nextPollDelay(polled.pollCount, this.o) },
            history: null,
            still: stillDue,
          };
        const move: RowMove = {
          row,
          from: 'PENDING',
          to: 'PENDING',
          patch: { ...polled, nextPollAt: now + this.o.maxIntervalMs },
          history: { event: 'polled', outcome: 'NOT_FOUND', detail: 'payoutId not found by query' },
          still: stillDue,
        };
        return reports.add(move, () =>
          logger.error(
            { batchId: row.batchId, line: row.line, payoutId: row.payoutId },
            'the service does not know a payout it created; still following it',
          ),
        );
      }
      const requested =
        row.payoutCurrency !== null && row.payoutAmount !== null && row.deductionCurrency !== null
          ? { payoutCurrency: row.payoutCurrency, payoutAmount: row.payoutAmount, deductionCurrency: row.deductionCurrency }
          : null;
      const differs = requested !== null && payoutDifferences(rec, requested).length > 0;
      if (requested !== null && !isPayoutOf(rec, requested) && row.payoutCheckedAt === null) {
        // The create was answered with a payout the service already held under this reference (another's). Only
        // while still unproven: another instance may have found the row's own record since this one claimed it.
        const taken = referenceTaken(rec, requested);
        const move: RowMove = {
          row,
          from: 'PENDING',
          ...taken,
          patch: { ...taken.patch, ...polled, ...this.checkClosed(row, now) },
          // Decided with the check as claimed: one made owed since is taken into account at the next poll.
          still: { ...still, payoutCheckedAt: null, serviceCheck: row.serviceCheck, serviceCheckRound: row.serviceCheckRound },
        };
        return reports.add(move, () => logReferenceTaken(logger, row, rec, requested));
      }
      // Its first readable record is the row's own; a later one that differs is still the row's payout (the
      // service changed its figures, or a setting now reads another field): money moved, so it is followed
      // as the service says and reported once, when it settles, never rejected.
      const checked = requested !== null && row.payoutCheckedAt === null ? { payoutCheckedAt: now } : {};
      if (rec.status !== 'PENDING') {
        const move: RowMove = {
          row,
          from: 'PENDING',
          to: rec.status,
          patch: { ...(differs ? settledDifferingPatch(rec, requested, polled) : settledPatch(rec, polled)), ...checked },
          history: {
            event: 'settled',
            outcome: rec.status,
            detail: differs ? payoutDiffersReason(rec, requested) : (rec.completeTime ?? undefined),
          },
          still,
        };
        return differs ? reports.add(move, () => logPayoutDiffers(logger, row, rec, requested)) : move;
      }
      const wait = nextPollDelay(polled.pollCount, this.o);
      const bound = pollIntervalBound(polled.pollCount, this.o, load);
      return {
        row,
        from: 'PENDING',
        to: 'PENDING',
        // Due after the backoff; when rounds take longer, asked as soon as a call is free (work never waits for the bound).
        patch: { ...polled, ...checked, nextPollAt: now + wait },
        // The interval in effect, written while it changes (pollIsRecorded).
        history: pollIsRecorded(polled.pollCount, this.o, load)
          ? {
              event: 'polled',
              outcome: 'PENDING',
              detail: bound > wait ? `next poll in ${wait} ms, at most ${bound} ms` : `next poll in ${wait} ms`,
            }
          : null,
        still: stillDue,
      };
    });
  }

  /**
   * A check a webhook made owed of a row found REFERENCE_TAKEN is closed (it asks by the row's payout, which the row
   * no longer holds); its note, which says payoutd is asking, gives way to one saying it no longer does.
   */
  private checkClosed(row: PollTarget, now: number): PayoutRowPatch {
    if (row.serviceCheck === null) return {};
    return { serviceCheck: null, serviceCheckAt: null, serviceNote: REFERENCE_TAKEN_WHILE_CHECKED_NOTE, serviceNotedAt: now };
  }

  /**
   * A payout whose record cannot be read (a status payoutd does not know, a field missing): it exists and is not
   * taken as final, so it stays PENDING on its schedule. Its status is kept as sent; a change of it is written and warned.
   */
  private unreadMove(
    row: PollTarget,
    unread: UnreadRecord,
    polled: { pollCount: number; lastPolledAt: number },
    reports: MoveReports,
    still: RowMove['still'],
  ): RowMove {
    const status = unread.status;
    const changed = status !== row.serviceStatus;
    const move: RowMove = {
      row,
      from: 'PENDING',
      to: 'PENDING',
      patch: { ...polled, serviceStatus: status, nextPollAt: polled.lastPolledAt + nextPollDelay(polled.pollCount, this.o) },
      history: changed ? { event: 'polled', outcome: status ?? 'UNREADABLE', detail: `record cannot be read: ${unread.problem}` } : null,
      still,
    };
    if (!changed) return move;
    return reports.add(move, () =>
      this.deps.logger.warn(
        {
          batchId: row.batchId,
          line: row.line,
          merchantReferenceId: row.merchantReferenceId,
          payoutId: row.payoutId,
          status: unread.status,
          problem: unread.problem,
        },
        'the service sent a record of this payout that payoutd cannot read; still following it as PENDING',
      ),
    );
  }

  /** PENDING payouts, counted at most once per minimum interval; in between, less the ones settled since. */
  private async pendingNow(): Promise<number> {
    const now = this.deps.clock.now();
    if (now - this.pending.countedAt >= this.o.minIntervalMs)
      this.pending = { n: await countRowsInState(this.deps.db, 'PENDING'), countedAt: now };
    return this.pending.n;
  }

  private async flagStale(): Promise<void> {
    const { db, clock, logger } = this.deps;
    const now = clock.now();
    // Finding stale payouts reads every PENDING row: at most once per minimum interval.
    if (now - this.staleCheckedAt < this.o.minIntervalMs) return;
    this.staleCheckedAt = now;
    const stale = await listStalePending(db, now - this.o.staleAfterMs, 1000);
    // Logged for the rows this instance flagged: another that flagged some first logged those.
    const ids = stale.map((r) => r.id);
    const flagged = new Set(await flagStale(db, ids, now));
    for (const row of stale.filter((r) => flagged.has(r.id))) {
      logger.error(
        {
          batchId: row.batchId,
          line: row.line,
          merchantReferenceId: row.merchantReferenceId,
          payoutId: row.payoutId,
          pendingForMs: now - (row.createdAtMs ?? now),
        },
        'STALE PAYOUT: still PENDING past the configured age; still following it',
      );
    }
  }
}
