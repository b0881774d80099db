import { nodeHash } from './hash.js';

/** Virtual nodes per unit of weight: enough for an even spread over a handful of endpoints. */
export const VNODES_PER_WEIGHT = 100;

/**
 * A consistent-hash ring: sorted virtual-node positions and, for each, the index of its endpoint in the
 * pool's endpoint array. Built when the endpoint set changes (never per request); a lookup is one binary
 * search. Positions depend only on the endpoints' URLs and weights, so every service replica that sees
 * the same endpoints builds the same ring.
 */
export class HashRing {
  readonly points: Uint32Array;
  readonly owners: Uint16Array;

  constructor(endpoints: ReadonlyArray<{ url: string; weight: number }>) {
    const pairs: Array<[number, number]> = [];
    endpoints.forEach((e, idx) => {
      const n = VNODES_PER_WEIGHT * e.weight;
      for (let i = 0; i < n; i++) pairs.push([nodeHash(e.url, i), idx]);
    });
    pairs.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    this.points = Uint32Array.from(pairs, (p) => p[0]);
    this.owners = Uint16Array.from(pairs, (p) => p[1]);
  }

  get size(): number {
    return this.points.length;
  }

  /** Index in `points` of the first virtual node at or after `key` (wrapping to 0). */
  start(key: number): number {
    const p = this.points;
    let lo = 0;
    let hi = p.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((p[mid] as number) < key) lo = mid + 1;
      else hi = mid;
    }
    return lo === p.length ? 0 : lo;
  }
}
