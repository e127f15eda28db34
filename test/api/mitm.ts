/**
 * A man-in-the-middle on 127.0.0.1 for the client tests: a small node:http
 * proxy between PayoutApiClient and the sandbox that forwards every request
 * byte for byte, remembers what it forwarded (for replay and timing), learns
 * the credentials the sandbox issues (so tests can check none leaks), and on
 * demand breaks business requests the way an attacker would: a tampered body,
 * a swapped bearer token; and rewrites answers on demand. When the sandbox drops a connection, the proxy
 * drops the client's too, so the client sees the same transport fault.
 * It can also close the client's kept-alive connections: idle ones between
 * calls, or one that is being reused, with a reset, as a request arrives.
 */
import { Agent, createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { parseLossless } from '../../src/json/index.js';
import { BUSINESS_PATHS } from '../../src/sandbox/index.js';

/** One request as the proxy sent it upstream (after any tampering). */
export interface Forwarded {
  method: string;
  /** Path and query as received. */
  url: string;
  /** Header names and values in the order and case received (after any swap). */
  headers: [string, string][];
  body: Buffer;
  /** performance.now() when the request reached the proxy. */
  arrivedAt: number;
}

export interface IssuedCredentials {
  accessToken: string;
  refreshToken: string;
  secretKey: string;
}

export interface Mitm {
  /** http://127.0.0.1:PORT: the client's baseUrl. */
  readonly url: string;
  /** Every request forwarded, in arrival order. */
  readonly forwarded: Forwarded[];
  /** Credentials seen in successful access-token / refresh-token answers. */
  readonly issued: IssuedCredentials[];
  /** While true, every business request body has one character of a string value changed. */
  tamper: boolean;
  /** While set, every business request carries this bearer token instead of its own. */
  swapBearer: string | null;
  /**
   * While set, the text of every answer with HTTP 200 is replaced by what it returns for it (path without the
   * query string): a service answering in a shape or with values the spec leaves open. Answers are not signed.
   */
  rewriteAnswer: ((path: string, text: string) => string) | null;
  /**
   * While set, a request it gives an answer for is answered with that (a status and a JSON text) and never
   * forwarded: a service, or a proxy in front of it, refusing the request in its own words.
   */
  answerInstead: ((f: Forwarded) => { status: number; text: string } | null) | null;
  /** While set, a request waits this long (ms, by its path) before it is forwarded: a service slow to take it in. */
  holdMs: ((path: string) => number) | null;
  /**
   * While set, an answer the sandbox gave waits for the promise this returns for it (by its path and text; null: none)
   * before it goes back to the client: an answer still on its way while the service moves on.
   */
  holdAnswer: ((path: string, text: string) => Promise<void> | null) | null;
  /** Answer with `Connection: close`, so the client keeps no pooled socket to the proxy. */
  connectionClose: boolean;
  /**
   * A business request arriving on a client connection that already carried
   * one gets that connection reset: 'before' forwarding it (the sandbox never
   * sees it), or 'after' the sandbox answered (the answer is lost).
   */
  resetReused: 'before' | 'after' | null;
  /** Client connections accepted so far. */
  readonly connections: number;
  /** Creates forwarded and not answered yet. */
  readonly createsInFlight: number;
  /** The most creates in flight at once since it was last set (to 0). */
  peakCreatesInFlight: number;
  /** Closes the client connections that are idle between requests; resolves once they are closed. */
  closeIdle(): Promise<void>;
  /** Sends the last forwarded request to the sandbox again, exactly as it was. */
  replayLast(): Promise<{ status: number; text: string }>;
  /** Stops listening and destroys every socket on both sides. */
  close(): Promise<void>;
}

function isBusinessPath(url: string): boolean {
  const path = url.split('?')[0] ?? '';
  return (BUSINESS_PATHS as readonly string[]).includes(path);
}

/**
 * Changes one character of the first string value (an object member's value
 * or an array's first element), keeping the text valid JSON of the same length.
 * Works on the text so no number is ever re-rendered.
 */
export function tamperJsonText(text: string): string {
  const m = /([:[]")([A-Za-z0-9])/.exec(text);
  if (!m?.[2]) throw new Error('tamperJsonText: no string value to change');
  const c = m[2];
  const swapped = c === 'z' ? 'a' : c === 'Z' ? 'A' : c === '9' ? '0' : String.fromCharCode(c.charCodeAt(0) + 1);
  const at = m.index + (m[1]?.length ?? 0);
  return text.slice(0, at) + swapped + text.slice(at + 1);
}

function pairs(raw: string[]): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) out.push([raw[i] ?? '', raw[i + 1] ?? '']);
  return out;
}

function withBody(headers: [string, string][], body: Buffer): [string, string][] {
  return [...headers.filter(([k]) => k.toLowerCase() !== 'content-length'), ['Content-Length', String(body.length)]];
}

function readAll(stream: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });
}

function learnCredentials(text: string): IssuedCredentials | null {
  try {
    const env = parseLossless(text) as { code?: unknown; data?: Record<string, unknown> };
    const d = env.data;
    if (env.code !== '0000' || !d) return null;
    const { accessToken, refreshToken, secretKey } = d;
    if (typeof accessToken !== 'string' || typeof refreshToken !== 'string' || typeof secretKey !== 'string') return null;
    return { accessToken, refreshToken, secretKey };
  } catch {
    // Not an envelope (an error page): nothing to learn.
    return null;
  }
}

