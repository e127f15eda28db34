/**
 * The daemon's configuration: every option with its default and what it is for. Options marked (contract) are
 * shared/design/contract.md's answers where the API spec is silent: change them to match a deployment.
 */
import { z } from 'zod';
import { isKnownTimeZone } from '../domain/time-zone.js';
import { isUrlPath } from '../domain/url-path.js';
import { balanceShapeSchema, payoutQueryShapeSchema } from '../domain/wire-shapes.js';
import { batchFormatSchema } from '../ingest/csv/options.js';
import { validationRulesSchema } from '../ingest/rules/options.js';
import { approvalSchema, decimalAmount, limitsSchema } from './approval-schema.js';
import { BATCH_EVENT_TYPES } from '../domain/batch-events.js';
import { webhookSchemeFields } from '../signing/webhook-scheme.js';

const ms = (def: number) => z.number().int().min(0).default(def);
const positive = (def: number) => z.number().int().min(1).default(def);
const PORT = { error: 'must be a port number 1-65535 (or 0 for any free port)' };
const port = (def: number) => z.number().int(PORT).min(0, PORT).max(65535, PORT).default(def);

/** Batch event types a channel may be limited to (src/domain/batch-events.ts). */
const eventTypes = z.array(z.enum(BATCH_EVENT_TYPES)).optional();

/** Outgoing notifications of batch events (docs/notifications.md); all live: a SIGHUP applies a change at the next pass. */
export const notifySchema = z
  .object({
    /**
     * A progress event per ACTIVE batch at most this often: when `percent` more of its rows are final since
     * the last one, or `ms` passed and some moved.
     */
    progressEvery: z.object({ ms: positive(600_000), percent: z.number().positive().max(100).default(10) }).prefault({}),
    /** How long (ms) an event is retried on a channel that does not take it before it is given up (logged at error). 24 h. */
    retryFor: positive(86_400_000),
    /** Backoff between attempts of a channel that failed. */
    retry: z.object({ baseMs: positive(5_000), maxMs: positive(600_000) }).prefault({}),
    /** Each delivery attempt gives up after this long. */
    timeoutMs: positive(10_000),
    /**
     * HTTP endpoints of the merchant's own systems, each sent every event (or those in `events`) as a signed
     * POST (Standard Webhooks). The secret (`whsec_…`) from `secretFile` or the systemd credential `secretCredential`.
     */
    webhooks: z
      .array(
        z.object({
          url: z.url({ protocol: /^https?$/ }),
          /** Names the endpoint in logs, metrics and delivery records; default its host (webhookName). Unique. */
          name: z.string().min(1).optional(),
          secretFile: z.string().optional(),
          secretCredential: z.string().optional(),
          events: eventTypes,
        }),
      )
      .default([]),
    /** Mail through an SMTP server (STARTTLS), plain text. Password from `passwordFile` or the credential `passwordCredential`. */
    email: z
      .object({
        host: z.string().min(1),
        port: port(587),
        /** Refuse to send unless the server upgrades to TLS (STARTTLS); false only for a server on this host. */
        startTls: z.boolean().default(true),
        /** CA certificate (PEM) of a server with a private certificate. */
        caFile: z.string().optional(),
        user: z.string().optional(),
        passwordFile: z.string().optional(),
        passwordCredential: z.string().optional(),
        from: z.string().min(3),
        to: z.array(z.string().min(3)).min(1),
        /** Default: every event but progress. */
        events: eventTypes,
      })
      .optional(),
    /** Write `<batch>.status.csv` (and `.xlsx` with outbox.xlsx) in the outbox on each event. */
    statusFiles: z.boolean().default(true),
  })
  .prefault({});

/**
 * A webhook's name, `erp.example.com:8443` when none is given: the host only, as a path or query may carry a
 * token and the name is logged and a metrics label.
 */
export function webhookName(t: { url: string; name?: string | undefined }): string {
  return t.name ?? new URL(t.url).host;
}

const codeTreatment = z.object({
  kind: z.enum(['retryable', 'rejected', 'ambiguous', 'auth']),
  waitForBalance: z.boolean().optional(),
});

