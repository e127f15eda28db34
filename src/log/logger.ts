/** pino JSON logs to a given stream; redaction removes secrets by key name wherever a caller put them. */
import { PayoutdError } from '../domain/errors.js';
import { pino, type DestinationStream, type Logger, type LevelWithSilent } from 'pino';

const SECRET_KEYS = [
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

export function safeError(err: unknown): unknown {
  if (err instanceof PayoutdError) return err.toLog();
  if (err instanceof Error) return { name: err.name, message: err.message.slice(0, 300) };
  return err;
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
