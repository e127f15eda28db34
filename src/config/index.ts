/** Configuration: schema with defaults, loading (strict), secrets, and what a SIGHUP may change live. */
export { FOLDER_OPTIONS, webhookName } from './schema.js';
export {
  loadConfig,
  notFoundGraceProblem,
  readApiKey,
  readWebhookSecret,
  secretInFile,
  type ResolvedConfig,
  type SecretFileRead,
} from './load.js';
export { applyLiveOptions, checkReloadKeeps, optionChanges, type OptionChange } from './live.js';
export { approvalInUse, type ApprovalConfig, type LimitsConfig } from './approval-schema.js';
