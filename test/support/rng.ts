/** A small seeded PRNG (mulberry32) for reproducible fuzzing: the same seed gives the same requests. */
export interface Rng {
  /** An integer in [0, n). */
  int(n: number): number;
  pick<T>(items: readonly T[]): T;
  bytes(n: number): Buffer;
}

export function mulberry32(seed: number): Rng {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  return {
    int,
    pick: (items) => items[int(items.length)] as (typeof items)[number],
    bytes: (n) => Buffer.from(Array.from({ length: n }, () => int(256))),
  };
}
