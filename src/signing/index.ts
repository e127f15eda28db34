/** Signing: strings to sign, RSA/HMAC signatures, constant-time checks, merchant keys. */
export * from './signatures.js';
export * from './keys.js';
export * from './nonces.js';
export * from './webhook-scheme.js';
