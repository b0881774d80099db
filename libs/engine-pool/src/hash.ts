/**
 * Hashing for the pools: FNV-1a over UTF-16 code units (no encoding, no allocation), finished with
 * murmur3's fmix32 so that nearby inputs land far apart on the ring. Deterministic across processes and
 * machines: every service replica computes the same key for the same prompt.
 */

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** FNV-1a of `s[0, end)` continued from `h`. */
export function fnv1a(s: string, h = FNV_OFFSET, end = s.length): number {
  const n = Math.min(end, s.length);
  for (let i = 0; i < n; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, FNV_PRIME);
  }
  return h >>> 0;
}

/** murmur3's finalizer: spreads the bits of a 32-bit hash. */
export function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * Characters of one prompt block: about 16 tokens of English text (4 characters a token), the block
 * size of vLLM's prefix cache.
 */
export const BLOCK_CHARS = 64;
/**
 * How much of each part enters the key: the first KEY_HEAD characters in full, then every KEY_STRIDE-th
 * character up to KEY_BLOCKS blocks (2 samples per block), then the part's length. Two prompts that agree
 * on all of that almost surely share those leading blocks (and send them to one replica, which is what we
 * want anyway); the sampling keeps the key's cost flat and small for long documents (ADR 0060).
 */
export const KEY_BLOCKS = 64;
const KEY_HEAD = 128;
const KEY_STRIDE = BLOCK_CHARS / 2;
const KEY_CHARS = BLOCK_CHARS * KEY_BLOCKS;

/**
 * The affinity key of a prompt from its leading parts, in the order the engine's template renders them
 * (system prompt, tool names, the first user turn): FNV-1a over each part's sampled leading blocks,
 * with each part's length mixed in (so the split between parts counts).
 */
export class AffinityKey {
  private h = FNV_OFFSET;

  add(part: string): this {
    let h = fnv1a(part, this.h, KEY_HEAD);
    const n = Math.min(part.length, KEY_CHARS);
    for (let i = KEY_HEAD; i < n; i += KEY_STRIDE) {
      h ^= part.charCodeAt(i);
      h = Math.imul(h, FNV_PRIME);
    }
    this.h = Math.imul(h ^ (part.length & 0xffffff), FNV_PRIME) >>> 0;
    return this;
  }

  value(): number {
    return fmix32(this.h);
  }
}

/** Position of an endpoint's virtual node `i` on the ring. */
export function nodeHash(url: string, i: number): number {
  return fmix32(fnv1a(`${url}#${i}`));
}
