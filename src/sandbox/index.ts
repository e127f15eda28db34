/**
 * The embedded sandbox: a strict in-memory implementation of the payout API on node:http, with settlement,
 * signed webhooks, fault injection and loopback admin endpoints (docs/sandbox.md).
 */
export { startSandbox, type SandboxServer } from './server.js';
export {
  sandboxOptionsSchema,
  loadSandboxConfigFile,
  type SandboxOptions,
  type SandboxMerchant,
  type SandboxFaultsInput,
  type DuplicatePolicy,
} from './options.js';
export type { LedgerEntry } from './ledger.js';
export { quotePayout } from './quote.js';
export { API_PATHS, BUSINESS_PATHS } from './paths.js';