export const apiSchema = z
  .object({
    /** Base URL of the payout service, or "embedded" for the built-in sandbox. */
    baseUrl: z.string().default('embedded'),
    merchantCode: z.string().optional(),
    /** The SvcApiKey. Prefer apiKeyFile, PAYOUTD_API_KEY or the systemd credential "api-key". */
    apiKey: z.string().optional(),
    apiKeyFile: z.string().optional(),
    /** PKCS#8 PEM, mode 0600. Or the systemd credential "merchant-key". */
    privateKeyFile: z.string().optional(),
    auth: z
      .object({
        /** (contract) "standard" (spec 5.2-5.5) or "client-id" (spec 5.6). */
        mode: z.enum(['standard', 'client-id']).default('standard'),
        clientId: z.string().optional(),
        businessId: z.string().optional(),
        grantType: z.string().default('client_credentials'),
        /** Renew credentials this long before the accessToken expires. */
        refreshBeforeExpirySeconds: positive(120),
      })
      .prefault({}),
    /** (contract) sort keys when minifying bodies for signatures. */
    canonicalJson: z.object({ sortKeys: z.boolean().default(true) }).prefault({}),
    /** (contract) how secretKey text becomes HMAC key bytes. */
    hmacKeyEncoding: z.enum(['utf8', 'base64', 'hex']).default('utf8'),
    /** Every call gives up after this long; a create that times out is resolved by query. */
    timeoutMs: positive(15_000),
    /** (contract) How far X-TIMESTAMP may be from the service's clock; a clock further off stops payoutd at start. */
    clockSkewSeconds: positive(300),
    /** Retries of calls safe to repeat while the service is reachable; a 429 / 1429 pauses every business call. */
    retry: z.object({ maxAttempts: positive(4), baseMs: positive(250), maxMs: positive(10_000) }).prefault({}),
    /**
     * The circuit breaker: after `failureThreshold` calls in a row found the service unreachable, sending and
     * polling pause and one balance query probes it at each step of the `probe` backoff until it answers.
     */
    breaker: z
      .object({
        failureThreshold: positive(5),
        probe: z.object({ baseMs: positive(1000), maxMs: positive(60_000) }).prefault({}),
      })
      .prefault({}),
    /** (contract) ids per payout query call. */
    queryMaxIds: positive(100),
    /** (contract) the payout query's by-payoutId request field, the answer's list field and each record's fields. */
    payoutQuery: payoutQueryShapeSchema,
    /** (contract) the balance listing's path, the answer's list field and each entry's fields. */
    balance: balanceShapeSchema,
    /** (contract) how business codes are treated; merged over the built-in table. */
    businessCodes: z.record(z.string(), codeTreatment).default({}),
  })
  .prefault({});

/** The folders payoutd needs: each must exist (unless `paths.create`) and be writable at start. */
export const FOLDER_OPTIONS = ['inbox', 'outbox', 'stateDir'] as const;

