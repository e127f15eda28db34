/**
 * The embedded sandbox: a strict in-memory implementation of the payout API on node:http, with settlement,
 * signed webhooks, fault injection and loopback admin endpoints (docs/sandbox.md).
 */
export { startSandbox, type SandboxServer } from './server.js';
export {
  sandboxOptionsSchema,
  sandboxFaultsPatchSchema,
  loadSandboxConfigFile,
  resolveSandboxConfig,
  DEFAULT_RATES,
  DEFAULT_FAULTS,
  type SandboxOptions,
  type SandboxConfig,
  type SandboxConfigInput,
  type SandboxMerchant,
  type SandboxFaults,
  type SandboxFaultsInput,
  type RateLimitFault,
  type SettlementOptions,
  type WebhookOptions,
  type AuthMode,
  type DuplicatePolicy,
} from './options.js';
export type { LedgerEntry } from './ledger.js';
export type { SandboxStats } from './stats.js';
export type { SandboxLogger } from './logger.js';
export { SandboxError, API_CODES } from './errors.js';
export { quotePayout, type Quote } from './quote.js';
export { API_PATHS, BUSINESS_PATHS, type ApiPath } from './paths.js';
