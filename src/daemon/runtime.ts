/** Starting and stopping a whole payoutd process: checks, lock, database, listeners (metrics, webhook, console), API, daemon, and closing in reverse. */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.js';
import type { ResolvedConfig } from '../config/index.js';
import { migrateToLatest, type Database, openStore, closeDatabase, acquireInstanceLocks, type InstanceLock } from '../store/index.js';
import { connectApi, type ApiConnection } from './services.js';
import { PayoutDaemon } from './daemon.js';
import { ServiceHealthRecorder } from './health-record.js';
import type { FaultPoint } from './fault-points.js';
// Metrics (prom-client) and the webhook receiver are imported only when the config enables them.
import type { PayoutdMetrics } from '../metrics/index.js';
import type { WebhookReceiver, WebhookReceiverOptions } from '../webhook/index.js';
import type { ConsoleServer } from '../console/index.js';
import { outboxName } from './outbox.js';
import { approvalInUse, readWebhookSecret } from '../config/index.js';
import { approvalDepsFrom, otherCurrenciesWarning } from '../approval/index.js';
import { ConfigError, PayoutdError } from '../domain/errors.js';
import { checkFolders, checkPayoutService, sayEnvironmentOverrides } from './startup-checks.js';
import { checkServiceIdentity, recordServiceOnce } from './service-identity.js';

/** Kept here too for callers of the daemon's runtime (bench scripts of older builds import it from here). */
export { openStore };

export interface RunningDaemon {
  daemon: PayoutDaemon;
  api: ApiConnection;
  db: Database;
  stop(): Promise<void>;
}

/** A listener's failure to take its address, as the option to change: its host when this machine has no such address. */
function portProblem(err: unknown, option: string): unknown {
  if (!(err instanceof PayoutdError) || !/_LISTEN_FAILED$/.test(err.code)) return err;
  if (/EADDRNOTAVAIL|ENOTFOUND|EAI_AGAIN/.test(err.message)) {
    const host = option.replace(/\.port$/, '.host');
    return new ConfigError(
      'HOST_NOT_HERE',
      `${host}: ${err.message}; this machine has no such address: choose one of its own (127.0.0.1, or 0.0.0.0 for every address)`,
    );
  }
  const held = err.message.includes('EADDRINUSE');
  return new ConfigError(
    'PORT_IN_USE',
    `${option}: ${err.message}; ${held ? `another process holds the port: stop it or choose another ${option}` : `choose another ${option}`}`,
  );
}

/**
 * The webhook receiver's options as configured (its secret read now); the process adds its clock, logger, store
 * and hooks. Every webhook.* option is passed on, so one added to the schema cannot be left out here.
 */
export function webhookReceiverOptions(
  config: ResolvedConfig,
): Omit<WebhookReceiverOptions, 'clock' | 'logger' | 'db' | 'wake' | 'onVerdict' | 'onPayoutUpdated'> {
  const { enabled: _enabled, secret: _secret, secretFile: _secretFile, ...receiver } = config.webhook;
  return { ...receiver, secret: readWebhookSecret(config), canonicalJson: config.api.canonicalJson };
}

/**
 * Starts payoutd, checking before `payoutd running` what an operator can get wrong, each with one line naming
 * the option: folders, ports (by listening on them), and the payout service.
 */
