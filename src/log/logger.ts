/** pino JSON logs to a given stream; redaction removes secrets by key name wherever a caller put them. */
import { isDriverError, PayoutdError } from '../domain/errors.js';
import { pino, type DestinationStream, type Logger, type LevelWithSilent } from 'pino';

/**
 * Names of fields whose values are secret or personal: redacted in log lines, and masked in the payout service's
 * texts (src/api/service-text.ts).
 */
export const SECRET_KEYS: readonly string[] = [
  'apiKey',
  'secretKey',
  'accessToken',
  'refreshToken',
  'privateKey',
  'privateKeyPem',
  'token',
  'authorization',
  'Authorization',
  'SvcApiKey',
  'SvcAuthorization',
  'password',
  'webhookSecret',
  'secret',
  'accountNumber',
  'idValue',
];

/** Redaction paths for the keys above at the top level and two levels down. */
export const REDACT_PATHS = SECRET_KEYS.flatMap((k) => [k, `*.${k}`, `*.*.${k}`]);

/** Longest message logged: a message could be anything the error's maker put in it. */
const MAX_MESSAGE = 300;

/**
 * An error as it may be logged: its name, its code if it has one, and its message cut short. A store error's
 * message is the driver's own: knex puts the statement before it (` - ` between), which would fill the cut
 * and hide the cause ("database or disk is full").
 */
export function safeError(err: unknown): unknown {
  if (err instanceof PayoutdError) return err.toLog();
  // Not an Error: as it is (also what this gave before, met again as the logger's serializer).
  if (!(err instanceof Error)) return err;
  const code = (err as { code?: unknown }).code;
  const cut = isDriverError(err) ? err.message.lastIndexOf(' - ') : -1;
  const message = cut >= 0 ? err.message.slice(cut + 3) : err.message;
  return { name: err.name, ...(typeof code === 'string' ? { code } : {}), message: message.slice(0, MAX_MESSAGE) };
}

export function createLogger(level: LevelWithSilent, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'payoutd' },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      // A raw Error that slips through is cut down to its name and message.
      serializers: { err: safeError },
    },
    destination ?? pino.destination({ dest: 1, sync: false }),
  );
}

export type { Logger };
