/**
 * PayoutSubmitter: turns READY rows into payouts. It records the intent (READY -> CREATING) before a create is
 * sent, sends under a concurrency limit and records each answer. An unknown outcome makes the row UNKNOWN, moved
 * on only by a query of its reference, never re-created blindly; those queries run beside the sending. While
 * the service is unreachable a pass claims nothing and only makes the breaker's probe.
 */
import pLimit from 'p-limit';
import type { Logger } from 'pino';
import { NOT_SENT, isApiError, neverSent } from '../api/errors.js';
import type { BackoffPolicy } from '../domain/backoff.js';
import { backoffDelay } from '../domain/backoff.js';
import type { Clock } from '../domain/clock.js';
import { whileRenewing } from '../domain/lease.js';
import type { CreateTrail, PayoutQueryAnswer, PayoutRecord, PayoutRequest, PayoutService, UnreadRecord } from '../domain/payout.js';
import { REFERENCE_TAKEN, isPayoutOf, maskAccountNumber, namesItsPayout, payoutDifferences } from '../domain/payout.js';
import { requestOfText } from '../domain/request-values.js';
import { severalPayoutsNote } from '../domain/service-check.js';
import {
  type Database,
  applyClaimedMoves,
  claimDueRows,
  claimOf,
  claimReadyRows,
  lastIntentAt,
  noteLateCreate,
  type LateCreate,
  markInterruptedCreatesUnknown,
  fenceCreate,
  renewClaims,
  type Claimant,
  type ClaimedRow,
  type RowMove,
  GroupCommit,
} from '../store/index.js';
import {
  adoptRecord,
  logPayoutDiffers,
  withDifferingReason,
  adoptUnread,
  decideCreated,
  decideCreateFailure,
  logReferenceTaken,
  logSeveralPayouts,
  MoveReports,
  referenceTaken,
} from './outcome.js';
import { FirstLooks, notFoundGraceEnd } from './grace.js';

export interface SubmitterOptions {
  concurrency: number;
  /** Backoff of a row whose create was refused in a retryable way. */
  retry: BackoffPolicy;
  /** How long a batch waits after INSUFFICIENT_BALANCE before trying again. */
  insufficientBalanceHoldMs: number;
  /** A reference the service does not know counts as never created only this long after its last create was sent. */
  notFoundGraceMs: number;
  /** First poll of a new payout after this delay. */
  firstPollDelayMs: number;
  /** Rows whose outcome is unknown, resolved per reference query. */
  reconcileBatchSize: number;
  /** While a pass sends, UNKNOWN rows that fell due are looked at this often. Default 1000. */
  reconcileEveryMs?: number;
  /**
   * This instance and its lease on claimed rows. A try of a create leaves with at least half the lease ahead
   * (renewed first when less is left), so `leaseMs` must exceed twice what one try may take (the client's per-try
   * timeout); a row whose lease ran out is taken over.
   */
  claimant: Claimant;
  /**
   * How long a query of UNKNOWN rows keeps them from others (default the claimant's lease). Alone on its
   * database nobody else could ask about them, and a lease would only delay them after a restart.
   */
  reconcileLeaseMs?: number;
}

/** The hold a refused create puts on its batch (src/holds: BatchHolds). */
export interface SendingHolds {
  onInsufficientBalance(batchId: string, currency: string, until: number): Promise<void>;
}

export interface SubmitterDeps {
  db: Database;
  service: PayoutService;
  clock: Clock;
  /** Milliseconds of a clock that never jumps (default performance.now), for tests to move apart from `clock`. */
  monotonic?: () => number;
  logger: Logger;
  holds: SendingHolds;
  random?: () => number;
  /** Called with each create outcome code ('OK', 'UNKNOWN', an error code). */
  onCreateOutcome?: (outcome: string) => void;
  /** Chaos testing: named points where a test may kill the process (src/daemon/fault-points.ts). */
  faultPoint?: (name: 'after-intent' | 'after-create-response' | 'after-record') => void;
}

/** What became of one create, waiting to be recorded. */
interface CreateOutcome {
  /** None: the row is no longer this claim's, so this process records nothing of it. */
  move?: RowMove;
  row: ClaimedRow;
  /** INSUFFICIENT_BALANCE: hold the batch until then. */
  holdUntil?: number;
  /** History entries recorded before the move: tries the service refused before processing (CreateTrail). */
  notes?: RowMove[];
}

/** The reconciliation running beside one pass's sending. */
interface Beside {
  /** A create's outcome became unknown: look now rather than at the next tick. */
  nudge(): void;
  /** Ends it after its current round; resolves with the rows it moved (rejects with its failure). */
  stop(): Promise<number>;
}

