/**
 * Request authentication (spec 5.2-5.6) in a fixed order: Content-Type, required headers, API key, timestamp
 * window, nonce replay, then the signature. A nonce is recorded only once the signature verified. Failure
 * messages name the header or rule, never a header's value.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { KeyObject } from 'node:crypto';
import type { Clock } from '../domain/clock.js';
import { businessStringToSign, tokenStringToSign, verifyHmac, verifyRsa } from '../signing/signatures.js';
import type { CredentialStore, Credentials } from './credentials.js';
import { accessTokenExpired, invalidAccess } from './errors.js';
import type { NonceWindow } from '../signing/nonces.js';
import type { AuthMode, SandboxMerchant } from './options.js';

/** A merchant as the server holds it: its options plus what is derived once. */
export interface MerchantState {
  readonly options: SandboxMerchant;
  readonly merchantCode: string;
  readonly clientId: string;
  readonly businessUserId: string;
  readonly publicKey: KeyObject;
}

/** What authentication looks at in a request. */
export interface SignedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The minified body (spec 5.3), computed once per request. */
  minifiedBody: string;
  /** The parsed body, or undefined when empty or not JSON. */
  body: unknown;
}

export interface AuthDeps {
  authMode: AuthMode;
  clockSkewSeconds: number;
  merchantsByApiKey: ReadonlyMap<string, MerchantState>;
  credentials: CredentialStore;
  nonces: NonceWindow;
  clock: Clock;
}

export interface BusinessCaller {
  merchant: MerchantState;
  credentials: Credentials;
}

/** Longest X-NONCE accepted (spec recommends 32); keeps the nonce store's memory bounded. */
export const MAX_NONCE_LENGTH = 128;

function header(headers: IncomingHttpHeaders, lowerName: string): string | undefined {
  const value = headers[lowerName];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function requireHeader(headers: IncomingHttpHeaders, name: string): string {
  const value = header(headers, name.toLowerCase());
  if (value === undefined) throw invalidAccess(`missing header ${name}`);
  return value;
}

export function isJsonContentType(value: string | undefined): boolean {
  if (value === undefined) return false;
  const semi = value.indexOf(';');
  return (semi < 0 ? value : value.slice(0, semi)).trim().toLowerCase() === 'application/json';
}

interface CommonParts {
  merchant: MerchantState;
  apiKey: string;
  timestamp: string;
  nonce: string;
  nonceKey: string;
  signature: string;
}

function checkCommon(deps: AuthDeps, req: SignedRequest, extraHeaders: readonly string[]): CommonParts & { extra: string[] } {
  if (!isJsonContentType(header(req.headers, 'content-type'))) throw invalidAccess('Content-Type must be application/json');
  const apiKey = requireHeader(req.headers, 'SvcApiKey');
  const timestamp = requireHeader(req.headers, 'X-TIMESTAMP');
  const nonce = requireHeader(req.headers, 'X-NONCE');
  const signature = requireHeader(req.headers, 'X-SIGNATURE');
  const extra = extraHeaders.map((name) => requireHeader(req.headers, name));

  const merchant = deps.merchantsByApiKey.get(apiKey);
  if (!merchant) throw invalidAccess('unknown API key');

  if (!/^\d{1,16}$/.test(timestamp)) throw invalidAccess('timestamp outside the accepted window (X-TIMESTAMP must be an integer)');
  // Spec 5.6: the client-id form carries milliseconds.
  const sentMs = deps.authMode === 'client-id' ? Number(timestamp) : Number(timestamp) * 1000;
  if (Math.abs(deps.clock.now() - sentMs) > deps.clockSkewSeconds * 1000) throw invalidAccess('timestamp outside the accepted window');

  if (nonce.length > MAX_NONCE_LENGTH) throw invalidAccess(`X-NONCE longer than ${MAX_NONCE_LENGTH} characters`);
  const nonceKey = `${merchant.merchantCode}\n${nonce}`;
  if (deps.nonces.has(nonceKey, deps.clock.now())) throw invalidAccess('nonce replayed');

  return { merchant, apiKey, timestamp, nonce, nonceKey, signature, extra };
}

function bodyField(body: unknown, name: string): unknown {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  return Object.hasOwn(body, name) ? (body as Record<string, unknown>)[name] : undefined;
}

/** access-token / refresh-token: RSA signature by the merchant key (spec 5.3). */
export function authenticateTokenCall(deps: AuthDeps, req: SignedRequest): MerchantState {
  const clientIdMode = deps.authMode === 'client-id';
  const parts = checkCommon(deps, req, clientIdMode ? ['X-Client-Id'] : []);
  const { merchant } = parts;
  // In the client-id form the clientId takes merchantCode's place everywhere.
  const identity = clientIdMode ? merchant.clientId : merchant.merchantCode;
  if (clientIdMode && parts.extra[0] !== identity) throw invalidAccess('X-Client-Id does not match the API key');
  const bodyName = clientIdMode ? 'clientId' : 'merchantCode';
  if (bodyField(req.body, bodyName) !== identity) throw invalidAccess(`${bodyName} does not match the API key`);

  const stringToSign = tokenStringToSign({
    method: req.method,
    path: req.path,
    minifiedBody: req.minifiedBody,
    apiKey: parts.apiKey,
    merchantCode: identity,
    timestamp: parts.timestamp,
    nonce: parts.nonce,
  });
  if (!verifyRsa(merchant.publicKey, stringToSign, parts.signature)) throw invalidAccess('signature does not verify');
  deps.nonces.record(parts.nonceKey, deps.clock.now());
  return merchant;
}

/** Business endpoints: a live access token of this merchant and its HMAC (spec 5.4). */
export function authenticateBusinessCall(deps: AuthDeps, req: SignedRequest): BusinessCaller {
  const clientIdMode = deps.authMode === 'client-id';
  const authHeader = clientIdMode ? 'Authorization' : 'SvcAuthorization';
  const parts = checkCommon(deps, req, [authHeader]);
  const { merchant } = parts;
  if (clientIdMode) {
    // Optional on business calls (the token names the merchant), but it must not contradict it.
    const clientId = header(req.headers, 'x-client-id');
    if (clientId !== undefined && clientId !== merchant.clientId) throw invalidAccess('X-Client-Id does not match the API key');
  }

  // As spec 5.4 writes it, and no looser: a client whose header a real service might refuse must fail here too.
  const match = /^Bearer (\S+)$/.exec(parts.extra[0] ?? '');
  if (!match?.[1]) throw invalidAccess(`${authHeader} must be "Bearer <accessToken>"`);
  const accessToken = match[1];
  const credentials = deps.credentials.byAccess(accessToken);
  if (!credentials || credentials.merchantCode !== merchant.merchantCode) throw invalidAccess('access token is not valid');
  if (deps.clock.now() >= credentials.accessExpiresAtMs) throw accessTokenExpired();

  const stringToSign = businessStringToSign({
    method: req.method,
    path: req.path,
    accessToken,
    minifiedBody: req.minifiedBody,
    timestamp: parts.timestamp,
    nonce: parts.nonce,
  });
  if (!verifyHmac(credentials.hmacKey, stringToSign, parts.signature)) throw invalidAccess('signature does not verify');
  deps.nonces.record(parts.nonceKey, deps.clock.now());
  return { merchant, credentials };
}
