/**
 * What `payoutd run` makes sure of before it says `payoutd running`: usable folders that files can be renamed between,
 * and a payout service that answers, accepts the credentials and keeps a clock within the skew window. Each
 * failure is one line naming the option and the fix: ConfigError (exit 78) or ServiceUnavailableError (exit 69).
 */
import { randomBytes } from 'node:crypto';
import { accessSync, chmodSync, constants, existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { ApiError, type PayoutApiClient, type ServiceBreaker, type ServiceClockReading } from '../api/index.js';
import { backoffDelay, sleep } from '../domain/backoff.js';
import type { Clock } from '../domain/clock.js';
import { ConfigError, ServiceUnavailableError } from '../domain/errors.js';
import { approvalInUse, FOLDER_OPTIONS, type ResolvedConfig } from '../config/index.js';
import { approvalsFolderRisk } from '../approval/index.js';
import { shownUrl } from '../domain/url-path.js';
import { stateFolders } from './state-folders.js';

/**
 * Each folder option exists (made when paths.create), is a folder this user may read and write, and every rename
 * between folders payoutd makes works; the approvals folder lets no user rename or delete another's file (made
 * with the sticky bit). `now` judges probe files a start that died left behind.
 */
export function checkFolders(config: ResolvedConfig, now: number): void {
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
  for (const route of renameRoutes(config, options.length > FOLDER_OPTIONS.length)) proveRename(route, now);
}

/** Probe files of the rename check: hidden and `.tmp`, so neither the inbox nor the approvals folder ever takes one. */
const PROBE_PREFIX = '.payoutd-rename-check.';
const PROBE_SUFFIX = '.tmp';
/** A probe this old was left by a start that died (a check takes moments); a younger one may be another instance's. */
const PROBE_STALE_MS = 60_000;

/** A rename payoutd makes from a configured folder into its state directory, and why it makes it. */
interface RenameRoute {
  from: { option: string; dir: string };
  to: { option: string; dir: string };
  why: string;
}

/**
 * Every rename between folders payoutd relies on; the outbox is not among them (its files are renamed within it).
 * The probe is renamed back too, which is the way a claim puts a file back and a console upload enters the inbox.
 */
function renameRoutes(config: ResolvedConfig, approvalsUsed: boolean): RenameRoute[] {
  const { inbox, stateDir, approvals } = config.paths;
  const state = stateFolders(stateDir);
  const fromInbox = { option: 'paths.inbox', dir: inbox };
  const routes: RenameRoute[] = [
    { from: fromInbox, to: { option: 'paths.stateDir', dir: state.claimed }, why: 'files are claimed by a rename' },
    { from: fromInbox, to: { option: 'paths.stateDir', dir: state.rejected }, why: 'refused files are moved aside by a rename' },
  ];
  if (approvalsUsed && approvals) {
    routes.push({
      from: { option: 'paths.approvals', dir: approvals },
      to: { option: 'paths.stateDir', dir: state.approvalFiles },
      why: 'approval files are taken by a rename',
    });
  }
  return routes;
}

/**
 * Renames a probe file along `route` and back: comparing st_dev is not enough, since two bind mounts of one
 * filesystem (each folder of systemd's ReadWritePaths= and StateDirectory=) share it and still refuse renames.
 */
function proveRename(route: RenameRoute, now: number): void {
  const name = `${PROBE_PREFIX}${process.pid}.${randomBytes(4).toString('hex')}${PROBE_SUFFIX}`;
  const here = join(route.from.dir, name);
  const there = join(route.to.dir, name);
  try {
    mkdirSync(route.to.dir, { recursive: true });
    for (const dir of [route.from.dir, route.to.dir]) removeStaleProbes(dir, now);
    writeFileSync(here, '', { flag: 'wx', mode: 0o600 });
    renameSync(here, there);
    renameSync(there, here);
  } catch (err) {
    throw renameRefusal(route, (err as NodeJS.ErrnoException).code ?? 'error');
  } finally {
    for (const path of [here, there]) {
      try {
        rmSync(path, { force: true });
      } catch {
        // Not to hide the check's own verdict: a probe left here is removed by a later start.
      }
    }
  }
}

function renameRefusal({ from, to, why }: RenameRoute, code: string): ConfigError {
  if (code === 'EXDEV') {
    return new ConfigError(
      'FOLDER_CROSS_DEVICE',
      `${to.option}: ${to.dir} and ${from.option} ${from.dir} are not on one mount (a rename between them fails with EXDEV); ` +
        `${why}: put both under one mount of one filesystem (a bind mount counts as a mount of its own, and so does each ` +
        `ReadWritePaths= and StateDirectory= folder of a systemd unit: give the unit one ReadWritePaths= above both)`,
    );
  }
  return new ConfigError(
    'FOLDER_RENAME_FAILED',
    `${to.option}: cannot rename a file from ${from.option} ${from.dir} into ${to.dir} (${code}); ${why}: give the service user write access to both`,
  );
}

/** Removes the probes a start that died left in `dir`. */
function removeStaleProbes(dir: string, now: number): void {
  for (const name of readdirSync(dir)) {
    if (!name.startsWith(PROBE_PREFIX) || !name.endsWith(PROBE_SUFFIX)) continue;
    const path = join(dir, name);
    const st = statSync(path, { throwIfNoEntry: false });
    if (st !== undefined && now - st.mtimeMs >= PROBE_STALE_MS) rmSync(path, { force: true });
  }
}

/** Options whose value is shown beside the variable that set it; the others (a key, say) are named only. */
const SHOWN_FROM_ENVIRONMENT: readonly string[] = ['paths.stateDir', 'paths.inbox', 'paths.outbox', 'log.level', 'api.merchantCode'];
/** URLs, shown without what may be credentials. */
const URLS_FROM_ENVIRONMENT: readonly string[] = ['api.baseUrl', 'database.url'];

/**
 * Says each option an environment variable set: a variable in the unit or the shell silently beats the config file,
 * which a command run without it (`payoutd status -c`) still reads.
 */
export function sayEnvironmentOverrides(config: ResolvedConfig, logger: Pick<Logger, 'info'>): void {
  for (const { option, variable } of config.fromEnvironment) {
    const [section, key] = option.split('.') as [string, string];
    const value = (config as unknown as Record<string, Record<string, unknown>>)[section]?.[key];
    const shown = URLS_FROM_ENVIRONMENT.includes(option)
      ? { value: shownUrl(String(value), option) }
      : SHOWN_FROM_ENVIRONMENT.includes(option)
        ? { value }
        : {};
    logger.info({ option, variable, ...shown }, `${option} is set by the environment variable ${variable}, over the config file`);
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
  /** The service's URL as the operator configured it (the embedded sandbox's own URL for "embedded"); shown without credentials. */
  url: string;
  clock: Clock;
  logger: Logger;
  waitForServiceMs: number;
  clockSkewSeconds: number;
  /** A stop requested meanwhile ends the wait (start-up then stops cleanly). */
  signal?: AbortSignal;
}

/** What a refused or failed token call means for the operator: a ConfigError to throw, or null (not reached yet: wait). */
function verdictOf(err: ApiError, c: ServiceCheck, url: string, now: number): ConfigError | null {
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
      `api.baseUrl: ${url} answered ${said}, not as the payout API does; check api.baseUrl (the part before /apis/v1)`,
    );
  }
  return null;
}

