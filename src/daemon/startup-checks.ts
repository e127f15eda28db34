/**
 * What `payoutd run` makes sure of before it says `payoutd running`: usable folders on the inbox's filesystem,
 * and a payout service that answers, accepts the credentials and keeps a clock within the skew window. Each
 * failure is one line naming the option and the fix: ConfigError (exit 78) or ServiceUnavailableError (exit 69).
 */
import { accessSync, chmodSync, constants, existsSync, mkdirSync, statSync } from 'node:fs';
import type { Logger } from 'pino';
import { ApiError, type PayoutApiClient, type ServiceBreaker, type ServiceClockReading } from '../api/index.js';
import { backoffDelay, sleep } from '../domain/backoff.js';
import type { Clock } from '../domain/clock.js';
import { ConfigError, ServiceUnavailableError } from '../domain/errors.js';
import { approvalInUse, FOLDER_OPTIONS, type ResolvedConfig } from '../config/index.js';
import { approvalsFolderRisk } from '../approval/index.js';

/**
 * Each folder option exists (made when paths.create), is a folder this user may read and write, and the claims can
 * be renames; the approvals folder lets no user rename or delete another's file (made with the sticky bit).
 */
export function checkFolders(config: ResolvedConfig): void {
  // The approvals folder only when batches can wait for approval: without it, today's folders alone.
  const options: readonly (typeof FOLDER_OPTIONS)[number][] | readonly string[] = approvalInUse(config.approval, config.limits)
    ? [...FOLDER_OPTIONS, 'approvals']
    : FOLDER_OPTIONS;
  for (const option of options) {
    const dir = config.paths[option as 'inbox'];
    const name = `paths.${option}`;
    if (!existsSync(dir)) {
      if (config.paths.create !== true)
        throw new ConfigError('FOLDER_MISSING', `${name}: ${dir} does not exist; create it or set paths.create: true`);
      mkdirSync(dir, { recursive: true });
      // The sticky bit: with the SFTP users given write access, none can rename or delete another's approval file.
      if (option === 'approvals') chmodSync(dir, (statSync(dir).mode & 0o7777) | 0o1000);
    }
    if (!statSync(dir).isDirectory()) throw new ConfigError('FOLDER_INVALID', `${name}: ${dir} is not a folder; point ${name} at a folder`);
    try {
      accessSync(dir, constants.R_OK | constants.W_OK | constants.X_OK);
    } catch (err) {
      throw new ConfigError(
        'FOLDER_NOT_WRITABLE',
        `${name}: ${dir} is not writable by this user (${(err as NodeJS.ErrnoException).code ?? 'error'}); give the service user read and write access to it`,
      );
    }
    const risk = option === 'approvals' ? approvalsFolderRisk(dir, statSync(dir).mode) : null;
    if (risk !== null) throw new ConfigError('FOLDER_UNSAFE', risk);
  }
  // A file is claimed by a rename from the inbox into the state directory (the outbox may live anywhere).
  const { inbox, stateDir, approvals } = config.paths;
  if (options.length > FOLDER_OPTIONS.length && approvals && statSync(approvals).dev !== statSync(stateDir).dev) {
    throw new ConfigError(
      'FOLDER_CROSS_DEVICE',
      `paths.approvals: ${approvals} is on another filesystem than paths.stateDir ${stateDir}; approval files are taken by a rename: put both on one filesystem`,
    );
  }
  if (statSync(inbox).dev !== statSync(stateDir).dev) {
    throw new ConfigError(
      'FOLDER_CROSS_DEVICE',
      `paths.stateDir: ${stateDir} is on another filesystem than paths.inbox ${inbox}; files are claimed by a rename: put both on one filesystem`,
    );
  }
}

/** Offsets of the service's clock from ours (service minus ours, ms) that a reading of `resolutionMs` leaves possible. */
function offsetRange(serviceMs: number, resolutionMs: number, requestedAt: number, receivedAt: number): [number, number] {
  return [serviceMs - receivedAt, serviceMs + resolutionMs - requestedAt];
}

/** The offset certainly beyond ±windowMs (the one nearest the window), or null when the clocks may agree within it. */
export function skewBeyond(range: [number, number], windowMs: number): number | null {
  const [low, high] = range;
  if (low > windowMs) return low;
  if (high < -windowMs) return high;
  return null;
}

/**
 * The clock offset a token answer proves beyond the window, or null: its `timestamp` (spec 2.2), confirmed by
 * its Date header when present (a service may hand out credentials it issued earlier).
 */
export function clockSkewOf(reading: ServiceClockReading, windowMs: number): number | null {
  const { requestedAt, receivedAt, issuedAtByService, serviceDate } = reading;
  const byDate = serviceDate === null ? null : skewBeyond(offsetRange(serviceDate, 1000, requestedAt, receivedAt), windowMs);
  if (issuedAtByService === null) return byDate;
  const byTimestamp = skewBeyond(offsetRange(issuedAtByService, 1000, requestedAt, receivedAt), windowMs);
  return byTimestamp !== null && (serviceDate === null || byDate !== null) ? byTimestamp : null;
}

