/**
 * NotificationDispatcher: delivers stored batch events to the channels the
 * configuration names now (followed at each pass: a SIGHUP's change applies
 * at the next). Each channel is a lane of its own: its own delivery record of
 * each event it takes (made just after the event is stored, or for every
 * pending event when the channel is added), its own claims, attempts and
 * backoff, so a receiver that is slow or down delays no other channel. At
 * least once: an event is marked taken by a channel only after the channel
 * took it, so a crash in between delivers it again to that channel alone
 * (receivers deduplicate by its id). A channel that fails is retried with
 * backoff for `notify.retryFor`, then the event is given up for it, logged at
 * error and counted. Each channel gets a batch's events in order: a later
 * event waits behind an earlier one still owed to that channel. It runs in
 * loops of its own: nothing it waits for holds up a payout.
 */
import type { Logger } from 'pino';
import type { ResolvedConfig } from '../config/index.js';
import { backoffDelay, type BackoffPolicy } from '../domain/backoff.js';
import { whileRenewing } from '../domain/lease.js';
import type { Clock } from '../domain/clock.js';
import {
  channelsOwing,
  claimChannelEvents,
  dropChannelRecords,
  eventsOwedBefore,
  getBatch,
  holdChannelClaims,
  makeDeliveryRecords,
  owePendingEvents,
  releaseChannelClaim,
  settleChannelDelivery,
  type BatchRecord,
  type ChannelOutcome,
  type ChannelScope,
  type ClaimedEvent,
  type Database,
} from '../store/index.js';
import { closeChannel, configuredChannels, type ChannelSpec, type NotificationChannel } from './channels.js';
import { deliveryErrorText } from './errors.js';
import { batchSnapshot, type BatchSnapshot } from './payload.js';

export type DeliveryOutcomeLabel = 'delivered' | 'failed' | 'gave_up';

export interface DispatcherDeps {
  db: Database;
  /** The running configuration (its `notify` options change on SIGHUP). */
  config: ResolvedConfig;
  clock: Clock;
  logger: Logger;
  /** The outbox name of a batch's files (src/daemon/outbox.ts). */
  outboxName(batch: BatchRecord): string;
  onDelivery?: (channel: string, outcome: DeliveryOutcomeLabel) => void;
}

export interface DispatcherOptions {
  instanceId: string;
  /** How long a claimed event is this instance's before another may deliver it. */
  leaseMs: number;
  /** The only process on its database (SQLite): a claim left by a killed process is not waited for. */
  alone: boolean;
}

/** Events a channel claims per pass. */
const EVENTS_PER_PASS = 50;
/** Events whose delivery records are made per pass. */
const RECORDED_PER_PASS = 500;

/**
 * After a failed attempt: tried again after a backoff, or given up once the event is `retryFor` old (an age, not a
 * number of tries: docs/notifications.md).
 */
export function afterFailure(
  attempt: { attempts: number; createdAt: number; error: string },
  now: number,
  notify: { retry: BackoffPolicy; retryFor: number },
): ChannelOutcome & { lastError: string } {
  const attempts = attempt.attempts + 1;
  if (now - attempt.createdAt >= notify.retryFor) return { state: 'GAVE_UP', attempts, nextAttemptAt: now, lastError: attempt.error };
  return { state: 'PENDING', attempts, nextAttemptAt: now + backoffDelay(attempts, notify.retry), lastError: attempt.error };
}

/**
 * When a channel waiting behind earlier events of a batch looks again: once the last of them is tried again. One due
 * now is being delivered (by another instance) and is looked at after a backoff step.
 */
export function waitUntil(ahead: readonly { nextAttemptAt: number }[], now: number, baseMs: number): number {
  return Math.max(...ahead.map((e) => (e.nextAttemptAt > now ? e.nextAttemptAt : now + baseMs)));
}

/** Why a lane's signal aborted: payoutd stopping, or its channel removed. */
function abortReason(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason.message : String(reason);
}

function scopeOf(spec: ChannelSpec): ChannelScope {
  return { name: spec.name, types: spec.types };
}

