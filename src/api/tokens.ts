/**
 * TokenManager: holds the merchant's credentials (spec 5.5) and keeps them valid: gets them on first use,
 * refreshes before the accessToken expires or after a 1009, starts over after a 1010 or a failed refresh, with
 * never more than one token call in flight. A token's life counts from its request, not its arrival.
 */
import type { Clock } from '../domain/clock.js';

export interface Credentials {
  accessToken: string;
  refreshToken: string;
  secretKey: string;
  /** ms since epoch the credentials' life counts from: when they were requested, or the service's earlier `timestamp`. */
  issuedAt: number;
  /** ms since epoch when the answer carrying them arrived. */
  receivedAt: number;
  /** ms since epoch when accessToken expires. */
  accessExpiresAt: number;
  /** ms since epoch when refreshToken expires; null when the service does not say. */
  refreshExpiresAt: number | null;
}

/** What a token answer says of the credentials' life, and when it was asked for and came. */
export interface TokenAnswerTimes {
  /** ms since epoch the token call that answered was sent. */
  requestedAt: number;
  receivedAt: number;
  accessExpiresInSeconds: number;
  refreshExpiresInSeconds: number | null;
  /** The answer's issuance time (spec 2.2 `timestamp`) in ms since epoch; null when absent. */
  issuedAtByService: number | null;
}

/**
 * When credentials expire by this process's clock, counted from the request (the side that never
 * overestimates). The service's `timestamp` counts instead when it says they are clearly older than the
 * request, but never so far back that they would be dead on arrival (a clock out of step).
 */
export function credentialTimes(
  t: TokenAnswerTimes,
): Pick<Credentials, 'issuedAt' | 'receivedAt' | 'accessExpiresAt' | 'refreshExpiresAt'> {
  const life = (from: number) => ({
    issuedAt: from,
    receivedAt: t.receivedAt,
    accessExpiresAt: from + t.accessExpiresInSeconds * 1000,
    refreshExpiresAt: t.refreshExpiresInSeconds === null ? null : from + t.refreshExpiresInSeconds * 1000,
  });
  const byService = t.issuedAtByService;
  if (byService !== null && byService + 1000 <= t.requestedAt && byService + t.accessExpiresInSeconds * 1000 > t.receivedAt)
    return life(byService);
  return life(t.requestedAt);
}

/** The token calls; `signal` abandons one, its retries and the waits between them. */
export interface TokenSource {
  acquire(signal?: AbortSignal): Promise<Credentials>;
  /** refresh-token call; throws on failure. */
  refresh(refreshToken: string, signal?: AbortSignal): Promise<Credentials>;
}

/** `work`, or the signal's reason once it aborts first: a caller stops waiting; the work goes on for whoever else waits. */
function whileNotAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return work;
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err as Error);
      },
    );
  });
}

export interface TokenManagerOptions {
  clock: Clock;
  /** Refresh this long before accessToken expiry, ms. */
  refreshBeforeMs: number;
  onRenewed?: (how: 'acquire' | 'refresh') => void;
  /** The service refused the credentials in use (1009 expired, 1004 invalid): once per renewal this starts, not per call. */
  onRefused?: (code: string) => void;
}

export class TokenManager {
  private creds: Credentials | null = null;
  private inflight: Promise<Credentials> | null = null;

  constructor(
    private readonly source: TokenSource,
    private readonly options: TokenManagerOptions,
  ) {}

  /**
   * Valid credentials for the next business call. `signal` ends the wait, and the token call when this call
   * starts it (one renewal serves every caller; the others stop waiting on their own signal).
   */
  async current(signal?: AbortSignal): Promise<Credentials> {
    if (this.inflight) return whileNotAborted(this.inflight, signal);
    const creds = this.creds;
    if (!creds) return this.renew(null, signal);
    // Never renew earlier than halfway through the life a token had left when it came: short-lived tokens would
    // be renewed before every call. Counted from its arrival, as its expiry is counted from its request.
    const margin = Math.max(0, Math.min(this.options.refreshBeforeMs, (creds.accessExpiresAt - creds.receivedAt) / 2));
    if (this.options.clock.now() >= creds.accessExpiresAt - margin) return this.renew(creds, signal);
    return creds;
  }

  /** The service said the token in `used` expired (1009): renew unless another caller did, and hand back credentials. */
  async expired(used: Credentials, code: string, signal?: AbortSignal): Promise<Credentials> {
    if (this.inflight) return whileNotAborted(this.inflight, signal);
    if (this.creds !== used) return this.current(signal);
    this.options.onRefused?.(code);
    return this.renew(used, signal);
  }

  /** The service refused the token outright (1004): forget it and start over. */
  async invalid(used: Credentials, code: string, signal?: AbortSignal): Promise<Credentials> {
    if (this.inflight) return whileNotAborted(this.inflight, signal);
    if (this.creds !== used) return this.current(signal);
    this.options.onRefused?.(code);
    return this.renew(null, signal);
  }

  private renew(from: Credentials | null, signal: AbortSignal | undefined): Promise<Credentials> {
    const run = async (): Promise<Credentials> => {
      const now = this.options.clock.now();
      const canRefresh = from !== null && (from.refreshExpiresAt === null || now < from.refreshExpiresAt);
      if (canRefresh) {
        try {
          const next = await this.source.refresh(from.refreshToken, signal);
          this.options.onRenewed?.('refresh');
          return next;
        } catch (err) {
          // Abandoned: no new credentials are asked for either.
          if (signal?.aborted) throw err;
          // 1010, a superseded token or any refresh failure: acquire anew (spec 5.5 step 4).
        }
      }
      const next = await this.source.acquire(signal);
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
