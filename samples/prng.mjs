// mulberry32: a small, fast, seeded PRNG. The sample generator makes the same
// file from the same seed with it, and randomized tests replay their failures.

/** @param {number} seed @returns {() => number} a number in [0, 1) per call */
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
