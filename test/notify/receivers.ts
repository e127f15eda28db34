/**
 * Real receivers of notifications for the tests: an HTTP endpoint that
 * verifies each delivery with the `standardwebhooks` package (as a
 * merchant's system would) and deduplicates by webhook-id, and an SMTP server
 * (`smtp-server`) that requires STARTTLS and a password before it takes mail.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SMTPServer } from 'smtp-server';
import { Webhook } from 'standardwebhooks';
import { afterEach, beforeEach } from 'vitest';
import type { NotificationDispatcher } from '../../src/notify/index.js';
import { selfSignedCert } from '../support/tls.js';

/** A fresh signing secret in the form the configuration takes. */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

/** Holds a receiver's next delivery unanswered until the test lets it go: a slow receiver. */
class NextHold {
  /** Deliveries that arrived while held. */
  held = 0;
  private hold: Promise<void> | null = null;

  /** The next delivery waits until the returned function is called. */
  arm(): () => void {
    let release = (): void => undefined;
    this.hold = new Promise((r) => (release = r));
    return release;
  }

  /** Waits, if the hold is armed, until it is let go. */
  async wait(): Promise<void> {
    const hold = this.hold;
    this.hold = null;
    if (!hold) return;
    this.held++;
    await hold;
  }
}

export interface ReceivedEvent {
  id: string;
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
}

export class EventReceiver {
  /** First deliveries, in arrival order (each webhook-id once). */
  readonly events: ReceivedEvent[] = [];
  /** Deliveries answered 2xx (each webhook-id once), in arrival order: what the sender was told it delivered. */
  readonly taken: ReceivedEvent[] = [];
  /** Every verified delivery, duplicates included. */
  deliveries = 0;
  /** Deliveries whose signature did not verify. */
  forged = 0;
  /** Answer with this status (after taking the event) instead of 204: a receiver that took it but said otherwise. */
  answer = 204;
  private readonly hold = new NextHold();
  private server: Server | null = null;
  private readonly verifier: Webhook;

  /** Deliveries that arrived while held (holdNextDelivery). */
  get held(): number {
    return this.hold.held;
  }

  /** The next delivery waits, unanswered, until the returned function is called: a slow receiver. */
  holdNextDelivery(): () => void {
    return this.hold.arm();
  }

  constructor(
    secret: string,
    private port = 0,
  ) {
    this.verifier = new Webhook(secret);
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/payoutd/events`;
  }

  async start(): Promise<void> {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', async () => {
        await this.hold.wait();
        const body = Buffer.concat(chunks).toString('utf8');
        const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
        let payload: Omit<ReceivedEvent, 'id'>;
        try {
          payload = this.verifier.verify(body, headers) as Omit<ReceivedEvent, 'id'>;
        } catch {
          this.forged++;
          res.writeHead(400).end();
          return;
        }
        this.deliveries++;
        const id = headers['webhook-id'] as string;
        if (!this.events.some((e) => e.id === id)) this.events.push({ id, ...payload });
        if (this.answer >= 200 && this.answer < 300 && !this.taken.some((e) => e.id === id)) this.taken.push({ id, ...payload });
        res.writeHead(this.answer).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  /** Down: the port refuses connections until start() again (same port). */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  types(): string[] {
    return this.events.map((e) => e.type);
  }

  /** The types of the events answered 2xx, in the order they were. */
  takenTypes(): string[] {
    return this.taken.map((e) => e.type);
  }
}

export interface ReceivedMail {
  from: string;
  to: string[];
  raw: string;
  /** The session was upgraded by STARTTLS before the mail. */
  secure: boolean;
  user: string | undefined;
}

export class MailReceiver {
  readonly mails: ReceivedMail[] = [];
  private readonly hold = new NextHold();
  private server: SMTPServer | null = null;
  port = 0;

  /** Mails that arrived while held (holdNextMail). */
  get held(): number {
    return this.hold.held;
  }

  /** The next mail is read but not answered until the returned function is called: a slow relay. */
  holdNextMail(): () => void {
    return this.hold.arm();
  }

  constructor(
    private readonly tls: { certFile: string; keyFile: string },
    private readonly login: { user: string; password: string },
  ) {}

  async start(): Promise<void> {
    const server = new SMTPServer({
      secure: false,
      key: readFileSync(this.tls.keyFile),
      cert: readFileSync(this.tls.certFile),
      authMethods: ['PLAIN', 'LOGIN'],
      // No AUTH before STARTTLS (smtp-server's default): the password never crosses in clear.
      onAuth: (auth, _session, cb) => {
        if (auth.username === this.login.user && auth.password === this.login.password) cb(null, { user: auth.username });
        else cb(new Error('invalid login'));
      },
      onData: (stream, session, cb) => {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', async () => {
          await this.hold.wait();
          this.mails.push({
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            to: session.envelope.rcptTo.map((r) => r.address),
            raw: Buffer.concat(chunks).toString('utf8'),
            secure: session.secure,
            user: session.user as string | undefined,
          });
          cb();
        });
      },
      logger: false,
      disabledCommands: [],
    });
    server.on('error', () => undefined);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.port = (server.server.address() as AddressInfo).port;
    this.server = server;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/**
 * For each test of the calling `describe` (call it there): a MailReceiver taking `login`, with a throwaway
 * certificate in a folder of its own (`certDir`: its `cert.pem` is the CA the mail settings name), stopped and
 * removed after the test. Read `.mail` and `.certDir` inside the tests.
 */
export function useMailReceiver(login: { user: string; password: string }): { readonly mail: MailReceiver; readonly certDir: string } {
  let mail: MailReceiver | null = null;
  let certDir = '';
  beforeEach(async () => {
    certDir = await mkdtemp(join(tmpdir(), 'payoutd-smtp-'));
    mail = new MailReceiver(selfSignedCert(certDir), login);
    await mail.start();
  });
  afterEach(async () => {
    await mail?.stop();
    await rm(certDir, { recursive: true, force: true });
  });
  return {
    get mail(): MailReceiver {
      return mail as MailReceiver;
    },
    get certDir(): string {
      return certDir;
    },
  };
}

/**
 * One pass as the daemon's notify loops make it: the delivery records of the events stored, then every channel's lane
 * at once. How many deliveries the lanes handled (an event counts once per channel that took it).
 */
export async function deliveryPass(dispatcher: NotificationDispatcher, signal?: AbortSignal): Promise<number> {
  await dispatcher.prepare();
  const handled = await Promise.all(dispatcher.channelNames().map((name) => dispatcher.lanePass(name, signal)));
  return handled.reduce((a, n) => a + n, 0);
}