/** How long a first look at an UNKNOWN row not asked about since is kept at least (FirstLooks). */
const FORGET_LOOKS_AFTER_MS = 86_400_000;

const SHUTDOWN_NOT_SENT = 'shutdown before the create was sent';
const PASS_FAILED_NOT_SENT = 'the submit pass failed before the create was sent; sent by a later pass';

/** A create try not sent: its row is no longer this claim's (the lease ran out, or an event made it UNKNOWN). */
class ClaimLost extends Error {
  constructor() {
    super('the claim on this row ended before its create was sent');
  }
}

/** A create try not sent, its row still this claim's: a stop, or a cancel or hold of its batch after the claim. */
class NotSending extends Error {
  constructor(readonly detail: string) {
    super(detail);
  }
}

/** An UNKNOWN row as the reconcile claims it. */
type UnknownRow = ClaimedRow & { unknownSince: number | null };

/** What an answer to a reference query says, by reference. */
interface Seen {
  byRef: Map<string, PayoutRecord[]>;
  unreadByRef: Map<string, (UnreadRecord & { payoutId: string; merchantReferenceId: string })[]>;
  /** It held a record naming no reference, which may be any row's: none of its references is taken as absent. */
  nameless: boolean;
  /** The service said the answer is partial (PayoutQueryAnswer.partial). */
  partial: boolean;
}

/** Records (or unread records) by the reference they name. */
function groupByReference<R extends { merchantReferenceId: string }>(records: R[]): Map<string, R[]> {
  const byRef = new Map<string, R[]>();
  for (const r of records) byRef.set(r.merchantReferenceId, [...(byRef.get(r.merchantReferenceId) ?? []), r]);
  return byRef;
}

/** The request of a claimed row, parsed only for what a log line or a hold says (the create sends its stored text). */
function requestOf(row: Pick<ClaimedRow, 'requestValues'>): PayoutRequest {
  return requestOfText(row.requestValues ?? '');
}

export class PayoutSubmitter {
  private readonly random: () => number;
  private readonly limit: ReturnType<typeof pLimit>;
  /** Answers of creates are recorded in shared transactions. */
  private readonly records: GroupCommit;
  /** Claimed rows handed to a slot whose answer is not recorded yet: on the wire, or waiting for a shared commit. */
  private readonly unrecorded = new Set<Promise<void>>();
  /** Claimed rows not handed to a slot yet, kept as plain rows rather than queued promises. */
  private readonly waiting: ClaimedRow[] = [];
  private waitingFrom = 0;
  /** The reconciliation beside the pass running now (null between passes). */
  private beside: Beside | null = null;
  /** A partial query answer was warned of (once per process: a service that pages does so every time). */
  private partialWarned = false;
  /** The steady clock, and when this process first looked at each UNKNOWN row on it: the grace counts on both (grace.ts). */
  private readonly steady: () => number;
  private readonly firstLooks: FirstLooks;

  constructor(
    private readonly deps: SubmitterDeps,
    private readonly o: SubmitterOptions,
  ) {
    this.random = deps.random ?? Math.random;
    this.limit = pLimit(o.concurrency);
    this.records = new GroupCommit(deps.db, () => deps.clock.now());
    this.steady = deps.monotonic ?? (() => performance.now());
    // A row still with this process is asked about again within a grace (its wait) or a backoff (a failed query):
    // it keeps its first look unless the service was out of reach for a day; rows settled elsewhere go after that.
    this.firstLooks = new FirstLooks(this.steady, () => Math.max(FORGET_LOOKS_AFTER_MS, 2 * Math.max(o.notFoundGraceMs, o.retry.maxMs)));
  }

  /** Creates are out or waiting for their answer to be recorded (the poller lets them go first). */
  get sending(): boolean {
    return this.unrecorded.size > 0 || this.waitingCount() > 0;
  }

  private waitingCount(): number {
    return this.waiting.length - this.waitingFrom;
  }

  /** The next waiting row; the list is emptied once all of it was taken. */
  private takeWaiting(): ClaimedRow {
    const row = this.waiting[this.waitingFrom++] as ClaimedRow;
    if (this.waitingFrom === this.waiting.length) {
      this.waiting.length = 0;
      this.waitingFrom = 0;
    }
    return row;
  }

  /** False while the payout service is taken for unreachable: nothing is claimed then. */
  private available(): boolean {
    return this.deps.service.available?.() ?? true;
  }