export async function startMitm(upstreamUrl: string): Promise<Mitm> {
  const upstream = new URL(upstreamUrl);
  const agent = new Agent({ keepAlive: true });

  function send(f: Forwarded): Promise<{ status: number; headers: IncomingMessage['headers']; body: Buffer }> {
    return new Promise((resolve, reject) => {
      const headers: Record<string, string> = {};
      for (const [k, v] of withBody(f.headers, f.body)) headers[k] = v;
      const up = request({ host: upstream.hostname, port: upstream.port, method: f.method, path: f.url, headers, agent }, (res) => {
        readAll(res).then((body) => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }), reject);
      });
      up.on('error', reject);
      up.end(f.body);
    });
  }

  // Requests seen per client connection, to tell a reused kept-alive connection from a new one.
  const requestsOn = new WeakMap<Socket, number>();
  const sockets = new Set<Socket>();
  let connections = 0;
  let createsInFlight = 0;

  const server: Server = createServer((req, res) => {
    const arrivedAt = performance.now();
    const socket = req.socket;
    const reused = (requestsOn.get(socket) ?? 0) > 0;
    requestsOn.set(socket, (requestsOn.get(socket) ?? 0) + 1);
    const resetHere = (when: 'before' | 'after'): boolean => reused && mitm.resetReused === when && isBusinessPath(req.url ?? '/');
    if (resetHere('before')) {
      socket.resetAndDestroy();
      return;
    }
    readAll(req)
      .then(async (received) => {
        const url = req.url ?? '/';
        const business = isBusinessPath(url);
        let body = received;
        let headers = pairs(req.rawHeaders);
        if (business && mitm.tamper) body = Buffer.from(tamperJsonText(body.toString('utf8')), 'utf8');
        const swap = mitm.swapBearer;
        if (business && swap !== null) {
          headers = headers.map(([k, v]) => (/^(svc)?authorization$/i.test(k) ? [k, `Bearer ${swap}`] : [k, v]));
        }
        const hold = mitm.holdMs?.(url.split('?')[0] ?? '') ?? 0;
        if (hold > 0) await new Promise((resolve) => setTimeout(resolve, hold));
        const f: Forwarded = { method: req.method ?? 'GET', url, headers, body, arrivedAt };
        const own = mitm.answerInstead?.(f) ?? null;
        if (own !== null) {
          res
            .writeHead(own.status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(own.text)) })
            .end(own.text);
          return;
        }
        mitm.forwarded.push(f);
        const create = url.split('?')[0]?.endsWith('/fiat-payout/create') === true;
        if (create) mitm.peakCreatesInFlight = Math.max(mitm.peakCreatesInFlight, ++createsInFlight);
        const answer = await send(f).finally(() => {
          if (create) createsInFlight--;
        });
        if (resetHere('after')) {
          socket.resetAndDestroy();
          return;
        }
        if (!business && answer.status === 200) {
          const creds = learnCredentials(answer.body.toString('utf8'));
          if (creds) mitm.issued.push(creds);
        }
        await mitm.holdAnswer?.(url.split('?')[0] ?? '', answer.body.toString('utf8'));
        const rewrite = mitm.rewriteAnswer;
        if (rewrite && answer.status === 200)
          answer.body = Buffer.from(rewrite(url.split('?')[0] ?? '', answer.body.toString('utf8')), 'utf8');
        const out: Record<string, string | string[]> = {};
        for (const [k, v] of Object.entries(answer.headers)) {
          if (v !== undefined && k !== 'transfer-encoding' && k !== 'content-length') out[k] = v;
        }
        out['content-length'] = String(answer.body.length);
        if (mitm.connectionClose) out.connection = 'close';
        res.writeHead(answer.status, out).end(answer.body);
      })
      .catch(() => {
        // The sandbox dropped the connection (or the client went away): drop ours too,
        // so the client sees the fault the sandbox injected.
        req.socket.destroy();
      });
  });
  server.on('connection', (socket: Socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  let closing: Promise<void> | undefined;
  const mitm: Mitm = {
    url: `http://127.0.0.1:${port}`,
    forwarded: [],
    issued: [],
    tamper: false,
    swapBearer: null,
    rewriteAnswer: null,
    answerInstead: null,
    holdMs: null,
    holdAnswer: null,
    connectionClose: false,
    resetReused: null,
    get connections() {
      return connections;
    },
    get createsInFlight() {
      return createsInFlight;
    },
    peakCreatesInFlight: 0,
    async closeIdle() {
      server.closeIdleConnections();
      // closeIdleConnections destroys the idle ones at once; their 'close' follows.
      const closing = [...sockets].filter((s) => s.destroyed);
      await Promise.all(closing.map((s) => new Promise((resolve) => s.once('close', resolve))));
      // The client's end of each connection sees the close on its next turn of the event loop.
      await new Promise((resolve) => setTimeout(resolve, 20));
    },
    async replayLast() {
      const last = mitm.forwarded.at(-1);
      if (!last) throw new Error('replayLast: nothing forwarded yet');
      const answer = await send(last);
      return { status: answer.status, text: answer.body.toString('utf8') };
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        agent.destroy();
      });
      return closing;
    },
  };
  return mitm;
}
