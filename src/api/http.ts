/**
 * One HTTP exchange with the payout service, with a hard timeout, and
 * failures sorted by what they imply: a connection that was never made sent
 * nothing (safe to repeat), while a timeout or a connection dropped after
 * sending leaves the outcome unknown.
 */
import { PayoutdError } from '../domain/errors.js';

export interface HttpResponse {
  status: number;
  headers: Headers;
  text: string;
}

/** connect: nothing was sent. timeout / dropped: the request may have been processed. */
export type TransportPhase = 'connect' | 'timeout' | 'dropped' | 'aborted';

export class TransportError extends PayoutdError {
  override readonly name = 'TransportError';
  constructor(
    readonly phase: TransportPhase,
    message: string,
  ) {
    super(`TRANSPORT_${phase.toUpperCase()}`, message);
  }
}

const CONNECT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

function causeCode(err: unknown): string | undefined {
  let cur: unknown = err;
  for (let depth = 0; depth < 4 && cur && typeof cur === 'object'; depth++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    const inner = (cur as { errors?: unknown[] }).errors?.[0];
    cur = (cur as { cause?: unknown }).cause ?? inner;
  }
  return undefined;
}

export interface HttpRequest {
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  signal?: AbortSignal;
}

export async function sendHttp(req: HttpRequest): Promise<HttpResponse> {
  const timeout = AbortSignal.timeout(req.timeoutMs);
  const signal = req.signal ? AbortSignal.any([timeout, req.signal]) : timeout;
  try {
    const res = await fetch(req.url, {
      method: req.method,
      headers: req.headers,
      body: req.method === 'GET' ? undefined : req.body,
      signal,
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text };
  } catch (err) {
    // Messages below are ours: the raw error may carry request details.
    if (timeout.aborted) throw new TransportError('timeout', `no response within ${req.timeoutMs} ms`);
    if (req.signal?.aborted) throw new TransportError('aborted', 'call abandoned (shutting down)');
    const code = causeCode(err);
    if (code && CONNECT_CODES.has(code)) throw new TransportError('connect', `cannot connect (${code})`);
    throw new TransportError('dropped', `connection failed during the call (${code ?? 'no response'})`);
  }
}
