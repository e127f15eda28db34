/**
 * What a verified webhook body says, as a pure parse: a `payout.updated` event, another kind (acknowledged), or
 * a body it cannot use. Length bounds match the webhook_events columns.
 */
import { parseLossless } from '../json/canonical.js';

export const PAYOUT_UPDATED = 'payout.updated';

export interface PayoutUpdatedEvent {
  kind: 'payout.updated';
  eventId: string;
  payoutId: string;
  merchantReferenceId: string | null;
  /** What the event claims; informative only — the query decides (spec 6 rule 3). */
  status: string | null;
  completeTime: string | null;
}

export interface OtherEvent {
  kind: 'other';
  /** The event kind, cut to 64 characters for the log. */
  event: string;
  eventId: string | null;
}

export interface MalformedEvent {
  kind: 'malformed';
  reason: string;
}

export type WebhookEvent = PayoutUpdatedEvent | OtherEvent | MalformedEvent;

const ID_MAX = 128;
const STATUS_MAX = 16;

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** An own property only: never something reached through a prototype. */
function own(o: Json, key: string): unknown {
  return Object.hasOwn(o, key) ? o[key] : undefined;
}

/** A non-empty string of at most `max` characters and no NUL (PostgreSQL cannot store one), else null. */
function boundedString(v: unknown, max: number): string | null {
  return typeof v === 'string' && v.length > 0 && v.length <= max && !v.includes('\u0000') ? v : null;
}

function malformed(reason: string): MalformedEvent {
  return { kind: 'malformed', reason };
}

export function parseWebhookEvent(bodyText: string): WebhookEvent {
  let body: unknown;
  try {
    body = parseLossless(bodyText);
  } catch {
    // Not JSON (or nested too deep to parse): nothing to act on.
    return malformed('body is not JSON');
  }
  if (!isObject(body)) return malformed('body is not a JSON object');
  const event = own(body, 'event');
  if (typeof event !== 'string' || event === '') return malformed('event missing or not a string');
  const rawId = own(body, 'eventId');
  const eventId = boundedString(rawId, ID_MAX);
  if (event !== PAYOUT_UPDATED) {
    return { kind: 'other', event: event.slice(0, 64), eventId };
  }
  if (eventId === null) return malformed(`eventId missing, empty, over ${ID_MAX} characters or holding a NUL`);
  const data = own(body, 'data');
  if (!isObject(data)) return malformed('data missing or not an object');
  const payoutId = boundedString(own(data, 'payoutId'), ID_MAX);
  if (payoutId === null) return malformed(`data.payoutId missing, empty, over ${ID_MAX} characters or holding a NUL`);
  const reference = own(data, 'merchantReferenceId');
  const merchantReferenceId = boundedString(reference, ID_MAX);
  if (reference !== undefined && reference !== null && merchantReferenceId === null) {
    return malformed(`data.merchantReferenceId not a string of 1..${ID_MAX} characters without NUL`);
  }
  const rawStatus = own(data, 'status');
  const status = boundedString(rawStatus, STATUS_MAX);
  if (rawStatus !== undefined && rawStatus !== null && status === null) {
    return malformed(`data.status not a string of 1..${STATUS_MAX} characters without NUL`);
  }
  const completeTime = boundedString(own(data, 'completeTime'), 64);
  return { kind: 'payout.updated', eventId, payoutId, merchantReferenceId, status, completeTime };
}
