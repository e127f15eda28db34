export { createLogger, REDACT_PATHS, type Logger } from './logger.js';
