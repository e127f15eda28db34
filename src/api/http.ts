/**
 * One HTTP exchange with the payout service, with a hard timeout, and failures sorted by what they imply: a
 * connection never made sent nothing (safe to repeat); a timeout or a drop after sending leaves the outcome
 * unknown. node:http with stock keep-alive agents: cheaper per create than fetch.
 */
import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import { ConfigError, PayoutdError } from '../domain/errors.js';

/** The answer's header fields; `get` is case-insensitive like fetch's Headers. */
export class ResponseHeaders {
  // Private (#): kept out of inspection and JSON, so a logged response never shows its headers.
  readonly #raw: IncomingHttpHeaders;

  constructor(raw: IncomingHttpHeaders) {
    this.#raw = raw;
  }

  get(name: string): string | null {
    const value = this.#raw[name.toLowerCase()];
    if (value === undefined) return null;
    return Array.isArray(value) ? value.join(', ') : value;
  }
}

export interface HttpResponse {
  status: number;
  headers: ResponseHeaders;
  text: string;
}

/** connect: nothing was sent. timeout / dropped: the request may have been processed. aborted: either (see mayHaveBeenSent). */
export type TransportPhase = 'connect' | 'timeout' | 'dropped' | 'aborted';

export class TransportError extends PayoutdError {
  override readonly name = 'TransportError';
  constructor(
    readonly phase: TransportPhase,
    message: string,
    /** Why the connection was not made (ECONNREFUSED, CONNECT_TIMEOUT, …), for an operator; null otherwise. */
    readonly connectFailure: string | null = null,
    /** Whether a byte of the request may have left: false for a connection never made, or a call abandoned before it. */
    readonly mayHaveBeenSent: boolean = phase !== 'connect',
  ) {
    super(`TRANSPORT_${phase.toUpperCase()}`, message);
  }
}

/** Errors meaning the connection was never made, counted only before the socket connected (a kept-alive one is). */
const CONNECT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT']);

/** Idle kept-alive sockets close after this (the Agent shortens it before the server's Keep-Alive timeout). */
const IDLE_SOCKET_MS = 4_000;

/** One stock agent per scheme (lifo: the latest freed socket is the least likely closing); callers bound concurrency. */
export const agents = {
  'http:': new HttpAgent({ keepAlive: true, scheduling: 'lifo', timeout: IDLE_SOCKET_MS }),
  'https:': new HttpsAgent({ keepAlive: true, scheduling: 'lifo', timeout: IDLE_SOCKET_MS }),
};

/** Where requests go: the scheme, host and port of the service's base URL, parsed once. */
export interface HttpOrigin {
  readonly protocol: 'http:' | 'https:';
  readonly hostname: string;
  /** undefined: the scheme's default port. */
  readonly port: number | undefined;
}

export function httpOrigin(url: URL): HttpOrigin {
  const { protocol } = url;
  if (protocol !== 'http:' && protocol !== 'https:') {
    throw new ConfigError('API_BASE_URL_SCHEME', `the payout API base URL must be http: or https:, not ${protocol}`);
  }
  // URL keeps IPv6 literals bracketed; node:http wants them bare.
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return { protocol, hostname, port: url.port === '' ? undefined : Number(url.port) };
}

export interface HttpRequest {
  method: 'GET' | 'POST';
  origin: HttpOrigin;
  /** Path (and query) on the origin. */
  path: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  signal?: AbortSignal;
}

/** Sent with every request; identity encoding: a compressed answer would not parse. */
const FIXED_HEADERS: readonly string[] = ['Accept', 'application/json', 'Accept-Encoding', 'identity', 'User-Agent', 'payoutd'];

/** The Host header of an origin, as node:http writes it (IPv6 literals bracketed, a port only when not the default). */
function hostHeader(origin: HttpOrigin): string {
  const host = origin.hostname.includes(':') ? `[${origin.hostname}]` : origin.hostname;
  const defaultPort = origin.protocol === 'https:' ? 443 : 80;
  return origin.port === undefined || origin.port === defaultPort ? host : `${host}:${origin.port}`;
}

/** The request's header lines as a flat [name, value, …] list (the rawHeaders format); still checked by node:http. */
function headerList(req: HttpRequest): string[] {
  const list = ['Host', hostHeader(req.origin), ...FIXED_HEADERS];
  if (req.method !== 'GET') list.push('Content-Length', String(Buffer.byteLength(req.body, 'utf8')));
  for (const name in req.headers) list.push(name, req.headers[name] as string);
  return list;
}