  /** One pass: resolve unknown outcomes, then create every due READY row with `concurrency` in flight. Returns rows moved. */
  async runOnce(signal: AbortSignal, callSignal: AbortSignal = signal): Promise<number> {
    if (!this.available() && !((await this.deps.service.probeIfDue?.(callSignal)) ?? false)) return 0;
    // Creates whose lease ran out: another instance died, or an answer of ours was never recorded (a failed
    // commit). None is in flight: every try renews its lease first and sends only while it holds (sendCreate).
    // None is waiting in this process either: a pass ends, even on a failure, once each row it claimed was
    // answered or put back (sendReady).
    const taken = await markInterruptedCreatesUnknown(this.deps.db, this.deps.clock.now(), false);
    if (taken > 0) this.deps.logger.warn({ rows: taken }, 'took over creates whose lease ran out; resolving them by query');
    let moved = await this.reconcileUnknown(signal);
    const beside = this.reconcileBeside(signal);
    this.beside = beside;
    try {
      moved += await whileRenewing(
        this.o.claimant.leaseMs,
        () => this.renewWaiting(),
        () => this.sendReady(signal, callSignal),
      );
    } finally {
      this.beside = null;
      moved += await beside.stop();
    }
    return moved;
  }

  /** The sending of one pass: claims and creates until no READY row is due (or the service goes down). */
  private async sendReady(signal: AbortSignal, callSignal: AbortSignal): Promise<number> {
    let moved = 0;
    // Read at each look: a concurrency changed by a SIGHUP applies within the running pass.
    const concurrency = (): number => {
      const n = this.o.concurrency;
      if (this.limit.concurrency !== n) this.limit.concurrency = n;
      return n;
    };
    const unrecorded = this.unrecorded;
    let failure: { err: unknown } | null = null;
    // Set once the claiming failed (a dropped connection): the rows still waiting are put back READY unsent, at once.
    let putBack: string | null = null;
    let wake: (() => void) | null = null;
    const nudge = (): void => {
      const w = wake;
      wake = null;
      w?.();
    };
    // Waiting rows go to the concurrency limit only while it has a free slot; a slot freed by an answer takes the next.
    // After a stop none is sent: all are handed over at once, to be put back READY without waiting for a slot.
    const send = (): void => {
      while (
        (putBack !== null || signal.aborted || this.limit.activeCount + this.limit.pendingCount < concurrency()) &&
        this.waitingCount() > 0
      ) {
        const row = this.takeWaiting();
        const settled = (): void => {
          unrecorded.delete(p);
          nudge();
        };
        const answered = (): void => {
          send();
          nudge();
        };
        const p: Promise<void> = this.createAndRecord(row, signal, callSignal, answered, putBack).then(settled, (err: unknown) => {
          // A failed record stops new claims; the rows claimed still go out, and the pass reports the failure.
          failure ??= { err };
          settled();
        });
        unrecorded.add(p);
      }
    };
    // A stop ends a wait for a free slot at once: the rows waiting are put back then, not after the answers out.
    signal.addEventListener('abort', nudge, { once: true });
    try {
      while (!signal.aborted && failure === null && this.available()) {
        // Keep a claimed row waiting behind every slot, so a slot freed by an answer is refilled at once.
        send();
        const waiting = this.waitingCount();
        const n = concurrency();
        if (waiting > n / 2 || unrecorded.size + waiting > n * 6) {
          await new Promise<void>((resolve) => (wake = resolve));
          continue;
        }
        const room = Math.min(500, n * 8 - unrecorded.size - waiting);
        const rows = await claimReadyRows(this.deps.db, room, this.deps.clock.now(), this.o.claimant);
        if (rows.length === 0) break;
        moved += rows.length;
        for (const row of rows) this.waiting.push(row);
        send();
      }
    } catch (err) {
      // Rows claimed stay this process's until answered or put back: left waiting, without their leases renewed
      // once the pass ends, the next pass's takeover would make them UNKNOWN though none was sent.
      failure ??= { err };
      putBack = PASS_FAILED_NOT_SENT;
    } finally {
      signal.removeEventListener('abort', nudge);
    }
    // Rows still waiting go to slots as they free up; with the service down each is put back READY unsent.
    send();
    while (unrecorded.size > 0) await Promise.all([...unrecorded]);
    if (failure !== null) throw (failure as { err: unknown }).err;
    return moved;
  }

  /**
   * Renews the leases of claimed rows still waiting for a slot, once less than half is left (as a fence does):
   * eight per slot, or any number behind a rate-limit pause, may wait longer than a lease, and other instances
   * would take them over as interrupted though none was sent.
   */
  private async renewWaiting(): Promise<void> {
    const now = this.deps.clock.now();
    const { leaseMs } = this.o.claimant;
    const due = this.waiting.slice(this.waitingFrom).filter((r) => r.leaseExpiresAt === null || now + leaseMs / 2 > r.leaseExpiresAt);
    if (due.length === 0) return;
    const renewed = new Set(await renewClaims(this.deps.db, due, now, this.o.claimant));
    for (const r of due) if (renewed.has(r.id)) r.leaseExpiresAt = Math.max(r.leaseExpiresAt ?? 0, now + leaseMs);
  }

