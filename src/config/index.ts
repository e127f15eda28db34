/** Configuration: schema with defaults, loading (strict), secrets. */
export { configSchema, FOLDER_OPTIONS, type PayoutdConfig } from './schema.js';
export { loadConfig, readApiKey, readWebhookSecret, mergeDeep, type ResolvedConfig, type LoadConfigInput } from './load.js';
