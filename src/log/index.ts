export { createLogger, safeError, REDACT_PATHS, type Logger } from './logger.js';