function skewLine(offsetMs: number, source: string, windowSeconds: number): string {
  const seconds = Math.round(Math.abs(offsetMs) / 1000);
  const way = offsetMs > 0 ? 'behind' : 'ahead of';
  return (
    `system clock: this machine's clock is ${seconds} s ${way} the payout service's (${source}); the service accepts ` +
    `±${windowSeconds} s (api.clockSkewSeconds): correct the system time (timedatectl, chrony or NTP)`
  );
}

export interface ServiceCheck {
  client: PayoutApiClient;
  breaker: ServiceBreaker;
  /** The service's URL as the operator configured it (the embedded sandbox's own URL for "embedded"). */
  url: string;
  clock: Clock;
  logger: Logger;
  waitForServiceMs: number;
  clockSkewSeconds: number;
  /** A stop requested meanwhile ends the wait (start-up then stops cleanly). */
  signal?: AbortSignal;
}

/** What a refused or failed token call means for the operator: a ConfigError to throw, or null (not reached yet: wait). */
function verdictOf(err: ApiError, c: ServiceCheck, now: number): ConfigError | null {
  const said = `${err.code}${err.status ? ` (HTTP ${err.status})` : ''}${err.msg ? ` ${err.msg}` : ''}`;
  if (err.kind === 'auth') {
    const window = c.clockSkewSeconds * 1000;
    const skew = err.serviceTimeMs === null ? null : skewBeyond(offsetRange(err.serviceTimeMs, 1000, now, now), window);
    if (skew !== null) {
      return new ConfigError('CLOCK_SKEW', `${skewLine(skew, `its Date header on refusing the credentials: ${said}`, c.clockSkewSeconds)}`);
    }
    return new ConfigError(
      'CREDENTIALS_REFUSED',
      `api.apiKey: the payout service refused the credentials: ${said}; check api.apiKey (or api.apiKeyFile, PAYOUTD_API_KEY, ` +
        `the credential api-key), api.merchantCode, and that the public key of api.privateKeyFile is the one registered with the service`,
    );
  }
  if (err.kind === 'rejected') {
    return new ConfigError(
      'CREDENTIALS_REFUSED',
      `api.merchantCode: the payout service refused the access-token call: ${said}; check api.merchantCode and api.auth`,
    );
  }
  // An answer that is not the payout API's (a web server's 404 page, say): the URL is wrong, not the service down.
  if (err.status !== null && err.status < 500 && err.status !== 429) {
    return new ConfigError(
      'API_NOT_FOUND',
      `api.baseUrl: ${c.url} answered ${said}, not as the payout API does; check api.baseUrl (the part before /apis/v1)`,
    );
  }
  return null;
}

/** Obtains credentials and judges the clock; retries with backoff (logged once) until startup.waitForServiceMs. */
export async function checkPayoutService(c: ServiceCheck): Promise<void> {
  const deadline = c.clock.now() + c.waitForServiceMs;
  let waiting = false;
  for (let attempt = 1; ; attempt++) {
    if (c.signal?.aborted) return;
    let reading: ServiceClockReading | null;
    try {
      reading = await c.client.verifyAccess();
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      const verdict = verdictOf(err, c, c.clock.now());
      if (verdict) throw verdict;
      const cause = c.breaker.health().lastErrorCode ?? err.code;
      const left = deadline - c.clock.now();
      if (left <= 0) {
        throw new ServiceUnavailableError(
          'SERVICE_UNAVAILABLE',
          `api.baseUrl: the payout service at ${c.url} did not answer within startup.waitForServiceMs (${c.waitForServiceMs} ms): ` +
            `${cause}; check api.baseUrl and the network, or raise startup.waitForServiceMs`,
        );
      }
      if (!waiting) {
        waiting = true;
        c.logger.warn(
          { url: c.url, code: cause, waitForServiceMs: c.waitForServiceMs },
          'payout service not answering at start: retrying until it does or startup.waitForServiceMs has passed',
        );
      }
      try {
        await sleep(Math.min(backoffDelay(attempt, { baseMs: 500, maxMs: 10_000 }), left), c.signal);
      } catch {
        return; // stop requested
      }
      continue;
    }
    if (waiting) c.logger.info({ url: c.url }, 'payout service answering: start-up goes on');
    const skew = reading === null ? null : clockSkewOf(reading, c.clockSkewSeconds * 1000);
    if (skew !== null) throw new ConfigError('CLOCK_SKEW', skewLine(skew, "its token answer's timestamp", c.clockSkewSeconds));
    return;
  }
}
