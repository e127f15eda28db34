/** Canonical JSON and lossless parsing (numbers kept as their text). */
export * from './canonical.js';
