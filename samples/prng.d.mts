/** mulberry32: a small, fast, seeded PRNG (samples/prng.mjs). */
export function prng(seed: number): () => number;