  /**
   * One claimed row: its create under the limit, then its answer recorded outside the slot (`answered` in between).
   * `stop`: no create leaves after it; `signal`: abandons calls already out; `putBack`: the row is not sent, put
   * back READY with this reason.
   */
  private async createAndRecord(
    row: ClaimedRow,
    stop: AbortSignal,
    signal: AbortSignal,
    answered: () => void,
    putBack: string | null,
  ): Promise<void> {
    let outcome: CreateOutcome;
    try {
      // After a stop nothing is sent: no slot is waited for.
      outcome =
        putBack !== null || stop.aborted
          ? { move: this.notSent(row, putBack ?? SHUTDOWN_NOT_SENT), row }
          : await this.limit(() => this.sendCreate(row, stop, signal));
    } finally {
      // Even if the send failed unexpectedly: the freed slot takes the next waiting row.
      answered();
    }
    if (outcome.move === undefined) return;
    // Recorded only while the row is still this claim's: a stop, a stall or an outage may come after the lease
    // ran out and another instance claimed the row again, its own create on the wire; this outcome must not undo it.
    const still = claimOf(row);
    // Notes go first: same row, in order.
    const notes = (outcome.notes ?? []).map((note) => this.records.add({ ...note, still }));
    const [applied] = await Promise.all([this.records.add({ ...outcome.move, still }), ...notes]);
    if (!applied) {
      await this.takenOver(row, outcome.move);
      return;
    }
    if (outcome.move.to === 'UNKNOWN') this.beside?.nudge();
    if (outcome.move.history?.event === 'not-sent') return;
    this.deps.faultPoint?.('after-record');
    if (outcome.holdUntil !== undefined) {
      await this.deps.holds.onInsufficientBalance(outcome.row.batchId, requestOf(outcome.row).deductionCurrency, outcome.holdUntil);
    }
  }

  /**
   * A create's outcome refused because its row is no longer this claim's (another instance took it over, or an
   * event made it UNKNOWN): whoever holds the row decides it. A payout this create made, or may have made (its
   * answer lost), is written down in the row's history unless the row already follows it: a row without one has
   * its reference asked before anything is sent for it, which finds and adopts the payout; a row following
   * another payout, or ended without one, owes a query of its reference, so finance is told of a second payout
   * (src/poll/checks.ts).
   */
  private async takenOver(row: ClaimedRow, move: RowMove): Promise<void> {
    const { logger, clock } = this.deps;
    const instanceId = this.o.claimant.instanceId;
    const fields = { batchId: row.batchId, line: row.line, merchantReferenceId: row.merchantReferenceId, instanceId };
    const payoutId = move.patch.payoutId ?? null;
    if (payoutId === null && move.to !== 'UNKNOWN') {
      logger.info(
        { ...fields, outcome: move.history?.event },
        'the claim on this row ended before its outcome; the outcome is left to its holder',
      );
      return;
    }
    const made =
      payoutId === null
        ? `a create of ${instanceId} whose answer was lost (${move.history?.detail ?? 'outcome unknown'}) ended after its claim on the row ended: it may have made a payout`
        : `payoutId ${payoutId}, made by a create of ${instanceId} answered after its claim on the row ended`;
    const what = payoutId === null ? 'create whose answer was lost ended' : 'payout created';
    const said: Record<LateCreate, { detail: string; log: string }> = {
      resolving: {
        detail: `${made}; the row's reference is asked before anything is sent for it`,
        log: `${what} after its claim on the row ended; a query of the reference adopts what it made`,
      },
      extra: {
        detail: `${made}; the row follows another outcome, and its reference is asked`,
        log: `${what} after its claim on the row ended; the row follows another outcome, its reference is asked, as the service may hold a payout of it besides the row's`,
      },
    };
    const how = await noteLateCreate(
      this.deps.db,
      row.id,
      payoutId,
      (h) => ({
        event: payoutId === null ? 'lost-after-takeover' : 'created-after-takeover',
        outcome: payoutId === null ? 'UNKNOWN' : 'OK',
        detail: said[h].detail,
      }),
      clock.now(),
    );
    if (how === 'resolving') logger.info({ ...fields, payoutId }, said[how].log);
    else if (how === 'extra') logger.warn({ ...fields, payoutId }, said[how].log);
  }