export async function startDaemon(
  config: ResolvedConfig,
  clock: Clock,
  logger: Logger,
  faultPoint?: FaultPoint,
  /** A stop requested while starting: recovery ends early, the daemon starts no loops, and stop() follows. */
  startAbort?: AbortSignal,
): Promise<RunningDaemon> {
  sayEnvironmentOverrides(config, logger);
  const unnamed = otherCurrenciesWarning(config.approval, config.limits, config.batch.rules.payoutCurrencies);
  if (unnamed) logger.warn({ option: 'approval.otherCurrencies' }, unnamed);
  checkFolders(config, clock.now());
  const lock: InstanceLock | null =
    config.database.client === 'sqlite' ? acquireInstanceLocks(config.paths.stateDir, config.databaseFile) : null;
  const db = openStore(config);
  let api: ApiConnection | null = null;
  let metrics: PayoutdMetrics | null = null;
  let webhook: WebhookReceiver | null = null;
  let consoleServer: ConsoleServer | null = null;
  let health: ServiceHealthRecorder | null = null;
  try {
    const applied = await migrateToLatest(db);
    if (applied.length > 0) logger.info({ migrations: applied }, 'database migrated');
    // Before any listener or the embedded sandbox: a start on another service than the database's is refused.
    await checkServiceIdentity(db, config);
    let daemon: PayoutDaemon | null = null;
    const Metrics = config.metrics.enabled ? (await import('../metrics/index.js')).PayoutdMetrics : null;
    const m = Metrics
      ? new Metrics({
          db,
          now: () => clock.now(),
          ready: () => daemon?.isReady() ?? false,
          serviceHealth: () => api?.breaker.health() ?? null,
        })
      : null;
    metrics = m;
    // The ports before the wait for the service: /readyz answers "starting" meanwhile.
    if (m) {
      const url = await m.listen(config.metrics.host, config.metrics.port).catch((err: unknown) => {
        throw portProblem(err, 'metrics.port');
      });
      logger.info({ url }, 'metrics, /healthz and /readyz listening');
    }
    let receiverUrl: string | null = null;
    if (config.webhook.enabled) {
      const { WebhookReceiver } = await import('../webhook/index.js');
      webhook = new WebhookReceiver({
        ...webhookReceiverOptions(config),
        clock,
        logger,
        db,
        // Deliveries before the loops run are recorded; the poller finds their payouts due when it starts.
        wake: () => daemon?.wakePoller(),
        onVerdict: m ? (verdict) => m.webhookEvents.inc({ verdict }) : undefined,
      });
      const { url } = await webhook.start().catch((err: unknown) => {
        throw portProblem(err, 'webhook.port');
      });
      receiverUrl = url;
      logger.info({ url }, 'webhook receiver listening (polling remains the safety net)');
    }
    if (config.console.enabled) {
      const c = config.console;
      const { ConsoleServer, noApprovals, approvalsThrough } = await import('../console/index.js');
      // The console decides through the same function as the CLI and approval files, recording the same audit.
      const approvals = approvalInUse(config.approval, config.limits)
        ? approvalsThrough(approvalDepsFrom(config, db, { clock, logger }))
        : noApprovals;
      consoleServer = new ConsoleServer({
        host: c.host,
        port: c.port,
        db,
        logger,
        now: () => clock.now(),
        inbox: config.paths.inbox,
        outbox: config.paths.outbox,
        stateDir: config.paths.stateDir,
        inboxIgnore: config.inbox.ignore,
        outboxNameOf: outboxName,
        approvals,
        trustedProxies: c.trustedProxies,
        userHeader: c.userHeader,
        sessionMs: c.sessionMs,
        secureCookie: c.secureCookie,
        lockout: c.lockout,
        maxUploadBytes: c.maxUploadBytes,
        refreshMs: c.refreshMs,
        pageSize: c.pageSize,
      });
      const url = await consoleServer.listen().catch((err: unknown) => {
        throw portProblem(err, 'console.port');
      });
      logger.info({ url }, 'finance console listening');
      const { listUsers } = await import('../console/index.js');
      if ((await listUsers(db, Date.now())).length === 0)
        logger.warn('the finance console has no users yet: add one with payoutd user add NAME --role ROLE');
    }
    api = await connectApi(
      config,
      clock,
      logger,
      {
        onCall: m ? (c) => m.apiLatency.observe({ endpoint: c.endpoint, outcome: c.outcome }, c.durationMs / 1000) : undefined,
        onTokenRenewed: m ? (how) => m.tokenRenewals.inc({ how }) : undefined,
      },
      'daemon',
      receiverUrl,
    );
    await checkPayoutService({
      client: api.client,
      breaker: api.breaker,
      url: api.url,
      clock,
      logger,
      waitForServiceMs: config.startup.waitForServiceMs,
      clockSkewSeconds: config.api.clockSkewSeconds,
      signal: startAbort,
    });
    if (!startAbort?.aborted) await recordServiceOnce(db, config, api.client, clock.now(), logger, startAbort);
    const instanceId = config.instance.id ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
    health = new ServiceHealthRecorder(db, api.breaker, clock, logger, {
      instanceId,
      alone: config.database.client === 'sqlite',
      refreshMs: 60_000,
    });
    await health.start();
    daemon = new PayoutDaemon(
      {
        config,
        db,
        service: api.client,
        clock,
        logger,
        onCreateOutcome: m ? (outcome) => m.creates.inc({ outcome }) : undefined,
        onBatchEvent: m ? (outcome) => m.files.inc({ outcome }) : undefined,
        onPolled: m ? (_n, lagMs) => m.pollLag.set(lagMs / 1000) : undefined,
        onNotification: m ? (channel, outcome) => m.notifications.inc({ channel, outcome }) : undefined,
        faultPoint,
      },
      {
        shutdownGraceMs: config.shutdownGraceMs,
        watch: true,
        instanceId,
      },
    );
    await daemon.start(startAbort);
    const connection = api;
    const started = daemon;
    const recorder = health;
    const receiver = webhook;
    const consoleListener = consoleServer;
    return {
      daemon: started,
      api: connection,
      db,
      async stop() {
        try {
          await consoleListener?.close();
          await receiver?.stop();
          await started.stop();
          await recorder.stop();
        } finally {
          await metrics?.close();
          await connection.close();
          await closeDatabase(db);
          lock?.release();
        }
      },
    };
  } catch (err) {
    await consoleServer?.close();
    await webhook?.stop();
    await health?.stop();
    await metrics?.close();
    await api?.close();
    await closeDatabase(db);
    lock?.release();
    throw err;
  }
}