function sameTypes(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((t) => b.includes(t));
}

/** What following the configuration changes: the channels whose records to drop, and those to owe every pending event. */
export function channelChanges(
  configured: readonly ChannelScope[],
  known: ReadonlyMap<string, ChannelScope>,
  leftOwing: readonly string[],
): { drop: string[]; owe: ChannelScope[] } {
  const names = new Set(configured.map((c) => c.name));
  const drop = [...new Set([...known.keys(), ...leftOwing])].filter((n) => !names.has(n));
  const owe = configured.filter((c) => {
    const before = known.get(c.name);
    return !before || !sameTypes(before.types, c.types);
  });
  return { drop, owe };
}

export class NotificationDispatcher {
  /** The lanes delivering now, by channel: a channel runs one pass at a time in this process. */
  private readonly busy = new Set<string>();
  /** The channels whose records this process made owed (followed from the configuration by `prepare`). */
  private readonly known = new Map<string, ChannelScope>();
  /** Whether channels a previous configuration left owing were looked for (once, at the first `prepare`). */
  private followed = false;

  constructor(
    private readonly deps: DispatcherDeps,
    private readonly o: DispatcherOptions,
  ) {}

  /** The names of the channels followed now, one lane each. */
  channelNames(): string[] {
    return [...this.known.keys()];
  }

  /**
   * What the daemon's notify loop does before the lanes: follows the configuration (a channel added owes every
   * pending event, one removed owes none), then makes each channel's records of the events stored since. Returns how
   * many events it recorded.
   */
  async prepare(): Promise<number> {
    await this.followChannels();
    return makeDeliveryRecords(this.deps.db, [...this.known.values()], this.deps.clock.now(), RECORDED_PER_PASS);
  }

  /**
   * One pass of one channel's lane: its due events, oldest first. Returns how many it handled; 0 when the channel is
   * no longer followed or its lane is busy.
   */
  async lanePass(name: string, signal?: AbortSignal): Promise<number> {
    const spec = configuredChannels(this.deps.config).find((c) => c.name === name);
    if (!spec || !this.known.has(name) || this.busy.has(name)) return 0;
    this.busy.add(name);
    try {
      return await this.deliverDue(spec, signal);
    } finally {
      this.busy.delete(name);
    }
  }

  private async followChannels(): Promise<void> {
    const { db, config } = this.deps;
    const configured = configuredChannels(config).map(scopeOf);
    // At the first pass, the channels a configuration before this one left owing, which may be configured no more.
    const left = this.followed ? [] : await channelsOwing(db);
    this.followed = true;
    const { drop, owe } = channelChanges(configured, this.known, left);
    for (const name of drop) {
      await dropChannelRecords(db, name);
      this.known.delete(name);
    }
    for (const channel of owe) {
      await owePendingEvents(db, channel);
      this.known.set(channel.name, channel);
    }
  }

  private async deliverDue(spec: ChannelSpec, signal?: AbortSignal): Promise<number> {
    const { db, clock, logger } = this.deps;
    const { instanceId, leaseMs } = this.o;
    const scope = scopeOf(spec);
    const events = await claimChannelEvents(db, {
      channel: scope.name,
      instanceId,
      leaseMs,
      now: clock.now(),
      limit: EVENTS_PER_PASS,
      alone: this.o.alone,
    });
    if (events.length === 0) return 0;
    // Signatures carry the wall clock: receivers compare webhook-timestamp with theirs.
    const channel = spec.open(
      () => Date.now(),
      (err) => logger.error({ err: deliveryErrorText(err) }, 'a notification channel cannot be used as configured; its events wait'),
    );
    // A channel that failed in this pass is not tried again for the later events of the pass: they keep their order,
    // and a receiver that is down is not called once per event.
    let failed: string | null = null;
    // Deliveries one after another may outlast the lease of the events claimed together: it is renewed all along.
    const seqs = events.map((e) => e.seq);
    const renew = (): Promise<number> => holdChannelClaims(db, spec.name, seqs, instanceId, leaseMs, clock.now());
    try {
      await whileRenewing(leaseMs, renew, async () => {
        for (const event of events) {
          if (signal?.aborted) {
            // Stopping: let go of the claim as it was, for the next start (or another instance).
            await releaseChannelClaim(db, event.seq, spec.name, instanceId);
            continue;
          }
          // One another instance took over (this pass stalled past its lease) is theirs to deliver now.
          if ((await holdChannelClaims(db, spec.name, [event.seq], instanceId, leaseMs, clock.now())) === 0) continue;
          failed = await this.deliverOne(event, channel, scope, failed, signal);
        }
      });
    } finally {
      closeChannel(channel);
    }
    return seqs.length;
  }

