/**
 * sendHttp over real sockets: every way an exchange can fail, sorted into the
 * phase that decides whether a create may be repeated. `connect` (nothing
 * left this machine) only while the request's socket never connected; a
 * kept-alive socket reset after the request went out is `dropped`, as is a
 * truncated answer, or a kept-alive socket the server closed between calls;
 * no answer on a connected socket is `timeout`. Plus the answer's shape
 * (headers, body text) and HTTPS with an operator-added CA.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { getEventListeners } from 'node:events';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { TransportError, httpOrigin, sendHttp, type HttpRequest } from '../../src/api/http.js';
import { closedPort } from './helpers.js';
import { hasOpenssl, selfSignedCert } from '../support/tls.js';

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function listen(server: Server): Promise<string> {
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  cleanups.push(
    () =>
      new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function post(baseUrl: string, over: Partial<HttpRequest> = {}): Promise<Awaited<ReturnType<typeof sendHttp>>> {
  return sendHttp({
    method: 'POST',
    origin: httpOrigin(new URL(baseUrl)),
    path: '/apis/v1/fiat-payout/create',
    headers: { 'Content-Type': 'application/json' },
    body: '{"merchantReferenceId":"REF-1"}',
    timeoutMs: 2_000,
    ...over,
  });
}

async function transportErrorOf(call: Promise<unknown>): Promise<TransportError> {
  try {
    await call;
  } catch (err) {
    if (err instanceof TransportError) return err;
    throw err;
  }
  throw new Error('expected a TransportError, the call succeeded');
}

/**
 * A port whose accept queue is full (the listener's process never accepts):
 * the kernel drops further SYNs, so a new connection hangs in connect.
 * The queue is filled by connections of our own first.
 */
