export { SECRET_KEYS, createLogger, safeError, type Logger } from './logger.js';
