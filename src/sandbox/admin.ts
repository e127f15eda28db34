/**
 * Loopback test control under /__sandbox, without authentication, so a test or benchmark can drive a sandbox in
 * another process. Answers use the API's envelope. Never expose a sandbox beyond 127.0.0.1.
 */
import { PayoutdError } from '../domain/errors.js';
import { isPlainDecimal } from '../domain/money.js';
import { JsonNumber, parseLossless, plainNumberText } from '../json/canonical.js';
import type { SandboxFaultsInput } from './options.js';
import type { SandboxServer } from './server.js';

/** What the admin endpoints act on: the SandboxServer's own methods. */
type AdminTarget = Pick<
  SandboxServer,
  'seed' | 'ledger' | 'stats' | 'settle' | 'reverse' | 'setBalance' | 'balances' | 'setFaults' | 'faults'
>;

export const ADMIN_ROUTES = [
  'GET /__sandbox/health',
  'GET /__sandbox/ledger',
  'GET /__sandbox/stats',
  'POST /__sandbox/settle',
  'POST /__sandbox/reverse',
  'POST /__sandbox/balance',
  'POST /__sandbox/faults',
] as const;

export interface AdminAnswer {
  status: number;
  code: string;
  msg: string;
  data: unknown;
}

class AdminRequestError extends PayoutdError {
  override readonly name = 'AdminRequestError';
}

const ok = (data: unknown): AdminAnswer => ({ status: 200, code: '0000', msg: 'success', data });

function objectBody(raw: string, lossless: boolean): Record<string, unknown> {
  let value: unknown;
  try {
    value = raw === '' ? {} : lossless ? parseLossless(raw) : JSON.parse(raw);
  } catch {
    throw new AdminRequestError('2002', 'body must be JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value) || value instanceof JsonNumber) {
    throw new AdminRequestError('2002', 'body must be a JSON object');
  }
  return value as Record<string, unknown>;
}

function optionalText(body: Record<string, unknown>, name: string): string | undefined {
  const value = Object.hasOwn(body, name) ? body[name] : undefined;
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '') throw new AdminRequestError('2002', `${name} must be a non-empty string`);
  return value;
}

function requiredText(body: Record<string, unknown>, name: string): string {
  const value = optionalText(body, name);
  if (value === undefined) throw new AdminRequestError('2002', `${name} is required`);
  return value;
}

/** An amount given as decimal text or as a JSON number (kept as its lexeme). */
function amountText(body: Record<string, unknown>, name: string): string {
  const value = Object.hasOwn(body, name) ? body[name] : undefined;
  const text = value instanceof JsonNumber ? plainNumberText(value.value) : value;
  if (typeof text !== 'string' || !isPlainDecimal(text))
    throw new AdminRequestError('2002', `${name} must be a plain non-negative decimal`);
  return text;
}

function run(target: AdminTarget, route: string, raw: string): AdminAnswer {
  switch (route) {
    case 'GET /__sandbox/health':
      return ok({ status: 'ok', seed: target.seed });
    case 'GET /__sandbox/ledger':
      return ok({ payouts: target.ledger() });
    case 'GET /__sandbox/stats':
      return ok(target.stats());
    case 'POST /__sandbox/settle': {
      const body = objectBody(raw, true);
      const payoutId = optionalText(body, 'payoutId');
      const merchantReferenceId = optionalText(body, 'merchantReferenceId');
      if (payoutId === undefined && merchantReferenceId === undefined) {
        throw new AdminRequestError('2002', 'payoutId or merchantReferenceId is required');
      }
      const status = body['status'];
      if (status !== 'PAID' && status !== 'CANCELLED') throw new AdminRequestError('2002', 'status must be PAID or CANCELLED');
      const select = { ...(payoutId !== undefined && { payoutId }), ...(merchantReferenceId !== undefined && { merchantReferenceId }) };
      return ok({ moved: target.settle(select, status) });
    }
    case 'POST /__sandbox/reverse': {
      const body = objectBody(raw, true);
      const payoutId = requiredText(body, 'payoutId');
      const status = body['status'];
      if (status !== 'PAID' && status !== 'CANCELLED') throw new AdminRequestError('2002', 'status must be PAID or CANCELLED');
      return ok({ moved: target.reverse(payoutId, status) ? 1 : 0 });
    }
    case 'POST /__sandbox/balance': {
      const body = objectBody(raw, true);
      const merchantCode = requiredText(body, 'merchantCode');
      target.setBalance(merchantCode, requiredText(body, 'currency'), amountText(body, 'amount'));
      return ok({ balances: target.balances(merchantCode) });
    }
    case 'POST /__sandbox/faults':
      // Fault settings are rates and milliseconds, never money: plain JSON numbers are right here.
      target.setFaults(objectBody(raw, false) as SandboxFaultsInput);
      return ok({ faults: target.faults() });
    default:
      return { status: 404, code: '1404', msg: `no admin endpoint ${route}`, data: {} };
  }
}

/** Answers one admin request; failures become 400 envelopes naming the problem. */
export function handleAdmin(target: AdminTarget, method: string, path: string, raw: string): AdminAnswer {
  try {
    return run(target, `${method} ${path}`, raw);
  } catch (err) {
    // Every caller mistake (bad body, unknown merchant, invalid faults) is an invalid parameter.
    if (err instanceof PayoutdError) return { status: 400, code: '2002', msg: err.message, data: {} };
    throw err;
  }
}