function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** The body as UTF-8 text; a leading BOM is dropped as fetch's text() did. */
function bodyText(chunks: Buffer[]): string {
  const text = (chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)).toString('utf8');
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** The calls abandoned when a caller's signal aborts, and the one listener that abandons them. */
interface Abandonable {
  calls: Set<() => void>;
  listener: () => void;
}

const waitingOn = new WeakMap<AbortSignal, Abandonable>();

/** Calls `abandon` when `signal` aborts, until the returned function is called; one listener per signal. */
function untilAborted(signal: AbortSignal, abandon: () => void): () => void {
  let waiting = waitingOn.get(signal);
  if (waiting === undefined) {
    const calls = new Set<() => void>();
    const listener = (): void => {
      waitingOn.delete(signal);
      for (const call of calls) call();
    };
    waiting = { calls, listener };
    waitingOn.set(signal, waiting);
    signal.addEventListener('abort', listener, { once: true });
  }
  const entry = waiting;
  entry.calls.add(abandon);
  return () => {
    entry.calls.delete(abandon);
    if (entry.calls.size === 0 && waitingOn.get(signal) === entry) {
      waitingOn.delete(signal);
      signal.removeEventListener('abort', entry.listener);
    }
  };
}

/** Sends one request. Rejects only with TransportError, whose messages never carry headers or bodies. */
export function sendHttp(req: HttpRequest): Promise<HttpResponse> {
  const { signal, timeoutMs } = req;
  if (signal?.aborted)
    return Promise.reject(new TransportError('aborted', 'call abandoned before it was sent (shutting down)', null, false));
  return new Promise<HttpResponse>((resolve, reject) => {
    const { origin } = req;
    // False until the request's socket is connected: before that not one byte of it can have left.
    let connected = false;
    let settled = false;
    let request: ClientRequest | undefined;
    // A reused keep-alive socket was connected from the start, even one the server is closing.
    const mayHaveBeenSent = (): boolean => connected || request?.reusedSocket === true;

    const settle = (err: TransportError | null, res?: HttpResponse): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      stopWaiting?.();
      if (err) {
        request?.destroy();
        reject(err);
      } else {
        resolve(res as HttpResponse);
      }
    };
    const dropped = (err: unknown): void => {
      settle(new TransportError('dropped', `connection failed during the call (${errorCode(err) ?? 'no response'})`));
    };
    const onAbort = (): void => {
      const sent = mayHaveBeenSent();
      settle(new TransportError('aborted', `call abandoned${sent ? '' : ' before it was sent'} (shutting down)`, null, sent));
    };
    const timer = setTimeout(() => {
      settle(
        mayHaveBeenSent()
          ? new TransportError('timeout', `no response within ${timeoutMs} ms`)
          : new TransportError('connect', `cannot connect within ${timeoutMs} ms`, 'CONNECT_TIMEOUT'),
      );
    }, timeoutMs);
    const stopWaiting = signal ? untilAborted(signal, onAbort) : null;

    const send = origin.protocol === 'https:' ? httpsRequest : httpRequest;
    try {
      request = send({
        agent: agents[origin.protocol],
        hostname: origin.hostname,
        port: origin.port,
        method: req.method,
        path: req.path,
        headers: headerList(req),
      });
    } catch (err) {
      // A header node:http refuses: nothing sent, and repeating the same headers cannot succeed.
      dropped(err);
      return;
    }
    request.on('socket', (socket: Socket) => {
      if (!socket.connecting) connected = true;
      else
        socket.once('connect', () => {
          connected = true;
        });
    });
    request.on('error', (err) => {
      const code = errorCode(err);
      if (!mayHaveBeenSent() && code !== undefined && CONNECT_CODES.has(code))
        settle(new TransportError('connect', `cannot connect (${code})`, code));
      else dropped(err);
    });
    request.on('response', (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', dropped);
      // Closed before the end of the body: truncated.
      res.on('close', () => {
        if (!res.complete) dropped(undefined);
      });
      res.on('end', () => {
        settle(null, { status: res.statusCode ?? 0, headers: new ResponseHeaders(res.headers), text: bodyText(chunks) });
      });
    });
    if (req.method === 'GET') request.end();
    else request.end(req.body);
  });
}