/** Obtains credentials and judges the clock; retries with backoff (logged once) until startup.waitForServiceMs. */
export async function checkPayoutService(c: ServiceCheck): Promise<void> {
  const url = shownUrl(c.url, 'api.baseUrl');
  const deadline = c.clock.now() + c.waitForServiceMs;
  let waiting = false;
  for (let attempt = 1; ; attempt++) {
    if (c.signal?.aborted) return;
    let reading: ServiceClockReading | null;
    try {
      reading = await c.client.verifyAccess();
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      const verdict = verdictOf(err, c, url, c.clock.now());
      if (verdict) throw verdict;
      const cause = c.breaker.health().lastErrorCode ?? err.code;
      const left = deadline - c.clock.now();
      if (left <= 0) {
        throw new ServiceUnavailableError(
          'SERVICE_UNAVAILABLE',
          `api.baseUrl: the payout service at ${url} did not answer within startup.waitForServiceMs (${c.waitForServiceMs} ms): ` +
            `${cause}; check api.baseUrl and the network, or raise startup.waitForServiceMs`,
        );
      }
      if (!waiting) {
        waiting = true;
        c.logger.warn(
          { url, code: cause, waitForServiceMs: c.waitForServiceMs },
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
    if (waiting) c.logger.info({ url }, 'payout service answering: start-up goes on');
    const skew = reading === null ? null : clockSkewOf(reading, c.clockSkewSeconds * 1000);
    if (skew !== null) throw new ConfigError('CLOCK_SKEW', skewLine(skew, "its token answer's timestamp", c.clockSkewSeconds));
    return;
  }
}
