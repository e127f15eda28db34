/**
 * NotificationDispatcher: delivers stored batch events to the channels the
 * configuration names now (read at each pass: a SIGHUP's change applies at
 * the next). At least once: an event is marked taken by a channel only after
 * the channel took it, so a crash in between delivers it again (receivers
 * deduplicate by its id). A channel that fails is retried with backoff for
 * `notify.retryFor`, then the event is given up, logged at error and
 * counted. It runs in its own work loop: nothing it waits for holds up a
 * payout.
 */
import type { Logger } from 'pino';
import type { ResolvedConfig } from '../config/index.js';
import { backoffDelay } from '../domain/backoff.js';
import type { Clock } from '../domain/clock.js';
import { claimDueEvents, getBatch, settleEventDelivery, type BatchRecord, type ClaimedEvent, type Database } from '../store/index.js';
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
    try {
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
        await this.deliver(event, channels, failed, signal);
      }
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
      await this.settle(event, event.deliveredTo, []);
      return;
    }
    let snapshot: Promise<BatchSnapshot> | null = null;
    const delivered = [...event.deliveredTo];
    const failures: Failure[] = [];
    for (const channel of channels) {
      if (!channel.accepts(event.type) || delivered.includes(channel.name)) continue;
      const earlier = failed.get(channel.name);
      if (earlier !== undefined) {
        failures.push({ channel: channel.name, error: earlier });
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
    await this.settle(event, delivered, failures);
  }

  private async settle(event: ClaimedEvent, deliveredTo: string[], failures: Failure[]): Promise<void> {
    const { db, clock, config, logger } = this.deps;
    const now = clock.now();
    const attempts = event.attempts + 1;
    const error = failures.length === 0 ? null : failures.map((f) => `${f.channel}: ${f.error}`).join('; ');
    if (error === null) {
      await settleEventDelivery(db, event.seq, this.o.instanceId, {
        state: 'DELIVERED',
        deliveredTo,
        attempts,
        nextAttemptAt: now,
        lastError: null,
      });
      return;
    }
    if (now - event.createdAt >= config.notify.retryFor) {
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
    const next = now + backoffDelay(attempts, config.notify.retry);
    await settleEventDelivery(db, event.seq, this.o.instanceId, {
      state: 'PENDING',
      deliveredTo,
      attempts,
      nextAttemptAt: next,
      lastError: error,
    });
  }
}