async function unconnectablePort(): Promise<number> {
  const child: ChildProcess = spawn(
    process.execPath,
    [
      '-e',
      `const s = require('node:net').createServer();
       s.listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => {
         process.stdout.write(s.address().port + '\\n', () => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0));
       });`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  cleanups.push(() => void child.kill('SIGKILL'));
  const port = await new Promise<number>((done) => child.stdout?.once('data', (d: Buffer) => done(Number(d.toString().trim()))));
  for (let i = 0; i < 16; i++) {
    const socket: Socket = connect(port, '127.0.0.1');
    cleanups.push(() => void socket.destroy());
    const connected = await new Promise<boolean>((done) => {
      socket.once('connect', () => done(true));
      socket.once('error', () => done(false));
      // Loopback connects complete at once in the kernel; a full second covers a busy event loop.
      setTimeout(() => done(false), 1_000);
    });
    if (!connected) return port;
  }
  throw new Error('unconnectablePort: the accept queue never filled');
}

describe('failures before anything was sent: connect (safe to repeat)', () => {
  it('connection refused', async () => {
    const err = await transportErrorOf(post(`http://127.0.0.1:${await closedPort()}`));
    expect(err).toMatchObject({ phase: 'connect', code: 'TRANSPORT_CONNECT' });
    expect(err.message).toMatch(/ECONNREFUSED/);
  });

  it('no connection within the timeout (the server never completes the handshake): connect, not timeout', async () => {
    const port = await unconnectablePort();
    const err = await transportErrorOf(post(`http://127.0.0.1:${port}`, { timeoutMs: 300 }));
    expect(err).toMatchObject({ phase: 'connect' });
    expect(err.message).toBe('cannot connect within 300 ms');
  });
});

describe('failures once the request may have reached the server', () => {
  it('connected, no answer within the timeout: timeout', async () => {
    let received = 0;
    const url = await listen(createHttpServer((req) => void req.resume().on('end', () => received++)));
    const err = await transportErrorOf(post(url, { timeoutMs: 300 }));
    expect(err).toMatchObject({ phase: 'timeout', message: 'no response within 300 ms' });
    expect(received).toBe(1);
  });

  it('a kept-alive socket the server resets after the request was written: dropped, never connect', async () => {
    const perSocket = new Map<Socket, number>();
    const server = createHttpServer((req, res) => {
      const n = (perSocket.get(req.socket) ?? 0) + 1;
      perSocket.set(req.socket, n);
      // The second request on the same socket: the server is closing it (RST), the request was already written.
      if (n > 1) req.socket.resetAndDestroy();
      else req.resume().on('end', () => res.end('{"code":"0000"}'));
    });
    const url = await listen(server);
    expect((await post(url)).status).toBe(200);
    const err = await transportErrorOf(post(url));
    expect(err).toMatchObject({ phase: 'dropped' });
    expect(err.message).toMatch(/ECONNRESET/);
    expect([...perSocket.values()]).toEqual([2]);
  });

  it('a kept-alive socket the server closed after its last answer: the next call fails dropped, or goes out once on a new connection', async () => {
    let connections = 0;
    let received = 0;
    let bytesAfterClose = 0;
    const server = createHttpServer((req, res) => {
      received++;
      // Answered, then closed as an idle timeout would. Node 20's agent still sends the next call on that socket
      // (it may arrive: the failure must be `dropped`, never `connect`); Node 24 sees the close and connects anew.
      req.resume().on('end', () =>
        res.end('{"code":"0000"}', () => {
          req.socket.on('data', (d: Buffer) => (bytesAfterClose += d.length));
          req.socket.end();
        }),
      );
    });
    server.on('connection', () => connections++);
    const url = await listen(server);
    expect((await post(url)).status).toBe(200);
    const second = await post(url).catch((err: unknown) => err);
    if (second instanceof TransportError) {
      expect(second).toMatchObject({ phase: 'dropped' });
      expect(connections).toBe(1);
    } else {
      expect(second).toMatchObject({ status: 200 });
      // Sent once, on the new connection: nothing of it went out on the closed one.
      expect([connections, received, bytesAfterClose]).toEqual([2, 2, 0]);
    }
  });

  it('a kept-alive socket, no answer to the next call within the timeout: timeout, never connect', async () => {
    let connections = 0;
    let received = 0;
    const server = createHttpServer((req, res) => {
      if (++received === 1) req.resume().on('end', () => res.end('{"code":"0000"}'));
      else req.resume();
    });
    server.on('connection', () => connections++);
    const url = await listen(server);
    expect((await post(url)).status).toBe(200);
    const err = await transportErrorOf(post(url, { timeoutMs: 300 }));
    expect(err).toMatchObject({ phase: 'timeout', message: 'no response within 300 ms' });
    expect([connections, received]).toEqual([1, 2]);
  });

  it('a new connection the server drops after reading the request, before any answer: dropped', async () => {
    let received = 0;
    const server = createHttpServer((req) => {
      req.resume().on('end', () => {
        received++;
        req.socket.destroy();
      });
    });
    const url = await listen(server);
    const err = await transportErrorOf(post(url));
    expect(err).toMatchObject({ phase: 'dropped' });
    expect(received).toBe(1);
  });

  it('an answer cut off before the end of its body: dropped', async () => {
    const url = await listen(
      createHttpServer((req, res) => {
        req.resume();
        res.writeHead(200, { 'Content-Length': '100' });
        res.write('{"code":"0000",');
        setTimeout(() => res.destroy(), 20);
      }),
    );
    expect(await transportErrorOf(post(url))).toMatchObject({ phase: 'dropped' });
  });

  it("the caller's signal: aborted, and no listener is left on the signal by any call", async () => {
    const url = await listen(createHttpServer((req, res) => void req.resume().on('end', () => setTimeout(() => res.end('{}'), 5_000))));
    const controller = new AbortController();
    const call = post(url, { signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    expect(await transportErrorOf(call)).toMatchObject({ phase: 'aborted' });
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);

    const quick = await listen(createHttpServer((req, res) => void req.resume().on('end', () => res.end('{}'))));
    const live = new AbortController();
    await post(quick, { signal: live.signal });
    expect(getEventListeners(live.signal, 'abort')).toHaveLength(0);
    expect(await transportErrorOf(post(quick, { signal: AbortSignal.abort() }))).toMatchObject({ phase: 'aborted' });
  });
});

describe('calls sharing one signal (the daemon passes its own to every call)', () => {
  it('one listener while any call waits, every call abandoned by the abort, none left after', async () => {
    const url = await listen(createHttpServer((req, res) => void req.resume().on('end', () => setTimeout(() => res.end('{}'), 5_000))));
    const quick = await listen(createHttpServer((req, res) => void req.resume().on('end', () => res.end('{}'))));
    const controller = new AbortController();
    const { signal } = controller;
    await Promise.all([post(quick, { signal }), post(quick, { signal })]);
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
    const calls = [post(url, { signal }), post(url, { signal }), post(url, { signal })];
    await new Promise((done) => setTimeout(done, 50));
    expect(getEventListeners(signal, 'abort')).toHaveLength(1);
    controller.abort();
    for (const call of calls) expect(await transportErrorOf(call)).toMatchObject({ phase: 'aborted' });
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
  });
});

describe('kept-alive sockets', () => {
  /** A server that answers every call and counts the connections made to it. */
  async function countingServer(): Promise<{ url: string; connections: () => number }> {
    let connections = 0;
    const server = createHttpServer((req, res) => req.resume().on('end', () => res.end(`{"path":"${req.url ?? ''}"}`)));
    server.on('connection', () => connections++);
    const url = await listen(server);
    return { url, connections: () => connections };
  }

  it('calls one after another share one connection; calls at once get one each, kept for the next calls', async () => {
    const { url, connections } = await countingServer();
    for (let i = 0; i < 5; i++) expect((await post(url, { path: `/seq/${i}` })).text).toBe(`{"path":"/seq/${i}"}`);
    expect(connections()).toBe(1);
    const answers = await Promise.all(Array.from({ length: 4 }, (_, i) => post(url, { path: `/at-once/${i}` })));
    expect(answers.map((a) => a.text)).toEqual([0, 1, 2, 3].map((i) => `{"path":"/at-once/${i}"}`));
    expect(connections()).toBe(4);
    await Promise.all(Array.from({ length: 4 }, () => post(url)));
    expect(connections()).toBe(4);
  });
});

describe('the answer', () => {
  it('status, headers by any case, the body as text (BOM dropped); what was sent arrives byte for byte', async () => {
    const seen: { headers: Record<string, unknown>; body: string }[] = [];
    const url = await listen(
      createHttpServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          seen.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
          res.writeHead(429, { 'Retry-After': '7' });
          res.end('\ufeff{"code":"0000","msg":"Señor ₱"}');
        });
      }),
    );
    const body = '{"beneficiary":{"accountName":"Ña ₱"}}';
    for (const path of ['/first', '/second']) {
      const res = await post(url, { path, body });
      expect(res.status).toBe(429);
      expect(res.headers.get('Retry-After')).toBe('7');
      expect(res.headers.get('retry-after')).toBe('7');
      expect(res.headers.get('x-missing')).toBeNull();
      expect(res.text).toBe('{"code":"0000","msg":"Señor ₱"}');
    }
    expect(seen.map((s) => s.body)).toEqual([body, body]);
    // The header lines are given to node:http as a list, so Host and Content-Length are ours to write.
    expect(seen[0]?.headers).toMatchObject({
      host: new URL(url).host,
      connection: 'keep-alive',
      accept: 'application/json',
      'accept-encoding': 'identity',
      'user-agent': 'payoutd',
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
    });
    expect(seen[0]?.headers).not.toHaveProperty('transfer-encoding');
  });

  it('a header value node:http refuses: a TransportError (dropped, as fetch had it), with neither the name nor the value in the message', async () => {
    let received = 0;
    const url = await listen(createHttpServer((req, res) => void req.resume().on('end', () => res.end(String(++received)))));
    const err = await transportErrorOf(post(url, { headers: { 'X-SIGNATURE': 'abc\r\nX-Injected: 1' } }));
    expect(err).toMatchObject({ phase: 'dropped', message: 'connection failed during the call (ERR_INVALID_CHAR)' });
    expect(received).toBe(0);
  });

  it('a base URL that is not http: or https: is refused up front', () => {
    expect(() => httpOrigin(new URL('ftp://127.0.0.1/'))).toThrow(/http: or https:/);
  });
});

