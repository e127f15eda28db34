/**
 * Test-only helpers for the sandbox tests: a merchant key pair, a minimal
 * signing caller over global fetch (built from src/signing, with knobs to
 * break each rule on purpose), and a webhook receiver on 127.0.0.1.
 * Not a client: the real one lives in src/api.
 */
import { createPrivateKey, randomUUID, type KeyObject } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Clock } from '../../src/domain/clock.js';
import { canonicalStringify, JsonNumber, minifyBodyText, parseLossless } from '../../src/json/index.js';
import {
  businessStringToSign,
  generateMerchantKeyPair,
  hmacKeyBytes,
  signHmac,
  signRsa,
  tokenStringToSign,
  verifyHmac,
  webhookStringToSign,
  type HmacKeyEncoding,
} from '../../src/signing/index.js';
import type { SandboxMerchant } from '../../src/sandbox/index.js';

export interface TestKeys {
  privateKey: KeyObject;
  publicKeyBase64: string;
  publicKeyPem: string;
}

export function makeKeys(): TestKeys {
  const pair = generateMerchantKeyPair(2048);
  return { privateKey: createPrivateKey(pair.privateKeyPem), publicKeyBase64: pair.publicKeyBase64, publicKeyPem: pair.publicKeyPem };
}

export function merchant(keys: TestKeys, overrides: Partial<SandboxMerchant> = {}): SandboxMerchant {
  return {
    merchantCode: 'M001',
    apiKey: 'api-key-M001',
    publicKey: keys.publicKeyBase64,
    balances: { USDT: '1000', USDC: '500' },
    ...overrides,
  };
}

/** A parsed envelope; `data` fields are reached with `field()`. */
export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  code: string;
  msg: string;
  data: Record<string, unknown>;
}

export interface Tweaks {
  method?: 'GET' | 'POST';
  timestamp?: string;
  nonce?: string;
  /** Header overrides; undefined removes the header. */
  headers?: Record<string, string | undefined>;
  /** Body actually sent, when it should differ from the signed one. */
  sendBody?: string;
  /** Raw body text to sign and send (instead of a value). */
  rawBody?: string;
  /** Token put in the string to sign, when it should differ from the header's. */
  signedToken?: string;
  /** Sign token calls with another private key. */
  signWith?: KeyObject;
  /** Sign business calls with another secret key. */
  secretKey?: string;
}

export interface CallerOptions {
  url: string;
  apiKey: string;
  merchantCode: string;
  privateKey: KeyObject;
  clock: Clock;
  mode?: 'standard' | 'client-id';
  clientId?: string;
  hmacKeyEncoding?: HmacKeyEncoding;
}

export interface Creds {
  accessToken: string;
  refreshToken: string;
  secretKey: string;
}

/** minifyBodyText, except that text it cannot render (a huge exponent) signs as its trimmed self, as the sandbox does. */
function minify(text: string): string {
  try {
    return minifyBodyText(text);
  } catch {
    return text.trim();
  }
}

async function toReply(res: Response): Promise<Reply> {
  const text = await res.text();
  const parsed = parseLossless(text) as { code: string; msg: string; data: Record<string, unknown> };
  return { status: res.status, headers: res.headers, text, code: parsed.code, msg: parsed.msg, data: parsed.data };
}

export class TestCaller {
  creds: Creds | undefined;

  constructor(readonly o: CallerOptions) {}

  private get clientIdMode(): boolean {
    return this.o.mode === 'client-id';
  }

  private timestamp(): string {
    const now = this.o.clock.now();
    return String(this.clientIdMode ? now : Math.floor(now / 1000));
  }

  private async send(method: string, path: string, headers: Record<string, string | undefined>, body: string): Promise<Reply> {
    const clean: Record<string, string> = {};
    for (const [k, v] of Object.entries(headers)) if (v !== undefined) clean[k] = v;
    const res = await fetch(this.o.url + path, { method, headers: clean, ...(method === 'GET' ? {} : { body }) });
    return toReply(res);
  }

  /** access-token / refresh-token, RSA-signed. */
  async token(path: string, body: Record<string, unknown>, t: Tweaks = {}): Promise<Reply> {
    const identity = this.clientIdMode ? (this.o.clientId ?? this.o.merchantCode) : this.o.merchantCode;
    const text = t.rawBody ?? canonicalStringify(this.clientIdMode ? { clientId: identity, ...body } : { merchantCode: identity, ...body });
    const timestamp = t.timestamp ?? this.timestamp();
    const nonce = t.nonce ?? randomUUID().replaceAll('-', '');
    const method = t.method ?? 'POST';
    const signature = signRsa(
      t.signWith ?? this.o.privateKey,
      tokenStringToSign({ method, path, minifiedBody: minify(text), apiKey: this.o.apiKey, merchantCode: identity, timestamp, nonce }),
    );
    const headers: Record<string, string | undefined> = {
      'Content-Type': 'application/json',
      SvcApiKey: this.o.apiKey,
      'X-TIMESTAMP': timestamp,
      'X-NONCE': nonce,
      'X-SIGNATURE': signature,
      ...(this.clientIdMode && { 'X-Client-Id': identity }),
      ...t.headers,
    };
    const reply = await this.send(method, path, headers, t.sendBody ?? text);
    if (reply.code === '0000') {
      this.creds = {
        accessToken: str(reply.data, 'accessToken'),
        refreshToken: str(reply.data, 'refreshToken'),
        secretKey: str(reply.data, 'secretKey'),
      };
    }
    return reply;
  }

