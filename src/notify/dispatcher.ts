/**
 * NotificationDispatcher: delivers stored batch events to the channels the
 * configuration names now (read at each pass: a SIGHUP's change applies at
 * the next). At least once: an event is marked taken by a channel only after
 * the channel took it, so a crash in between delivers it again (receivers
 * deduplicate by its id). A channel that fails is retried with backoff for
 * `notify.retryFor`, then the event is given up, logged at error and
 * counted. Each channel gets a batch's events in order: a later event waits
 * behind an earlier one still owed to that channel. It runs in its own work
 * loop: nothing it waits for holds up a payout.
 */
import type { Logger } from 'pino';
import type { ResolvedConfig } from '../config/index.js';
import { backoffDelay } from '../domain/backoff.js';
import { whileRenewing } from '../domain/lease.js';
import type { Clock } from '../domain/clock.js';
import {
  claimDueEvents,
  getBatch,
  holdEventClaims,
  settleEventDelivery,
  undeliveredEventsBefore,
  type BatchRecord,
  type ClaimedEvent,
  type Database,
} from '../store/index.js';
import { buildChannels, closeChannels, type NotificationChannel } from './channels.js';
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

/** A channel that did not take an event, and why. */
interface Failure {
  channel: string;
  error: string;
}

/** A channel an event is not offered to yet: an earlier event of its batch is still owed to it. */
interface Wait {
  channel: string;
  /** The earlier event it waits behind (the oldest). */
  behind: string;
  /** When the last of those earlier events is tried again. */
  until: number;
}

/** Events claimed per pass. */
const EVENTS_PER_PASS = 50;

export class NotificationDispatcher {
  constructor(
    private readonly deps: DispatcherDeps,
    private readonly o: DispatcherOptions,
  ) {}

  /** Delivers the events due now; returns how many were handled (the work loop's measure of work). */
  async pass(signal?: AbortSignal): Promise<number> {
    const { db, clock, logger } = this.deps;
    const events = await claimDueEvents(db, {
      instanceId: this.o.instanceId,
      leaseMs: this.o.leaseMs,
      now: clock.now(),
      limit: EVENTS_PER_PASS,
      alone: this.o.alone,
    });
    if (events.length === 0) return 0;
    // Signatures carry the wall clock: receivers compare webhook-timestamp with theirs.
    const channels = buildChannels(
      this.deps.config,
      () => Date.now(),
      (err) => logger.error({ err: deliveryErrorText(err) }, 'a notification channel cannot be used as configured; its events wait'),
    );
    // A channel that failed in this pass is not tried again for the later events of the pass: they keep their order,
    // and a receiver that is down is not called once per event.
    const failed = new Map<string, string>();
    // Deliveries one after another may outlast the lease of the events claimed together: it is renewed all along.
    const seqs = events.map((e) => e.seq);
    const renew = (): Promise<number> => holdEventClaims(db, seqs, this.o.instanceId, this.o.leaseMs, clock.now());
    try {
      await whileRenewing(this.o.leaseMs, renew, async () => {
        for (const event of events) {
          if (signal?.aborted) {
            // Stopping: let go of the claim as it was, for the next start (or another instance).
            await settleEventDelivery(this.deps.db, event.seq, this.o.instanceId, {
              state: 'PENDING',
              deliveredTo: event.deliveredTo,
              attempts: event.attempts,
              nextAttemptAt: clock.now(),
              lastError: null,
            });
            continue;
          }
          // One another instance took over (this pass stalled past its lease) is theirs to deliver now.
          if ((await holdEventClaims(db, [event.seq], this.o.instanceId, this.o.leaseMs, clock.now())) === 0) continue;
          await this.deliver(event, channels, failed, signal);
        }
      });
    } finally {
      closeChannels(channels);
    }
    return events.length;
  }

