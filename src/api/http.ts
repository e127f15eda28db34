/**
 * One HTTP exchange with the payout service, with a hard timeout, and
 * failures sorted by what they imply: a connection that was never made sent
 * nothing (safe to repeat), while a timeout or a connection dropped after
 * sending leaves the outcome unknown.
 *
 * node:http / node:https with keep-alive agents rather than fetch: the
 * client's own CPU per create was 0.65-1.0 ms with fetch (undici, web
 * streams, two AbortSignals per call) against ~0.2 ms here, and the minimal
 * create loop is a submit target (docs/performance.md, item 13).
 */
import {
  Agent as HttpAgent,
  request as httpRequest,
  type ClientRequest,
  type RequestOptions as HttpRequestOptions,
  type IncomingHttpHeaders,
  type IncomingMessage,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
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

/**
 * Errors that mean the connection was never made. Counted as `connect` only
 * while the request's socket has not connected: a kept-alive socket is
 * connected from the start, so nothing that happens on it is `connect`.
 */
const CONNECT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT']);

/**
 * Idle kept-alive sockets are closed after this long (or 1 s before the
 * server's announced Keep-Alive timeout, when that is shorter), so a request
 * rarely goes out on a socket the server is closing. When it does, the
 * failure is `dropped`, never `connect` (see CONNECT_CODES).
 */
const IDLE_SOCKET_MS = 4_000;

/** What node:http's Agent keeps of its sockets (its own fields: `sockets` and `freeSockets` are documented). */
interface AgentSockets {
  /** Sockets in use, by origin name; a free socket is in `freeSockets` and not counted in `totalSocketCount`. */
  sockets: Record<string, Socket[] | undefined>;
  freeSockets: Record<string, Socket[] | undefined>;
  totalSocketCount: number;
  options: { timeout?: number };
}

type AddRequest = (this: HttpAgent, req: ClientRequest, options: HttpRequestOptions) => void;

/** node:http's own addRequest (not in its typings), for everything but handing out a kept-alive socket. */
const agentAddRequest = (HttpAgent.prototype as unknown as { addRequest: AddRequest }).addRequest;

/**
 * Hands a request the most recently freed socket of its origin, as the Agent itself does with `scheduling:
 * 'lifo'`, without the rest of the Agent's addRequest: for every request it copies the request's options and
 * its own into a new object and works out a TLS server name, which only a new connection uses (5 of the
 * client's 38 us a request, measured on a pinned pair of processes; about 5% of the daemon's CPU per create
 * at L = 0). Also skipped: giving the socket a new async-hooks identity, which only async_hooks users see (a
 * reused socket keeps the "none" the Agent gave it when it was freed, and node then takes the current one;
 * payoutd's calls await promises made by the caller, so an AsyncLocalStorage's value still follows the
 * caller). Returns false when there is no free socket under the request's name: the Agent's own way then
 * makes one, or queues the request. A name that differed from the Agent's (options this agent does not set)
 * would only find no free socket.
 */
function handKeptAliveSocket(agent: HttpAgent, req: ClientRequest, options: HttpRequestOptions): boolean {
  const own = agent as unknown as AgentSockets;
  const name = agent.getName(options);
  const free = own.freeSockets[name];
  if (free === undefined) return false;
  let socket = free.pop();
  // A socket destroyed while free leaves the list at its 'close', a moment later: never handed out meanwhile.
  while (socket?.destroyed) socket = free.pop();
  if (free.length === 0) delete own.freeSockets[name];
  if (socket === undefined) return false;
  agent.reuseSocket(socket, req);
  req.onSocket(socket);
  // As the Agent does: a request's own socket timeout (`timeout` in its options; sendHttp times calls itself).
  const { timeout } = req as { timeout?: number };
  if (timeout !== undefined && timeout !== (own.options.timeout ?? 0)) socket.setTimeout(timeout);
  (own.sockets[name] ??= []).push(socket);
  own.totalSocketCount++;
  return true;
}

class KeptAliveHttpAgent extends HttpAgent {
  addRequest(req: ClientRequest, options: HttpRequestOptions): void {
    if (!handKeptAliveSocket(this, req, options)) agentAddRequest.call(this, req, options);
  }
}

class KeptAliveHttpsAgent extends HttpsAgent {
  addRequest(req: ClientRequest, options: HttpRequestOptions): void {
    if (!handKeptAliveSocket(this, req, options)) agentAddRequest.call(this, req, options);
  }
}

/**
 * One agent per scheme for the process, pooling sockets per origin like
 * fetch's global dispatcher did. No socket limit: the callers bound their
 * own concurrency (submit.concurrency, one poll call at a time).
 */
export const agents = {
  'http:': new KeptAliveHttpAgent({ keepAlive: true, scheduling: 'lifo', timeout: IDLE_SOCKET_MS }),
  'https:': new KeptAliveHttpsAgent({ keepAlive: true, scheduling: 'lifo', timeout: IDLE_SOCKET_MS }),
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

/**
 * Sent with every request. identity: fetch decoded compressed answers by
 * itself; asking for none keeps the server from spending CPU on it (and a
 * compressed answer is still decoded, see `bodyText`).
 */
const FIXED_HEADERS: readonly string[] = ['Accept', 'application/json', 'Accept-Encoding', 'identity', 'User-Agent', 'payoutd'];

/** The Host header of an origin, as node:http writes it (IPv6 literals bracketed, a port only when not the default). */
function hostHeader(origin: HttpOrigin): string {
  const host = origin.hostname.includes(':') ? `[${origin.hostname}]` : origin.hostname;
  const defaultPort = origin.protocol === 'https:' ? 443 : 80;
  return origin.port === undefined || origin.port === defaultPort ? host : `${host}:${origin.port}`;
}

/**
 * The request's header lines as node:http's flat [name, value, …] list: node:http then writes them once, as
 * given, instead of storing each through setHeader and rendering them at end() (about 15 us less CPU per
 * call, a tenth of a create's client side). Given as a list, Host and Content-Length are the caller's to send;
 * names and values are still checked (a value with a control character throws, as setHeader did).
 */
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

/** The body as text, decoded once; a leading BOM is dropped as fetch's text() did. */
function bodyText(chunks: Buffer[], encoding: string | undefined): string {
  let buf = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
  const coding = encoding?.trim().toLowerCase();
  if (coding === 'gzip' || coding === 'x-gzip') buf = gunzipSync(buf);
  else if (coding === 'deflate') buf = inflateSync(buf);
  else if (coding === 'br') buf = brotliDecompressSync(buf);
  const text = buf.toString('utf8');
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** The calls abandoned when a caller's signal aborts, and the one listener that abandons them. */
interface Abandonable {
  calls: Set<() => void>;
  listener: () => void;
}

const waitingOn = new WeakMap<AbortSignal, Abandonable>();

/**
 * Calls `abandon` when `signal` aborts, until the returned function is
 * called. One 'abort' listener per signal while any call waits on it,
 * instead of one per call: the daemon's calls share one signal, and adding
 * and removing an EventTarget listener cost about 4 us a call (profile at
 * L = 0). None is left once the last call is done.
 */
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

/**
 * Sends one request. Rejects only with TransportError; the messages are ours
 * (a raw error may carry request details), never headers or bodies.
 */
export function sendHttp(req: HttpRequest): Promise<HttpResponse> {
  const { signal, timeoutMs } = req;
  if (signal?.aborted) return Promise.reject(new TransportError('aborted', 'call abandoned (shutting down)'));
  return new Promise<HttpResponse>((resolve, reject) => {
    const { origin } = req;
    // False until the request's socket is connected: before that not one byte of it can have left.
    let connected = false;
    let settled = false;
    let request: ClientRequest | null = null;

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
    const onAbort = (): void => settle(new TransportError('aborted', 'call abandoned (shutting down)'));
    const timer = setTimeout(() => {
      settle(
        connected
          ? new TransportError('timeout', `no response within ${timeoutMs} ms`)
          : new TransportError('connect', `cannot connect within ${timeoutMs} ms`),
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
      // A header node:http refuses (a control character in a value, say). Nothing left, but fetch
      // counted this as dropped too, and repeating the same headers cannot succeed.
      dropped(err);
      return;
    }
    request.on('socket', (socket: Socket) => {
      // A reused keep-alive socket is connected already: anything on it may reach the server.
      if (!socket.connecting) connected = true;
      else
        socket.once('connect', () => {
          connected = true;
        });
    });
    request.on('error', (err) => {
      const code = errorCode(err);
      if (!connected && code !== undefined && CONNECT_CODES.has(code)) settle(new TransportError('connect', `cannot connect (${code})`));
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
        let text: string;
        try {
          text = bodyText(chunks, res.headers['content-encoding']);
        } catch (err) {
          dropped(err);
          return;
        }
        settle(null, { status: res.statusCode ?? 0, headers: new ResponseHeaders(res.headers), text });
      });
    });
    if (req.method === 'GET') request.end();
    else request.end(req.body);
  });
}