export const configSchema = z
  .object({
    api: apiSchema,
    paths: z
      .object({
        inbox: z.string().default('./var/inbox'),
        outbox: z.string().default('./var/outbox'),
        /** Database, claimed and rejected files. On the inbox's filesystem: a file is claimed by a rename. */
        stateDir: z.string().default('./var/state'),
        /** Approval files (`<batch id>.approve`/`.reject`, docs/approval.md); default `approvals` beside the inbox. Taken by a rename. */
        approvals: z.string().optional(),
        /** Create missing folders at start. Default: yes without a config file, no with one (a misspelled path?). */
        create: z.boolean().optional(),
      })
      .prefault({}),
    database: z
      .object({
        client: z.enum(['sqlite', 'pg']).default('sqlite'),
        /** SQLite file; default <stateDir>/payoutd.sqlite. */
        filename: z.string().optional(),
        /** PostgreSQL URL (client pg). */
        url: z.string().optional(),
        poolMax: positive(10),
        busyTimeoutMs: positive(5000),
        synchronous: z.enum(['FULL', 'NORMAL']).default('FULL'),
      })
      .prefault({}),
    inbox: z
      .object({
        /** Size and mtime unchanged this long before a file is taken, and 3 times the longest pause seen while it grew. */
        stableForMs: ms(5000),
        /** The longest wait the pauses of an upload can impose (never below stableForMs): 10 minutes. */
        maxStableForMs: positive(600_000),
        /** A file whose last byte is not a line break waits this long unless x.csv.done, uploaded after it, is present. */
        unterminatedStableForMs: ms(600_000),
        /**
         * A taken file is watched this long (the sender's SFTP session can still write to it): a change holds a
         * batch not yet final, and a notice and a remainder file go to the outbox.
         */
        watchTakenForMs: ms(86_400_000),
        /** Full rescan of the inbox; watcher events are only hints. */
        rescanIntervalMs: positive(30_000),
        /** Take x.csv only once the sender wrote x.csv.done after it (an older marker is ignored). */
        requireDoneMarker: z.boolean().default(false),
        /** Poll the folder (network shares such as NFS, where inotify sees nothing). */
        usePolling: z.boolean().default(false),
        /** Extra name patterns (globs on the base name) never taken. */
        ignore: z.array(z.string()).default([]),
      })
      .prefault({}),
    batch: z
      .object({
        /** reject-file: nothing of a file with an invalid row is paid. skip-rows: valid rows go ahead. */
        onInvalidRows: z.enum(['reject-file', 'skip-rows']).default('reject-file'),
        /** CSV format options (docs/csv-format.md). */
        format: batchFormatSchema.prefault({}),
        /** Validation rules (docs/csv-format.md). */
        rules: validationRulesSchema.prefault({}),
        balanceCheck: z
          .object({
            /** Hold a batch whose estimated cost exceeds the stablecoin balance. */
            enabled: z.boolean().default(true),
            /** Added to the amounts' estimate at the indicative rates, for rate moves, percent. */
            bufferPercent: z.number().nonnegative().default(2),
            /**
             * The fee one payout costs, per stablecoin (decimal text, in that coin). The estimate counts the larger of
             * it and the largest fee of recent payouts in that coin; the service publishes no fee schedule.
             */
            feePerPayout: z
              .record(z.string().regex(/^[A-Z][A-Z0-9]{1,9}$/), decimalAmount, {
                error: (issue) => (issue.code === 'invalid_key' ? 'a key must be an upper-case stablecoin code such as USDT' : undefined),
              })
              .default(() => ({})),
            /** How often a held batch is re-checked. */
            recheckMs: positive(60_000),
          })
          .prefault({}),
        /**
         * A batch whose file's reading failed this many times in a row the same way in the reader (not the disk, and
         * never the store or a lost lease, which are tried without end) is refused as READ_FAILED.
         */
        readRetry: z.object({ maxAttempts: positive(3) }).prefault({}),
      })
      .prefault({}),
    submit: z
      .object({
        concurrency: positive(8),
        retry: z.object({ baseMs: positive(1000), maxMs: positive(300_000) }).prefault({}),
        insufficientBalanceHoldMs: positive(60_000),
        /**
         * An unknown create is sent again only if its reference is still absent this long after the outcome became
         * unknown: a service may take a create in well after the client gave up on it. At least 10 s and more than
         * api.timeoutMs (src/config/load.ts), unless unsafeShortGrace.
         */
        notFoundGraceMs: ms(60_000),
        /**
         * Test sandboxes only: accept a notFoundGraceMs under that bound, so a test need not wait out a real grace.
         * Against a service that takes a create in late, it pays the row twice.
         */
        unsafeShortGrace: z.boolean().default(false),
        reconcileBatchSize: positive(100),
      })
      .prefault({}),
    poll: z
      .object({
        /** How often the poller wakes to look for due payouts. */
        tickMs: positive(1000),
        firstPollDelayMs: ms(2000),
        minIntervalMs: positive(2000),
        maxIntervalMs: positive(300_000),
        staleAfterMs: positive(24 * 3600 * 1000),
        maxCallsPerPass: positive(1000),
        /** Query calls on the wire at once (the next due payouts are claimed while earlier calls are out). */
        concurrency: positive(4),
        /** While creates are being sent, polls wait (creates come first), but never longer than this past due. */
        deferWhileSendingMs: ms(30_000),
        /**
         * When most payouts of one answer have settled, ask about the rest of their batch at once, at most once per
         * minIntervalMs per batch, and again while most of what was asked came back settled.
         */
        settlementSweep: z.boolean().default(true),
      })
      .prefault({}),
    outbox: z
      .object({
        /** UTF-8 BOM on CSV files, so Excel reads accents right. */
        bom: z.boolean().default(true),
        /**
         * Also write an .xlsx beside each ack, result, summary, retry file and report (typed cells: accounts and
         * references as text, amounts as numbers, times as dates).
         */
        xlsx: z.boolean().default(true),
        /** IANA time zone (`Asia/Manila`) of the .xlsx date cells, named in their headers. The CSV files stay UTC. */
        timeZone: z.string().refine(isKnownTimeZone, { error: 'must be an IANA time zone name such as UTC or Asia/Manila' }).default('UTC'),
        /** For batches with CANCELLED rows, write a ready-to-drop retry CSV. */
        retryFiles: z.boolean().default(true),
      })
      .prefault({}),
    retention: z
      .object({
        /**
         * Days a finished batch is kept whole: then its archived input (`<stateDir>/archive/`), its outbox files and
         * its row details go, each reference and payout id kept (an old reference is still refused as a duplicate).
         * Unset (the default): everything is kept forever.
         */
        days: z.number().int().min(1).optional(),
        /** How often the daemon prunes, when `days` is set. An hour. */
        pruneEveryMs: positive(3_600_000),
      })
      .prefault({}),
    metrics: z
      .object({
        /** Serve /metrics (Prometheus), /healthz and /readyz. */
        enabled: z.boolean().default(false),
        host: z.string().default('127.0.0.1'),
        port: port(9464),
      })
      .prefault({}),
    webhook: z
      .object({
        /** Listen for payout.updated webhooks (spec 6); polling stays the safety net. */
        enabled: z.boolean().default(false),
        host: z.string().default('127.0.0.1'),
        port: port(8443),
        path: z.string().default('/payoutd/webhook'),
        /**
         * The path the payout service posts to and signs, when a reverse proxy rewrites it to `path`
         * (docs/webhooks.md). Default: the request's path.
         */
        signedPath: z.string().refine(isUrlPath, { error: 'must be a URL path starting with / (no query)' }).optional(),
        /** The merchant's webhook secret; prefer secretFile or the systemd credential "webhook-secret". */
        secret: z.string().optional(),
        secretFile: z.string().optional(),
        /**
         * (contract) How deliveries are signed: `keyEncoding`, `headers: {timestamp, nonce, signature}`,
         * `timestampUnit` (seconds | milliseconds) and `stringToSign: {parts, separator}` (docs/webhooks.md).
         */
        ...webhookSchemeFields,
        /** Serve HTTPS directly; without it, run behind a TLS-terminating reverse proxy. */
        tls: z.object({ certFile: z.string(), keyFile: z.string() }).optional(),
        maxBodyBytes: positive(65_536),
        timestampSkewSeconds: positive(300),
        nonceWindowSeconds: positive(600),
        /** Delivered eventIds are remembered this long for deduplication (the sender retries for minutes). */
        eventRetentionDays: positive(30),
      })
      .prefault({}),
    /** Approval before money moves: who approves which batches, and for how long they wait (docs/approval.md). */
    approval: approvalSchema,
    /** Per-currency limits: largest row, largest batch, rolling 24 hours (docs/approval.md). */
    limits: limitsSchema,
    /** The finance console (docs/console.md): batches, uploads, approvals and downloads in the browser. */
    console: z
      .object({
        /** Serve the console. Meant to sit behind the organisation's TLS reverse proxy. */
        enabled: z.boolean().default(false),
        host: z.string().default('127.0.0.1'),
        port: port(8480),
        /**
         * Addresses (as the console sees the connection's peer) of reverse proxies whose user header is believed,
         * and whose last X-Forwarded-For entry is the client a sign-in's failures are counted for: each must set both
         * headers itself, never pass on the browser's (docs/console.md). Empty: neither header is read.
         */
        trustedProxies: z.array(z.string()).default([]),
        /** The header a trusted proxy names the signed-in user in; the user must exist (`payoutd user add`). */
        userHeader: z.string().default('Remote-User'),
        /** A session ends this long after sign-in. 12 hours. */
        sessionMs: positive(12 * 3600 * 1000),
        /** Mark the session cookie Secure (the browser sends it over HTTPS only): on behind a TLS proxy. */
        secureCookie: z.boolean().default(false),
        /**
         * Failed sign-ins in a row that lock a name out from one client address, and for how long (15 minutes);
         * failures from one address across every name within that time that lock the address out.
         */
        lockout: z.object({ maxFailures: positive(5), lockMs: positive(900_000), maxFailuresPerAddress: positive(20) }).prefault({}),
        /** The largest file an upload may be. 50 MiB. */
        maxUploadBytes: positive(50 * 1024 * 1024),
        /** How often an open batch list or batch page refreshes itself. */
        refreshMs: positive(3000),
        /** Batches per page of the list, rows per page of a batch. */
        pageSize: positive(50),
      })
      .prefault({}),
    notify: notifySchema,
    /** Leases on claimed work; several instances share one PostgreSQL database (database.client pg). */
    instance: z
      .object({
        /** Names this process in leases and logs; default host:pid:random. */
        id: z.string().optional(),
        /** Work an instance claimed is taken over by others after this; must exceed twice one try of a create (api.timeoutMs). */
        leaseMs: positive(120_000),
      })
      .prefault({}),
    startup: z
      .object({
        /** At start, how long to wait for the payout service before exit code 69 (systemd restarts payoutd). */
        waitForServiceMs: ms(60_000),
      })
      .prefault({}),
    /** On SIGTERM, how long calls in flight may finish before they are abandoned (and resolved by query at the next start). */
    shutdownGraceMs: positive(10_000),
    log: z.object({ level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info') }).prefault({}),
    /** The embedded sandbox (api.baseUrl: embedded): demo and first-run settings. */
    sandbox: z
      .object({
        /** The daemon's sandbox listens here (0: any free port); a one-shot command next to it uses the daemon's. */
        port: port(0),
        settlementMinDelayMs: ms(1000),
        settlementMaxDelayMs: ms(4000),
      })
      .prefault({}),
  })
  .prefault({});

export type PayoutdConfig = z.infer<typeof configSchema>;
