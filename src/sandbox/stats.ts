/** Counters the sandbox keeps for tests and benchmarks (stats(), GET /__sandbox/stats). */

export interface SandboxStats {
  /** Requests per path (API and admin); unknown paths count under 'other'. */
  requests: Record<string, number>;
  accessTokensIssued: number;
  refreshesIssued: number;
  /** Authentication failures per envelope code (1004, 1009, 1010). */
  authFailures: Record<string, number>;
  /** Business failures per envelope code (2001..2005). */
  businessErrors: Record<string, number>;
  /** Payouts created (debited), duplicates under 'allow' included. */
  creates: number;
  /** Creates answered with the original payout (return-original). */
  duplicateCreates: number;
  /**
   * Creates for a reference already used, whatever the policy answered: with another payoutAmount, payoutCurrency,
   * deductionCurrency or beneficiary accountNumber than its first payout (return-original hides the change), and
   * while a payout of it is PAID or CANCELLED. A client that pays each row once sends neither.
   */
  repeatedCreates: { mismatched: number; afterFinal: number };
  pending: number;
  paid: number;
  cancelled: number;
  /** Injected request faults. */
  faults: {
    dropped: number;
    errors: number;
    rateLimited: number;
    commitThenError: number;
    commitThenDrop: number;
    delayed: number;
    commitDelayed: number;
  };
  /** Delivery attempts made. */
  webhooksSent: number;
  /** Deliveries acknowledged with 2xx (a duplicated event counts twice). */
  webhooksDelivered: number;
  /** Deliveries given up after the last retry. */
  webhooksFailed: number;
  /** Attempts that failed (non-2xx, error, timeout) and were retried or given up. */
  webhookAttemptsFailed: number;
  /** Events dropped by the loss fault. */
  webhooksLost: number;
  /** Events sent twice by the duplicate fault. */
  webhooksDuplicated: number;
  /** Errors answered as HTTP 500 that were not injected. */
  internalErrors: number;
  /** `stateFile` only: ledger changes journaled, and the fsyncs that made them durable (changes waiting together share one). */
  journal: { changes: number; syncs: number };
  /** Work waiting on a timer: settlements queued, and latency / webhook retry / reorder timers. All 0 after close(). */
  scheduled: { settlements: number; timers: number };
}

export function emptyStats(): SandboxStats {
  return {
    requests: {},
    accessTokensIssued: 0,
    refreshesIssued: 0,
    authFailures: {},
    businessErrors: {},
    creates: 0,
    duplicateCreates: 0,
    repeatedCreates: { mismatched: 0, afterFinal: 0 },
    pending: 0,
    paid: 0,
    cancelled: 0,
    faults: { dropped: 0, errors: 0, rateLimited: 0, commitThenError: 0, commitThenDrop: 0, delayed: 0, commitDelayed: 0 },
    webhooksSent: 0,
    webhooksDelivered: 0,
    webhooksFailed: 0,
    webhookAttemptsFailed: 0,
    webhooksLost: 0,
    webhooksDuplicated: 0,
    internalErrors: 0,
    journal: { changes: 0, syncs: 0 },
    scheduled: { settlements: 0, timers: 0 },
  };
}

export function bump(counters: Record<string, number>, key: string): void {
  counters[key] = (counters[key] ?? 0) + 1;
}

export function copyStats(s: SandboxStats): SandboxStats {
  return {
    ...s,
    requests: { ...s.requests },
    authFailures: { ...s.authFailures },
    businessErrors: { ...s.businessErrors },
    repeatedCreates: { ...s.repeatedCreates },
    faults: { ...s.faults },
    journal: { ...s.journal },
  };
}
