/**
 * PayoutdMetrics: Prometheus metrics with /healthz and /readyz on a small listener. Counters are fed by hooks;
 * row counts and the service's reachability are read at scrape time; /readyz says why it is not ready.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { PayoutdError } from '../domain/errors.js';
import { PAYOUT_SERVICE, serviceHealthLine, type ServiceHealth } from '../domain/service-health.js';
import {
  countBatchesByState,
  countEventsByDelivery,
  oldestHoldSince,
  oldestPendingCreatedAt,
  pingDatabase,
  stateCountsOfAllBatches,
  type Database,
} from '../store/index.js';

export interface MetricsSources {
  db: Database;
  now(): number;
  /** True once the daemon finished its start-up recovery. */
  ready(): boolean;
  /** The payout service's reachability (its circuit breaker); absent or null: not known yet. */
  serviceHealth?: () => ServiceHealth | null;
}

/** A gauge of counts by one label, read from the database at each scrape (labels no longer counted disappear). */
function countsGauge(
  registers: Registry[],
  name: string,
  help: string,
  label: string,
  read: () => Promise<Partial<Record<string, number>>>,
): void {
  new Gauge({
    name,
    help,
    labelNames: [label],
    registers,
    async collect() {
      const counts = await read();
      this.reset();
      for (const [value, n] of Object.entries(counts)) if (n !== undefined) this.set({ [label]: value }, n);
    },
  });
}

export class PayoutdMetrics {
  readonly registry = new Registry();
  readonly files: Counter<'outcome'>;
  readonly creates: Counter<'outcome'>;
  readonly apiLatency: Histogram<'endpoint' | 'outcome'>;
  readonly tokenRenewals: Counter<'how'>;
  readonly webhookEvents: Counter<'verdict'>;
  readonly notifications: Counter<'channel' | 'outcome'>;
  readonly pollLag: Gauge;
  private server: Server | null = null;