  /** Offers one event to the channel and records what came of it; returns the channel's failure in this pass, if any. */
  private async deliverOne(
    event: ClaimedEvent,
    channel: NotificationChannel,
    scope: ChannelScope,
    failedBefore: string | null,
    signal?: AbortSignal,
  ): Promise<string | null> {
    const { db, clock, config, logger } = this.deps;
    // The event is done once no channel's record of it is owed: a channel a SIGHUP added meanwhile has one.
    const settle = async (o: ChannelOutcome): Promise<void> => {
      await settleChannelDelivery(db, event.seq, scope.name, this.o.instanceId, o);
    };
    const log = { batchId: event.batchId, event: event.type, eventId: event.id, channel: scope.name };
    const batch = await getBatch(db, event.batchId);
    if (!batch) {
      // Its batch is gone: nothing is left to tell.
      await settle({ state: 'DELIVERED', attempts: event.attempts, nextAttemptAt: clock.now(), lastError: null });
      return failedBefore;
    }
    // In order per batch and channel: an event is not offered to a channel an earlier event of its batch is still
    // owed to (waiting for a retry, or failed just now in this pass); it waits behind it. Waiting is no attempt.
    const ahead = await eventsOwedBefore(db, scope.name, event.batchId, event.seq);
    if (ahead.length > 0) {
      const behind = ahead[0]!.id;
      logger.debug({ ...log, behind }, 'notification waits behind an earlier event of its batch');
      await settle({
        state: 'PENDING',
        attempts: event.attempts,
        nextAttemptAt: waitUntil(ahead, clock.now(), config.notify.retry.baseMs),
        lastError: `waits behind ${behind}, an earlier event of the batch`,
      });
      return failedBefore;
    }
    let error = failedBefore;
    if (error === null) {
      const timeout = AbortSignal.timeout(config.notify.timeoutMs);
      try {
        let snapshot: Promise<BatchSnapshot> | null = null;
        await channel.deliver({
          event,
          batch,
          outboxName: this.deps.outboxName(batch),
          snapshot: () => (snapshot ??= batchSnapshot(db, batch, clock.now())),
          signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
        });
        await settle({ state: 'DELIVERED', attempts: event.attempts, nextAttemptAt: clock.now(), lastError: null });
        this.deps.onDelivery?.(scope.name, 'delivered');
        logger.debug(log, 'notification delivered');
        return null;
      } catch (err) {
        if (signal?.aborted) {
          // Cut short by a stop or the channel's removal, not refused: no failed attempt, the event owed as it was.
          await releaseChannelClaim(db, event.seq, scope.name, this.o.instanceId);
          logger.info({ ...log, why: abortReason(signal) }, 'notification attempt cut short; not counted as failed');
          return failedBefore;
        }
        error = deliveryErrorText(err);
        this.deps.onDelivery?.(scope.name, 'failed');
        logger.warn({ ...log, err: error }, 'notification not delivered yet; will retry');
      }
    }
    const now = clock.now();
    const next = afterFailure({ attempts: event.attempts, createdAt: event.createdAt, error }, now, config.notify);
    await settle(next);
    if (next.state === 'GAVE_UP') {
      this.deps.onDelivery?.(scope.name, 'gave_up');
      logger.error(
        { ...log, attempts: next.attempts, retriedForMs: now - event.createdAt, err: `${scope.name}: ${error}` },
        'NOTIFICATION UNDELIVERABLE: given up after notify.retryFor',
      );
    }
    return error;
  }
}