  /** Sends one claimed row's create (its intent is already recorded) and decides what its answer means. */
  private async sendCreate(row: ClaimedRow, stop: AbortSignal, signal: AbortSignal): Promise<CreateOutcome> {
    const { clock, logger } = this.deps;
    // A child logger per create costs more than the create's own bookkeeping; made only when a line is written.
    const log = (): Logger => logger.child({ batchId: row.batchId, line: row.line, merchantReferenceId: row.merchantReferenceId });
    let move: RowMove;
    let holdUntil: number | undefined;
    if (!this.available()) return { move: this.notSent(row, 'the payout service is unreachable; sent once it answers again'), row };
    if (stop.aborted || signal.aborted) return { move: this.notSent(row, SHUTDOWN_NOT_SENT), row };
    // Allocated per create: the fence of each try, and the tries refused for their credentials.
    const trail: CreateTrail = { beforeSend: () => this.fence(row, stop) };
    try {
      this.deps.faultPoint?.('after-intent');
      if (row.requestValues === null) throw new Error(`row ${row.id} has no stored request`);
      const created = await this.deps.service.createPayout(
        { merchantReferenceId: row.merchantReferenceId, requestValues: row.requestValues },
        signal,
        trail,
      );
      this.deps.faultPoint?.('after-create-response');
      const d = decideCreated(created, clock, this.o.firstPollDelayMs);
      move = { row, from: 'CREATING', to: d.to, patch: d.patch, history: { event: d.event, outcome: d.outcome, detail: d.detail } };
      this.deps.onCreateOutcome?.('OK');
      if (logger.isLevelEnabled('debug'))
        log().debug({ payoutId: created.payoutId, account: maskAccountNumber(requestOf(row).beneficiary.accountNumber) }, 'payout created');
    } catch (err) {
      if (err instanceof ClaimLost) {
        // Nothing of this claim was processed (a try is repeated only when it provably was not): the row is left
        // to whoever holds it now, or to the takeover of expired leases, which resolves it by query.
        log().warn(
          { instanceId: this.o.claimant.instanceId },
          'create not sent: the claim on its row ended (it ran out, or an event made the row UNKNOWN); left to its holder',
        );
        return { row };
      }
      if (err instanceof NotSending) {
        // Every earlier try, if any, was refused unprocessed (the client repeats only those): nothing was created.
        log().debug({ detail: err.detail }, 'create not sent; the row is READY again');
        return { move: this.notSent(row, err.detail), row, notes: this.refusalNotes(row, trail) };
      }
      const d = decideCreateFailure(err, {
        attempt: row.createAttempts,
        now: clock.now(),
        retry: this.o.retry,
        insufficientBalanceHoldMs: this.o.insufficientBalanceHoldMs,
        random: this.random,
        serviceDown: !this.available(),
      });
      move = { row, from: 'CREATING', to: d.to, patch: d.patch, history: { event: d.event, outcome: d.outcome, detail: d.detail } };
      holdUntil = d.holdBatchUntil;
      this.deps.onCreateOutcome?.(d.to === 'UNKNOWN' ? 'UNKNOWN' : d.outcome);
      const safe = isApiError(err) ? err.toLog() : { name: 'Error', code: 'UNEXPECTED', message: 'unexpected failure during create' };
      if (d.to === 'REJECTED') log().warn({ err: safe }, 'payout rejected by the service');
      else if (d.to === 'UNKNOWN') log().warn({ err: safe }, 'create outcome unknown; will query the reference before anything else');
      else if (isApiError(err, 'auth')) log().error({ err: safe }, 'the service refused our credentials; will retry');
      // Failed before it left (its message says what failed): the row is READY again, nothing to resolve.
      else if (isApiError(err) && err.code === NOT_SENT) log().warn({ err: safe }, 'create not sent; the row is READY again');
      // An outage is logged once, by the breaker; a row put back unsent is in its history.
      else if (neverSent(err)) log().debug({ err: safe }, 'create not sent');
      else log().info({ err: safe }, 'create deferred');
    }
    return { move, row, holdUntil, notes: this.refusalNotes(row, trail) };
  }

