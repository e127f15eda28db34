/**
 * A TCP proxy on 127.0.0.1 that a test can switch off and on: off closes the
 * listening socket (new connections are refused) and destroys every
 * connection in flight (calls on the wire are cut), on listens again on the
 * same port. It stands for "the payout service is unreachable for a while"
 * without touching the sandbox behind it.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';

export class TcpProxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  private listenPort = 0;
  /** Connections accepted since start. */
  accepted = 0;

  private constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  /** A proxy to `targetUrl` (http://host:port) on a free port. */
  static async start(targetUrl: string): Promise<TcpProxy> {
    const u = new URL(targetUrl);
    const proxy = new TcpProxy(u.hostname, Number(u.port));
    await proxy.on();
    return proxy;
  }

  get port(): number {
    return this.listenPort;
  }

  get url(): string {
    return `http://127.0.0.1:${this.listenPort}`;
  }

  get isOn(): boolean {
    return this.server !== null;
  }

  /** Listens (again, on the same port once one was chosen). */
  async on(): Promise<void> {
    if (this.server) return;
    const server = createServer((client) => this.pipe(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.listenPort, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    const addr = server.address();
    if (addr && typeof addr === 'object') this.listenPort = addr.port;
    this.server = server;
  }

  /** Refuses new connections and cuts the ones in flight. */
  async off(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = null;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    await closed;
  }

  close(): Promise<void> {
    return this.off();
  }

  private pipe(client: Socket): void {
    this.accepted++;
    const upstream = createConnection({ host: this.targetHost, port: this.targetPort });
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
      // A cut connection is the point of this proxy; errors just end the pair.
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  }
}
