/**
 * The sandbox's one source of chance, a seeded PRNG (mulberry32): a given seed and request order make the same
 * choices. Secrets and webhook nonces come from node:crypto instead: they must not be predictable.
 */

export interface Random {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [min, max], both inclusive. */
  int(min: number, max: number): number;
  /** True with probability p; draws nothing when p is 0 or 1, so switched-off faults leave the sequence alone. */
  chance(p: number): boolean;
  /** `length` upper-case hex digits. */
  hex(length: number): string;
}

export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    chance: (p) => (p <= 0 ? false : p >= 1 ? true : next() < p),
    hex: (length) => {
      let out = '';
      while (out.length < length)
        out += Math.floor(next() * 0x10000)
          .toString(16)
          .padStart(4, '0');
      return out.slice(0, length).toUpperCase();
    },
  };
}