  /**
   * Before each try of a create: after a stop, or once the row's batch is no longer sendable (an operator's
   * cancel, a hold, approval withdrawn after the claim), throws NotSending; when the row is no longer this
   * claim's (taken over, or made UNKNOWN by an event naming an earlier payout of its reference), ClaimLost. One
   * guarded statement of the store for every try: a look any older would let a cancel or a hold through. It also
   * renews the lease when less than half of it is ahead (no row is taken over before its lease runs out, and a try
   * leaving with half the lease ahead has more than one try can take).
   */
  private async fence(row: ClaimedRow, stop: AbortSignal): Promise<void> {
    if (stop.aborted) throw new NotSending(SHUTDOWN_NOT_SENT);
    const now = this.deps.clock.now();
    const { leaseMs } = this.o.claimant;
    const renew = row.leaseExpiresAt === null || now + leaseMs / 2 > row.leaseExpiresAt;
    const fenced = await fenceCreate(this.deps.db, row, now, this.o.claimant, renew);
    if (fenced === 'lost') throw new ClaimLost();
    if (fenced === 'unsendable') throw new NotSending('its batch was cancelled or held before the create was sent');
    if (renew) row.leaseExpiresAt = now + leaseMs;
  }

  /** A claimed row put back READY unsent: nothing to resolve, no attempt charged. */
  private notSent(row: ClaimedRow, detail: string): RowMove {
    return {
      row,
      from: 'CREATING',
      to: 'READY',
      patch: { nextAttemptAt: this.deps.clock.now(), createAttempts: Math.max(0, row.createAttempts - 1) },
      history: { event: 'not-sent', detail },
    };
  }

  /** A history entry per try of the create the service refused before processing (its credentials), if any. */
  private refusalNotes(row: ClaimedRow, trail: CreateTrail): RowMove[] | undefined {
    return trail.refused?.map((r) => ({
      row,
      from: 'CREATING' as const,
      to: 'CREATING' as const,
      patch: {},
      history: { event: 'create-refused', outcome: r.code, detail: `${r.detail}; sent again with renewed credentials` },
    }));
  }

