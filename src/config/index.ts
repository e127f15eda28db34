/** Configuration: schema with defaults, loading (strict), secrets, and what a SIGHUP may change live. */
export { configSchema, FOLDER_OPTIONS, type PayoutdConfig } from './schema.js';
export { loadConfig, readApiKey, readWebhookSecret, mergeDeep, type ResolvedConfig, type LoadConfigInput } from './load.js';
export { applyLiveOptions, optionChanges, isLiveOption, LIVE_OPTIONS, type OptionChange } from './live.js';
export { approvalInUse, type ApprovalConfig, type LimitsConfig } from './approval-schema.js';
