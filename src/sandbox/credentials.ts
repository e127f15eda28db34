/**
 * Issued credentials (spec 2.2, 5.5). A refresh supersedes the set it renews, whose tokens are forgotten (1004,
 * not 1009/1010); a new access-token call issues an independent set (instances of one merchant each hold their
 * own). Sets whose refresh token expired are pruned. Tokens and secret keys come from node:crypto.
 */
import { randomBytes } from 'node:crypto';
import { hmacKeyBytes, type HmacKeyEncoding } from '../signing/signatures.js';

export interface Credentials {
  readonly merchantCode: string;
  readonly businessUserId: string;
  readonly accessToken: string;
  readonly refreshToken: string;
  readonly secretKey: string;
  /** HMAC key bytes derived once from secretKey. */
  readonly hmacKey: Buffer;
  readonly issuedAtMs: number;
  readonly accessExpiresAtMs: number;
  readonly refreshExpiresAtMs: number;
}

export interface CredentialPolicy {
  accessTokenTtlSeconds: number;
  refreshTokenTtlSeconds: number;
  hmacKeyEncoding: HmacKeyEncoding;
}

export function newSecretKey(encoding: HmacKeyEncoding): string {
  const bytes = randomBytes(32);
  if (encoding === 'hex') return bytes.toString('hex');
  if (encoding === 'base64') return bytes.toString('base64');
  // utf8: any text works; base64url keeps it printable and header-safe.
  return bytes.toString('base64url');
}

export class CredentialStore {
  private readonly byAccessToken = new Map<string, Credentials>();
  private readonly byRefreshToken = new Map<string, Credentials>();
  private lastPruneMs = 0;

  constructor(private readonly policy: CredentialPolicy) {}

  /** Issues a fresh set for the merchant; `replaces` (a refresh) is forgotten. */
  issue(merchantCode: string, businessUserId: string, nowMs: number, replaces?: Credentials): Credentials {
    if (replaces) this.forget(replaces);
    this.prune(nowMs);
    const secretKey = newSecretKey(this.policy.hmacKeyEncoding);
    const creds: Credentials = {
      merchantCode,
      businessUserId,
      accessToken: `AT${randomBytes(24).toString('hex')}`,
      refreshToken: `RT${randomBytes(24).toString('hex')}`,
      secretKey,
      hmacKey: hmacKeyBytes(secretKey, this.policy.hmacKeyEncoding),
      issuedAtMs: nowMs,
      accessExpiresAtMs: nowMs + this.policy.accessTokenTtlSeconds * 1000,
      refreshExpiresAtMs: nowMs + this.policy.refreshTokenTtlSeconds * 1000,
    };
    this.byAccessToken.set(creds.accessToken, creds);
    this.byRefreshToken.set(creds.refreshToken, creds);
    return creds;
  }

  private forget(c: Credentials): void {
    this.byAccessToken.delete(c.accessToken);
    this.byRefreshToken.delete(c.refreshToken);
  }

  /** Drops sets that can no longer be used or refreshed (at most once a minute). */
  private prune(nowMs: number): void {
    if (nowMs - this.lastPruneMs < 60_000) return;
    this.lastPruneMs = nowMs;
    for (const c of this.byRefreshToken.values()) if (c.refreshExpiresAtMs <= nowMs) this.forget(c);
  }

  byAccess(accessToken: string): Credentials | undefined {
    return this.byAccessToken.get(accessToken);
  }

  byRefresh(refreshToken: string): Credentials | undefined {
    return this.byRefreshToken.get(refreshToken);
  }
}
