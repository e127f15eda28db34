/**
 * Which payout service a start may follow this database's payouts on: the one recorded at its first start. A
 * configuration that names another (an emptied config file falling back to the embedded sandbox, a stray
 * PAYOUTD_API_BASE_URL) would ask that service about payouts it never made and pay new files where no money moves,
 * so such a start is refused until the configuration is restored or the change is accepted on purpose
 * (`payoutd migrate --accept-service-change`).
 */
import type { Logger } from 'pino';
import type { ResolvedConfig } from '../config/index.js';
import { ConfigError, PayoutdError, ServiceUnavailableError } from '../domain/errors.js';
import type { PayoutService } from '../domain/payout.js';
import { serviceChangeDecision } from '../domain/service-change.js';
import { shownUrl } from '../domain/url-path.js';
import {
  recordedServiceIdentity,
  recordServiceIdentity,
  replaceServiceIdentity,
  serviceHistory,
  payoutsOnService,
  payoutsToVerify,
  type Database,
  type RecordedServiceIdentity,
  type ServiceIdentity,
} from '../store/index.js';

/** The service the configuration names: "embedded", or the base URL (no credentials, query or trailing slash) and merchant. */
export function configuredServiceIdentity(config: ResolvedConfig): ServiceIdentity {
  if (config.api.baseUrl === 'embedded') return { service: 'embedded', merchantCode: null };
  return { service: shownUrl(config.api.baseUrl, 'api.baseUrl').replace(/\/+$/, ''), merchantCode: config.api.merchantCode ?? null };
}

export function describeService(id: ServiceIdentity): string {
  if (id.service === 'embedded') return 'the embedded sandbox (api.baseUrl: embedded, no real money)';
  return id.merchantCode === null ? id.service : `${id.service} as merchant ${id.merchantCode}`;
}

function sameService(a: ServiceIdentity, b: ServiceIdentity): boolean {
  return a.service === b.service && a.merchantCode === b.merchantCode;
}

/** The option that differs, and where its value came from when an environment variable set it. */
function changedOption(config: ResolvedConfig, recorded: ServiceIdentity, configured: ServiceIdentity): string {
  return shownOption(config, recorded.service === configured.service ? 'api.merchantCode' : 'api.baseUrl');
}

function shownOption(config: ResolvedConfig, option: string): string {
  const variable = config.fromEnvironment.find((e) => e.option === option)?.variable;
  return variable === undefined ? option : `${option} (set by ${variable})`;
}

/**
 * At start, after the migrations and before any listener or the embedded sandbox: refuses a configured service
 * other than the one recorded, whatever the database holds: final payouts are still asked about (service checks,
 * corrections), a reference paid on one service is no duplicate on another, and a file dropped for the recorded
 * service would be paid on the other.
 */
export async function checkServiceIdentity(db: Database, config: ResolvedConfig): Promise<void> {
  const configured = configuredServiceIdentity(config);
  const recorded = await recordedServiceIdentity(db);
  if (recorded !== null && !sameService(recorded, configured)) throw serviceChanged(config, recorded, configured, await serviceHistory(db));
}

/** How many of a database's payouts are asked about before its service is recorded: one found is enough. */
const VERIFIED_SAMPLE = 3;

/**
 * Once the service has accepted the credentials: records it for a database that has none. Only then, so a first
 * start that never reached its service (a mistyped URL) leaves nothing to undo. A database already holding payouts
 * a service made (one made before migration 0033) records the configured service only if that service knows some
 * of them: its first start after the upgrade may name another (an emptied config file), which would otherwise be
 * recorded and then guarded. Another instance may have recorded another meanwhile (PostgreSQL): refused as at start.
 */
export async function recordServiceOnce(
  db: Database,
  config: ResolvedConfig,
  service: Pick<PayoutService, 'queryByPayoutIds'>,
  now: number,
  logger: Pick<Logger, 'info'>,
  signal?: AbortSignal,
): Promise<void> {
  const configured = configuredServiceIdentity(config);
  const before = await recordedServiceIdentity(db);
  let verified: number | null = null;
  if (before === null) verified = await verifyPayoutsKnown(db, config, configured, service, signal);
  const recorded = before ?? (await recordServiceIdentity(db, configured, now));
  if (!sameService(recorded, configured)) throw serviceChanged(config, recorded, configured, await serviceHistory(db));
  if (before === null)
    logger.info(
      { service: configured.service, merchantCode: configured.merchantCode, ...(verified === null ? {} : { payoutsFound: verified }) },
      'payout service recorded for this state database',
    );
}