  async accessToken(t: Tweaks = {}): Promise<Reply> {
    return this.token('/apis/v1/access-token', { grantType: 'client_credentials' }, t);
  }

  async refresh(refreshToken = this.creds?.refreshToken ?? '', t: Tweaks = {}): Promise<Reply> {
    return this.token('/apis/v1/refresh-token', { refreshToken }, t);
  }

  /** A business call, HMAC-signed with the current credentials. */
  async business(path: string, body: unknown, t: Tweaks = {}): Promise<Reply> {
    const creds = this.creds;
    if (!creds) throw new Error('no credentials: call accessToken() first');
    const method = t.method ?? 'POST';
    const text = t.rawBody ?? (body === undefined ? '' : canonicalStringify(body));
    const timestamp = t.timestamp ?? this.timestamp();
    const nonce = t.nonce ?? randomUUID().replaceAll('-', '');
    const key = hmacKeyBytes(t.secretKey ?? creds.secretKey, this.o.hmacKeyEncoding ?? 'utf8');
    const signature = signHmac(
      key,
      businessStringToSign({ method, path, accessToken: t.signedToken ?? creds.accessToken, minifiedBody: minify(text), timestamp, nonce }),
    );
    const authHeader = this.clientIdMode ? 'Authorization' : 'SvcAuthorization';
    const headers: Record<string, string | undefined> = {
      'Content-Type': 'application/json',
      SvcApiKey: this.o.apiKey,
      'X-TIMESTAMP': timestamp,
      'X-NONCE': nonce,
      'X-SIGNATURE': signature,
      [authHeader]: `Bearer ${creds.accessToken}`,
      ...t.headers,
    };
    return this.send(method, path, headers, t.sendBody ?? text);
  }
}

export function str(obj: unknown, name: string): string {
  const v = (obj as Record<string, unknown>)[name];
  if (typeof v !== 'string') throw new Error(`${name} is not a string`);
  return v;
}

/** The lexeme of a JSON number field, for exact assertions. */
export function num(obj: unknown, name: string): string {
  const v = (obj as Record<string, unknown>)[name];
  if (!(v instanceof JsonNumber)) throw new Error(`${name} is not a JSON number`);
  return v.value;
}

export function payoutBody(overrides: Record<string, unknown> = {}, accountNumber = '1234567890'): Record<string, unknown> {
  return {
    merchantReferenceId: `REF-${randomUUID()}`,
    deductionCurrency: 'USDT',
    payoutCurrency: 'PHP',
    payoutAmount: new JsonNumber('1000'),
    sender: { firstName: 'Ana', lastName: 'Cruz', country: 'PH', idType: 'PASSPORT', idValue: 'P1234567' },
    beneficiary: { accountName: 'Ben Reyes', accountNumber, bankCode: 'BPI' },
    ...overrides,
  };
}

export interface ReceivedWebhook {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** Whether X-SIGNATURE verifies with the secret the receiver was given. */
  signatureValid: boolean;
  json: { event: string; eventId: string; timestamp: string; data: Record<string, unknown> };
}

export interface WebhookReceiver {
  url: string;
  received: ReceivedWebhook[];
  /** Status codes to answer, in order (-1: no answer at all); 200 once exhausted. */
  statuses: number[];
  /** Resolves once `count` deliveries arrived. */
  waitFor(count: number): Promise<ReceivedWebhook[]>;
  close(): Promise<void>;
}

export async function startWebhookReceiver(secret: string, path = '/hooks/payout'): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  const waiters: { count: number; resolve: (r: ReceivedWebhook[]) => void }[] = [];
  const statuses: number[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const h = req.headers;
      const stringToSign = webhookStringToSign({
        path: req.url ?? '',
        minifiedBody: minifyBodyText(body),
        timestamp: String(h['x-timestamp']),
        nonce: String(h['x-nonce']),
      });
      received.push({
        path: req.url ?? '',
        headers: h,
        body,
        signatureValid: verifyHmac(Buffer.from(secret, 'utf8'), stringToSign, String(h['x-signature'])),
        json: JSON.parse(body) as ReceivedWebhook['json'],
      });
      const status = receiver.statuses.shift() ?? 200;
      // -1: never answer, so the sender's timeout fires.
      if (status >= 0) res.writeHead(status).end();
      for (const w of [...waiters]) {
        if (received.length >= w.count) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(received.slice());
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const receiver: WebhookReceiver = {
    url: `http://127.0.0.1:${port}${path}`,
    received,
    statuses,
    waitFor: (count) =>
      received.length >= count ? Promise.resolve(received.slice()) : new Promise((resolve) => waiters.push({ count, resolve })),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  return receiver;
}
