/**
 * TokenManager: holds the merchant's credentials (spec 5.5) and keeps them
 * valid. Gets them on first use, refreshes shortly before the accessToken
 * expires, refreshes after a 1009, starts over with access-token after a
 * 1010 or a failed refresh — and never has more than one token call in
 * flight, however many business calls are waiting (single-flight).
 */
import type { Clock } from '../domain/clock.js';

export interface Credentials {
  accessToken: string;
  refreshToken: string;
  secretKey: string;
  /** ms since epoch when the credentials were received. */
  issuedAt: number;
  /** ms since epoch when accessToken expires. */
  accessExpiresAt: number;
  /** ms since epoch when refreshToken expires; null when the service does not say. */
  refreshExpiresAt: number | null;
}

export interface TokenSource {
  /** access-token call. */
  acquire(): Promise<Credentials>;
  /** refresh-token call; throws on failure. */
  refresh(refreshToken: string): Promise<Credentials>;
}

export interface TokenManagerOptions {
  clock: Clock;
  /** Refresh this long before accessToken expiry, ms. */
  refreshBeforeMs: number;
  onRenewed?: (how: 'acquire' | 'refresh') => void;
  onRefreshFailed?: (err: unknown) => void;
}

export class TokenManager {
  private creds: Credentials | null = null;
  private inflight: Promise<Credentials> | null = null;

  constructor(
    private readonly source: TokenSource,
    private readonly options: TokenManagerOptions,
  ) {}

  /** Valid credentials for the next business call. */
  async current(): Promise<Credentials> {
    if (this.inflight) return this.inflight;
    const creds = this.creds;
    if (!creds) return this.renew(null);
    // Never renew earlier than halfway through a token's life: short-lived tokens would be renewed before every call.
    const margin = Math.min(this.options.refreshBeforeMs, (creds.accessExpiresAt - creds.issuedAt) / 2);
    if (this.options.clock.now() >= creds.accessExpiresAt - margin) return this.renew(creds);
    return creds;
  }

  /**
   * The service said the token in `used` expired (1009). Renew unless some
   * other caller already did, then hand back the credentials to retry with.
   */
  async expired(used: Credentials): Promise<Credentials> {
    if (this.inflight) return this.inflight;
    if (this.creds !== used) return this.current();
    return this.renew(used);
  }

  /** The service refused the token outright (1004): forget it and start over. */
  async invalid(used: Credentials): Promise<Credentials> {
    if (this.inflight) return this.inflight;
    if (this.creds !== used) return this.current();
    return this.renew(null);
  }

  private renew(from: Credentials | null): Promise<Credentials> {
    const run = async (): Promise<Credentials> => {
      const now = this.options.clock.now();
      const canRefresh = from !== null && (from.refreshExpiresAt === null || now < from.refreshExpiresAt);
      if (canRefresh) {
        try {
          const next = await this.source.refresh(from.refreshToken);
          this.options.onRenewed?.('refresh');
          return next;
        } catch (err) {
          // 1010, a superseded token or any refresh failure: spec 5.5 step 4.
          this.options.onRefreshFailed?.(err);
        }
      }
      const next = await this.source.acquire();
      this.options.onRenewed?.('acquire');
      return next;
    };
    const p = run().then(
      (next) => {
        this.creds = next;
        this.inflight = null;
        return next;
      },
      (err: unknown) => {
        this.inflight = null;
        throw err;
      },
    );
    this.inflight = p;
    return p;
  }
}