  constructor(private readonly sources: MetricsSources) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'payoutd_' });
    this.files = new Counter({
      name: 'payoutd_files_total',
      help: 'Batch files by outcome (seen, accepted, rejected, duplicate, completed)',
      labelNames: ['outcome'],
      registers,
    });
    this.creates = new Counter({
      name: 'payoutd_creates_total',
      help: 'Payout creates by outcome (OK, UNKNOWN, or the error code)',
      labelNames: ['outcome'],
      registers,
    });
    this.apiLatency = new Histogram({
      name: 'payoutd_api_request_duration_seconds',
      help: 'Payout API call latency by endpoint and outcome',
      labelNames: ['endpoint', 'outcome'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.tokenRenewals = new Counter({
      name: 'payoutd_token_renewals_total',
      help: 'Credential renewals (acquire, refresh)',
      labelNames: ['how'],
      registers,
    });
    this.webhookEvents = new Counter({
      name: 'payoutd_webhook_events_total',
      help: 'Webhook deliveries by verdict',
      labelNames: ['verdict'],
      registers,
    });
    this.notifications = new Counter({
      name: 'payoutd_notification_deliveries_total',
      help: 'Deliveries of batch events to notification channels by outcome (delivered, failed: retried later, gave_up: after notify.retryFor)',
      labelNames: ['channel', 'outcome'],
      registers,
    });
    this.pollLag = new Gauge({
      name: 'payoutd_poll_lag_seconds',
      help: 'How late the last poll pass was against the payouts it queried',
      registers,
    });
    const db = sources.db;
    countsGauge(registers, 'payoutd_rows', 'Payout rows by state', 'state', () => stateCountsOfAllBatches(db));
    countsGauge(
      registers,
      'payoutd_batches',
      'Batches by state as payoutd status shows it: an ACTIVE batch under a hold counts as HELD, or AWAITING_APPROVAL; one an operator cancelled as CANCELLED',
      'state',
      () => countBatchesByState(db),
    );
    new Gauge({
      name: 'payoutd_oldest_hold_age_seconds',
      help: 'How long the longest-held ACTIVE batch has been held (0 when none is)',
      registers,
      async collect() {
        const since = await oldestHoldSince(db);
        this.set(since === null ? 0 : Math.max(0, (sources.now() - since) / 1000));
      },
    });
    countsGauge(
      registers,
      'payoutd_batch_events',
      'Batch events by delivery state (PENDING: owed to a channel; GAVE_UP: undeliverable within notify.retryFor)',
      'delivery',
      () => countEventsByDelivery(db),
    );
    const health = (): ServiceHealth | null => sources.serviceHealth?.() ?? null;
    new Gauge({
      name: 'payoutd_service_up',
      help: 'Whether the service can be reached: 1, or 0 while its circuit breaker is open (sending and polling paused)',
      labelNames: ['service'],
      registers,
      collect() {
        const h = health();
        if (h) this.set({ service: PAYOUT_SERVICE }, h.state === 'closed' ? 1 : 0);
      },
    });
    new Gauge({
      name: 'payoutd_service_down_seconds',
      help: 'How long the service has been unreachable (0 while it is reachable)',
      labelNames: ['service'],
      registers,
      collect() {
        const h = health();
        if (h) this.set({ service: PAYOUT_SERVICE }, h.state === 'closed' ? 0 : Math.max(0, (sources.now() - h.since) / 1000));
      },
    });
    new Gauge({
      name: 'payoutd_oldest_pending_payout_age_seconds',
      help: 'Age of the oldest payout still PENDING at the service (0 when none)',
      registers,
      async collect() {
        const at = await oldestPendingCreatedAt(db);
        this.set(at ? Math.max(0, (sources.now() - at) / 1000) : 0);
      },
    });
  }

  /** Serves /metrics, /healthz and /readyz. A port that cannot be had (in use, not allowed) rejects with METRICS_LISTEN_FAILED. */
  async listen(host: string, port: number): Promise<string> {
    const server = createServer((req, res) => {
      void this.handle(req.url ?? '/', req.method ?? 'GET').then(({ status, type, body }) => {
        res.writeHead(status, { 'content-type': type });
        res.end(body);
      });
    });
    await new Promise<void>((resolve, reject) => {
      const onError = (err: NodeJS.ErrnoException): void =>
        reject(new PayoutdError('METRICS_LISTEN_FAILED', `cannot listen on ${host}:${port}: ${err.code ?? err.message}`));
      server.once('error', onError);
      server.listen(port, host, () => {
        server.off('error', onError);
        resolve();
      });
    });
    // Later server errors (a client's broken connection) are the client's business, never a crash of the daemon.
    server.on('error', () => undefined);
    this.server = server;
    const addr = server.address() as AddressInfo;
    return `http://${host}:${addr.port}`;
  }

  private async handle(url: string, method: string): Promise<{ status: number; type: string; body: string }> {
    if (method !== 'GET') return { status: 405, type: 'text/plain', body: 'GET only\n' };
    const path = url.split('?')[0];
    try {
      if (path === '/metrics') return { status: 200, type: this.registry.contentType, body: await this.registry.metrics() };
      if (path === '/healthz') return { status: 200, type: 'text/plain', body: 'ok\n' };
      if (path === '/readyz') {
        await pingDatabase(this.sources.db);
        if (!this.sources.ready()) return { status: 503, type: 'text/plain', body: 'starting\n' };
        const h = this.sources.serviceHealth?.() ?? null;
        const down = h === null ? null : serviceHealthLine(h, this.sources.now());
        return down === null
          ? { status: 200, type: 'text/plain', body: 'ready\n' }
          : { status: 503, type: 'text/plain', body: `${down}\n` };
      }
      return { status: 404, type: 'text/plain', body: 'not found\n' };
    } catch {
      // The database is unreachable: not ready, and say no more than that.
      return { status: 503, type: 'text/plain', body: 'database unavailable\n' };
    }
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    this.server = null;
  }
}