  private async deliver(
    event: ClaimedEvent,
    channels: NotificationChannel[],
    failed: Map<string, string>,
    signal?: AbortSignal,
  ): Promise<void> {
    const { db, clock, config, logger } = this.deps;
    const batch = await getBatch(db, event.batchId);
    if (!batch) {
      await this.settle(event, event.deliveredTo, [], []);
      return;
    }
    // In order per batch and channel: an event is not offered to a channel an earlier event of its batch is still
    // owed to (waiting for a retry, or failed just now in this pass); it waits behind it.
    const earlier = await undeliveredEventsBefore(db, event.batchId, event.seq);
    let snapshot: Promise<BatchSnapshot> | null = null;
    const delivered = [...event.deliveredTo];
    const failures: Failure[] = [];
    const waits: Wait[] = [];
    for (const channel of channels) {
      if (!channel.accepts(event.type) || delivered.includes(channel.name)) continue;
      const ahead = earlier.filter((e) => channel.accepts(e.type) && !e.deliveredTo.includes(channel.name));
      if (ahead.length > 0) {
        waits.push({ channel: channel.name, behind: ahead[0]!.id, until: Math.max(...ahead.map((e) => e.nextAttemptAt)) });
        logger.debug(
          { batchId: batch.id, event: event.type, eventId: event.id, channel: channel.name, behind: ahead[0]!.id },
          'notification waits behind an earlier event of its batch',
        );
        continue;
      }
      const failedBefore = failed.get(channel.name);
      if (failedBefore !== undefined) {
        failures.push({ channel: channel.name, error: failedBefore });
        continue;
      }
      const timeout = AbortSignal.timeout(config.notify.timeoutMs);
      try {
        await channel.deliver({
          event,
          batch,
          outboxName: this.deps.outboxName(batch),
          snapshot: () => (snapshot ??= batchSnapshot(db, batch, clock.now())),
          signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
        });
        delivered.push(channel.name);
        this.deps.onDelivery?.(channel.name, 'delivered');
        logger.debug({ batchId: batch.id, event: event.type, eventId: event.id, channel: channel.name }, 'notification delivered');
      } catch (err) {
        const text = deliveryErrorText(err);
        failed.set(channel.name, text);
        failures.push({ channel: channel.name, error: text });
        this.deps.onDelivery?.(channel.name, 'failed');
        logger.warn(
          { batchId: batch.id, event: event.type, eventId: event.id, channel: channel.name, err: text },
          'notification not delivered yet; will retry',
        );
      }
    }
    await this.settle(event, delivered, failures, waits);
  }

  private async settle(event: ClaimedEvent, deliveredTo: string[], failures: Failure[], waits: Wait[]): Promise<void> {
    const { db, clock, config, logger } = this.deps;
    const now = clock.now();
    const attempts = failures.length === 0 ? event.attempts : event.attempts + 1;
    const error = failures.length === 0 ? null : failures.map((f) => `${f.channel}: ${f.error}`).join('; ');
    if (error === null && waits.length === 0) {
      await settleEventDelivery(db, event.seq, this.o.instanceId, {
        state: 'DELIVERED',
        deliveredTo,
        attempts,
        nextAttemptAt: now,
        lastError: null,
      });
      return;
    }
    // retryFor is an age: an event older than it is given up at its first failure (docs/notifications.md). One that
    // still waits behind an earlier event is not: the channels it waits for have not refused it.
    if (error !== null && waits.length === 0 && now - event.createdAt >= config.notify.retryFor) {
      await settleEventDelivery(db, event.seq, this.o.instanceId, {
        state: 'GAVE_UP',
        deliveredTo,
        attempts,
        nextAttemptAt: now,
        lastError: error,
      });
      for (const f of failures) this.deps.onDelivery?.(f.channel, 'gave_up');
      logger.error(
        { batchId: event.batchId, event: event.type, eventId: event.id, attempts, retriedForMs: now - event.createdAt, err: error },
        'NOTIFICATION UNDELIVERABLE: given up after notify.retryFor',
      );
      return;
    }
    const retryAt = error === null ? now : now + backoffDelay(attempts, config.notify.retry);
    // Tried again once the events it waits behind were; one being delivered elsewhere now is looked at after a backoff step.
    const waitUntil = waits.map((w) => (w.until > now ? w.until : now + config.notify.retry.baseMs));
    const waiting = waits.map((w) => `${w.channel}: waits behind ${w.behind}, an earlier event of the batch`);
    await settleEventDelivery(db, event.seq, this.o.instanceId, {
      state: 'PENDING',
      deliveredTo,
      attempts,
      nextAttemptAt: Math.max(retryAt, ...waitUntil),
      lastError: [...(error === null ? [] : [error]), ...waiting].join('; '),
    });
  }
}