  /**
   * Resolves unknown outcomes while a pass sends: at once after one became unknown, and every `reconcileEveryMs`.
   * A round is the same reconcileUnknown a pass starts with, so the rules are the same.
   */
  private reconcileBeside(signal: AbortSignal): Beside {
    const every = this.o.reconcileEveryMs ?? 1000;
    let stopped = false;
    let nudged = false;
    let wake: (() => void) | null = null;
    let moved = 0;
    let failed: { err: unknown } | null = null;
    const rounds = async (): Promise<void> => {
      while (!signal.aborted) {
        if (!nudged) {
          if (stopped) return;
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, every);
            wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          wake = null;
          if (stopped && !nudged) return;
        }
        nudged = false;
        if (!this.available()) continue;
        moved += await this.reconcileUnknown(signal);
      }
    };
    // Kept until stop(): a failed round ends the rounds and fails the pass there, never as an unhandled rejection.
    const running = rounds().catch((err: unknown) => {
      failed = { err };
    });
    return {
      nudge() {
        nudged = true;
        wake?.();
      },
      async stop() {
        stopped = true;
        wake?.();
        await running;
        if (failed !== null) throw (failed as { err: unknown }).err;
        return moved;
      },
    };
  }

  /** Queries the references of UNKNOWN rows and moves each one on. */
  async reconcileUnknown(signal: AbortSignal): Promise<number> {
    const { db, clock, logger } = this.deps;
    let moved = 0;
    this.firstLooks.sweep();
    for (;;) {
      if (signal.aborted || !this.available()) return moved;
      const leaseMs = this.o.reconcileLeaseMs ?? this.o.claimant.leaseMs;
      const rows = await claimDueRows(db, 'UNKNOWN', 'next_attempt_at', clock.now(), this.o.reconcileBatchSize, leaseMs);
      if (rows.length === 0) return moved;
      for (const row of rows) this.firstLooks.look(row);
      let answer: PayoutQueryAnswer;
      try {
        answer = await this.deps.service.queryByReferences(
          rows.map((r) => r.merchantReferenceId),
          signal,
        );
      } catch (err) {
        const code = isApiError(err) ? err.code : 'ERROR';
        await applyClaimedMoves(
          db,
          rows.map((row) => this.queryFailed(row, code, 'reference query failed; will retry')),
          rows,
          clock.now(),
        );
        logger.warn(
          { err: isApiError(err) ? err.toLog() : { code: 'UNEXPECTED' }, rows: rows.length },
          'could not resolve unknown creates yet',
        );
        return moved;
      }
      const seen = this.seenIn(answer);
      const moves: RowMove[] = [];
      const askAlone: typeof rows = [];
      const reports = new MoveReports();
      const now = clock.now();
      for (const row of rows) {
        const move = await this.reconcileRow(row, seen, now, rows.length === 1, reports);
        if (move === null) askAlone.push(row);
        else moves.push(move);
      }
      // Only to rows still claimed by this round: one that outlasted its claim (a slow answer, a rate-limit pause)
      // may have decided from answers older than a create another instance sent since. What the batched answer
      // decided is applied first, each single-reference answer's as it comes: the claim is young for both.
      const applied = await applyClaimedMoves(db, moves, rows, now);
      for (const row of askAlone) {
        const move = await this.reconcileAlone(row, signal, reports);
        moves.push(move);
        applied.push(...(await applyClaimedMoves(db, [move], [row], clock.now())));
      }
      this.forgetSettled(moves, applied);
      // Told and counted only of what was recorded: a move refused for an outlasted claim was decided from old answers.
      reports.tell(applied);
      moved += applied.filter((m) => m.to !== 'UNKNOWN').length;
      if (applied.length === 0 || moves.every((m) => m.to === 'UNKNOWN')) return moved;
    }
  }

  /**
   * Forgets the first looks at rows that left UNKNOWN here, and at rows whose move was not recorded (another
   * process may have them now): asked about again, such a row only waits one more grace.
   */
  private forgetSettled(moves: RowMove[], applied: RowMove[]): void {
    const kept = new Set(applied.filter((m) => m.to === 'UNKNOWN').map((m) => m.row.id));
    for (const m of moves) if (!kept.has(m.row.id)) this.firstLooks.forget(m.row.id);
  }

  /** An answer to a reference query, by reference; its records that name no reference are warned of here. */
  private seenIn(answer: PayoutQueryAnswer): Seen {
    const { logger } = this.deps;
    const nameless = answer.unread.filter((u) => !namesItsPayout(u));
    for (const u of nameless) {
      logger.warn(
        { payoutId: u.payoutId, merchantReferenceId: u.merchantReferenceId, status: u.status, problem: u.problem },
        'a record of a reference query cannot be read; skipped, and no reference of its answer is taken as absent',
      );
    }
    const partial = answer.partial === true;
    if (partial && !this.partialWarned) {
      this.partialWarned = true;
      logger.warn(
        'the service said a reference query answer holds only part of what it found (paged); a reference missing from such an answer is never taken as absent',
      );
    }
    return {
      byRef: groupByReference(answer.records),
      unreadByRef: groupByReference(answer.unread.filter(namesItsPayout)),
      nameless: nameless.length > 0,
      partial,
    };
  }

  /**
   * One UNKNOWN row's move from an answer about its reference. `alone`: the answer was to a query of this
   * reference only; a row missing from any other is to be asked about alone (null) before its payout is taken
   * as absent. Several payouts held for the reference are told of with whatever move is recorded; a row adopting
   * one of them has a query of its reference owed, so finance is told of the others (src/poll/checks.ts).
   */
  private async reconcileRow(row: UnknownRow, seen: Seen, now: number, alone: boolean, reports: MoveReports): Promise<RowMove | null> {
    const found = seen.byRef.get(row.merchantReferenceId) ?? [];
    const unread = seen.unreadByRef.get(row.merchantReferenceId) ?? [];
    const held = found.length + unread.length;
    const move = await this.reconcileMove(row, { ...seen, found, unread, held }, now, alone, reports);
    if (move === null || held <= 1) return move;
    if (typeof move.patch.payoutId === 'string') {
      const note = severalPayoutsNote(held);
      move.patch = { ...move.patch, serviceCheck: 'REFERENCE', serviceCheckAt: now, serviceNote: note, serviceNotedAt: now };
    }
    return reports.add(move, () => logSeveralPayouts(this.deps.logger, row.merchantReferenceId, held));
  }

  /** reconcileRow's decision, from the records held for the row's reference (`found`, `unread`: `held` in all). */
  private async reconcileMove(
    row: UnknownRow,
    seen: Seen & { found: PayoutRecord[]; unread: NonNullable<ReturnType<Seen['unreadByRef']['get']>>; held: number },
    now: number,
    alone: boolean,
    reports: MoveReports,
  ): Promise<RowMove | null> {
    const { db, logger } = this.deps;
    const { found, unread, held } = seen;
    const note = held > 1 ? `; WARNING: the service holds ${held} payouts for this reference` : '';
    found.sort((a, b) => a.createTime.localeCompare(b.createTime));
    const requested = requestOf(row);
    const own = found.find((r) => isPayoutOf(r, requested));
    if (own) {
      const a = adoptRecord(own, this.deps.clock, this.o.firstPollDelayMs);
      // Its own payout settled debited in another currency than the row asked: booked only once checked, as the
      // poller reports one (a PENDING one is reported when it settles).
      const differs = own.status !== 'PENDING' && payoutDifferences(own, requested).length > 0;
      const move: RowMove = {
        row,
        from: 'UNKNOWN',
        to: a.to,
        patch: differs ? withDifferingReason(a.patch, own, requested) : a.patch,
        history: { event: 'reconciled-found', outcome: own.status, detail: `payoutId ${own.payoutId}${note}` },
      };
      return differs ? reports.add(move, () => logPayoutDiffers(logger, row, own, requested)) : move;
    }
    const first = unread[0];
    if (first !== undefined) {
      // Its record cannot be read, but it proves the payout exists (maybe this row's own, beside another's):
      // followed, never created again; the poller compares it with the row once it can be read.
      const a = adoptUnread(first, this.deps.clock, this.o.firstPollDelayMs);
      const move: RowMove = {
        row,
        from: 'UNKNOWN',
        to: a.to,
        patch: a.patch,
        history: {
          event: 'reconciled-found',
          outcome: a.patch.serviceStatus ?? 'UNREADABLE',
          detail: `payoutId ${first.payoutId}; its record cannot be read (${first.problem}), followed as PENDING${note}`,
        },
      };
      return reports.add(move, () =>
        logger.warn(
          {
            batchId: row.batchId,
            line: row.line,
            merchantReferenceId: row.merchantReferenceId,
            payoutId: first.payoutId,
            status: first.status,
            problem: first.problem,
          },
          'the service holds a payout for this reference whose record payoutd cannot read; followed as PENDING',
        ),
      );
    }
    if (seen.nameless) {
      return this.queryFailed(row, 'BAD_RESPONSE', 'the answer held a record that cannot be read; not taken as absent, will retry');
    }
    // Only another's payout holds the reference, or none does: this row's own create may still land within the grace.
    const other = found[0];
    const unknownSince = row.unknownSince ?? (await lastIntentAt(db, row.id)) ?? 0;
    const graceEnd = notFoundGraceEnd({
      graceMs: this.o.notFoundGraceMs,
      now,
      unknownSince,
      steadyNow: this.steady(),
      steadySince: this.firstLooks.look(row),
    });
    if (graceEnd !== null) {
      return {
        row,
        from: 'UNKNOWN',
        to: 'UNKNOWN',
        patch: { nextAttemptAt: graceEnd },
        history: other
          ? {
              event: 'reconcile-wait',
              outcome: REFERENCE_TAKEN,
              detail: `payout ${other.payoutId} holds this reference for ${other.payoutAmount} ${other.payoutCurrency}; asking again after the grace period`,
            }
          : { event: 'reconcile-wait', outcome: 'NOT_FOUND', detail: 'not visible yet; asking again after the grace period' },
      };
    }
    // A service may page or cap an answer about many references without saying so: its own payout is taken as
    // absent (created again, or the row not paid) only from an answer about this reference alone that is whole.
    if (!alone) return null;
    if (seen.partial) {
      return this.queryFailed(row, 'PARTIAL_ANSWER', 'the service said its answer was partial; not taken as absent, will retry');
    }
    if (other) {
      // Never created under a held reference: it would be a second payout.
      const move: RowMove = { row, from: 'UNKNOWN', ...referenceTaken(other, requested) };
      return reports.add(move, () => logReferenceTaken(logger, row, other, requested));
    }
    return {
      row,
      from: 'UNKNOWN',
      to: 'READY',
      patch: { nextAttemptAt: now },
      history: { event: 'reconciled-absent', outcome: 'NOT_FOUND', detail: 'the service has no payout for this reference; safe to create' },
    };
  }

  /** A row its batched answer did not name: decided from a query of its reference alone. */
  private async reconcileAlone(row: UnknownRow, signal: AbortSignal, reports: MoveReports): Promise<RowMove> {
    let answer: PayoutQueryAnswer;
    try {
      answer = await this.deps.service.queryByReferences([row.merchantReferenceId], signal);
    } catch (err) {
      return this.queryFailed(row, isApiError(err) ? err.code : 'ERROR', 'the query of this reference alone failed; will retry');
    }
    return (await this.reconcileRow(row, this.seenIn(answer), this.deps.clock.now(), true, reports)) as RowMove;
  }

  /** An UNKNOWN row whose reference query told nothing: asked again after a backoff. */
  private queryFailed(row: RowMove['row'] & Pick<ClaimedRow, 'createAttempts'>, outcome: string, detail: string): RowMove {
    const retryAt = this.deps.clock.now() + backoffDelay(Math.min(10, row.createAttempts + 1), this.o.retry, this.random);
    return { row, from: 'UNKNOWN', to: 'UNKNOWN', patch: { nextAttemptAt: retryAt }, history: { event: 'query-failed', outcome, detail } };
  }
}
