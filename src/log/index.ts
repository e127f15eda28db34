export { createLogger, safeError, type Logger } from './logger.js';
