/** Configuration: schema with defaults, loading, secrets. */
export { configSchema, type PayoutdConfig } from './schema.js';
export { loadConfig, readApiKey, readWebhookSecret, mergeDeep, type ResolvedConfig, type LoadConfigInput } from './load.js';