/** How many of the payouts asked about the service found (null: the database holds none a service made); refuses none. */
async function verifyPayoutsKnown(
  db: Database,
  config: ResolvedConfig,
  configured: ServiceIdentity,
  service: Pick<PayoutService, 'queryByPayoutIds'>,
  signal?: AbortSignal,
): Promise<number | null> {
  const { made, sample } = await payoutsToVerify(db, VERIFIED_SAMPLE);
  if (made === 0) return null;
  const where = config.source ?? 'the built-in defaults (no config file)';
  const held =
    `${shownOption(config, 'api.baseUrl')}: this state database holds ${made} payouts made on a payout service it has not ` +
    `recorded (made before migration 0033), and ${describeService(configured)}, which ${where} names`;
  const remedy =
    'Restore the configuration naming the service these payouts were made on; if the payout service really changed, ' +
    'check, then run payoutd migrate --accept-service-change with this configuration';
  let answer;
  try {
    answer = await service.queryByPayoutIds(sample, signal);
  } catch (err) {
    // Never recorded unverified: a later start asks again.
    const why = err instanceof PayoutdError ? err.message : 'the query failed';
    throw new ServiceUnavailableError(
      'SERVICE_UNVERIFIED',
      `${held}, could not be asked whether it knows ${sample.length} of them (${why}); nothing is recorded and nothing is paid or followed. ${remedy}`,
    );
  }
  const asked = new Set(sample);
  const found = new Set(
    [...answer.records.map((r) => r.payoutId), ...answer.unread.map((r) => r.payoutId)].filter((id) => id !== null && asked.has(id)),
  );
  if (found.size === 0)
    throw new ConfigError(
      'SERVICE_UNVERIFIED',
      `${held}, does not know the ${sample.length} asked about; nothing is recorded and nothing is paid or followed. ${remedy}`,
    );
  return found.size;
}

function serviceChanged(
  config: ResolvedConfig,
  recorded: RecordedServiceIdentity,
  configured: ServiceIdentity,
  history: { batches: number; openPayouts: number },
): ConfigError {
  const where = config.source ?? 'the built-in defaults (no config file)';
  const open = history.openPayouts;
  // The change itself is refused while any is left (serviceChangeDecision): said here, before it is tried.
  const first =
    open > 0
      ? `, once the ${open} payouts sent to ${describeService(recorded)} and not final yet (CREATING, UNKNOWN or PENDING) ` +
        'are settled there by payoutd run with the configuration naming it: the change is refused until none is left'
      : '';
  return new ConfigError(
    'SERVICE_CHANGED',
    `${changedOption(config, recorded, configured)}: this state database (${history.batches} batches) pays through ` +
      `${describeService(recorded)} (recorded ${new Date(recorded.recordedAt).toISOString()}), but ${where} names ${describeService(configured)}; a payout is ` +
      `never followed, nor a new file paid, on another service than the one its database records. If the configuration is ` +
      `wrong (an emptied or cut-short config file, a stray PAYOUTD_API_BASE_URL or PAYOUTD_MERCHANT_CODE), restore it; if ` +
      `the payout service really changed, run payoutd migrate --accept-service-change with this configuration${first}`,
  );
}

/** How many of the rows the recorded service still has to settle a refused change names (the rest are counted). */
const LISTED_ROWS = 10;

/**
 * `payoutd migrate --accept-service-change`: records the configured service in place of the recorded one and
 * says what changed; refused (PAYOUTS_ON_OLD_SERVICE) while a row awaits what the recorded service makes of it.
 */
export async function acceptServiceChange(db: Database, config: ResolvedConfig, now: number): Promise<string> {
  const configured = configuredServiceIdentity(config);
  const recorded = await recordedServiceIdentity(db);
  if (recorded !== null && sameService(recorded, configured)) return `payout service unchanged: ${describeService(configured)}`;
  const decision = serviceChangeDecision({
    recorded: recorded === null ? null : describeService(recorded),
    configured: describeService(configured),
    ...(await payoutsOnService(db, LISTED_ROWS)),
  });
  if (!decision.accepted) throw new ConfigError('PAYOUTS_ON_OLD_SERVICE', decision.message);
  await replaceServiceIdentity(db, configured, now);
  return decision.message;
}