const ROOT = resolve(import.meta.dirname, '..', '..');
const DIST_HTTP = join(ROOT, 'dist', 'api', 'http.js');

describe('HTTPS', () => {
  // A child process, because NODE_EXTRA_CA_CERTS (how an operator trusts a private CA, for fetch as for node:https) is read at start.
  it.skipIf(!hasOpenssl())('talks to an https base URL whose CA the operator added with NODE_EXTRA_CA_CERTS', async () => {
    if (!existsSync(DIST_HTTP)) throw new Error(`${DIST_HTTP} is missing: run \`npm run build\` first (\`npm test\` does).`);
    const dir = mkdtempSync(join(tmpdir(), 'payoutd-client-tls-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const { certFile, keyFile } = selfSignedCert(dir);
    const server = createHttpsServer({ cert: readFileSync(certFile), key: readFileSync(keyFile) }, (req, res) => {
      req.resume().on('end', () => res.end(`{"code":"0000","path":"${req.url ?? ''}"}`));
    });
    let secured = 0;
    server.on('secureConnection', () => secured++);
    const url = (await listen(server)).replace(/^http:/, 'https:');
    const script = `
      import { httpOrigin, sendHttp } from ${JSON.stringify(DIST_HTTP)};
      const call = () => sendHttp({ method: 'POST', origin: httpOrigin(new URL(process.argv[1])), path: '/x', headers: {}, body: '{}', timeoutMs: 5000 })
        .then((r) => r.status + ' ' + r.text, (e) => e.code);
      console.log(JSON.stringify([await call(), await call()]));`;
    // Asynchronous: the server answers from this process's event loop.
    const run = async (env: NodeJS.ProcessEnv): Promise<unknown> =>
      JSON.parse(
        (await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script, url], { env, encoding: 'utf8' })).stdout,
      );
    const { NODE_EXTRA_CA_CERTS: _ignored, ...base } = process.env;
    expect(await run({ ...base, NODE_EXTRA_CA_CERTS: certFile })).toEqual([
      '200 {"code":"0000","path":"/x"}',
      '200 {"code":"0000","path":"/x"}',
    ]);
    // The second call went out on the first one's kept-alive connection.
    expect(secured).toBe(1);
    // Without the CA the certificate is refused, after the connection was made: dropped, as with fetch.
    expect(await run(base)).toEqual(['TRANSPORT_DROPPED', 'TRANSPORT_DROPPED']);
  });
});
