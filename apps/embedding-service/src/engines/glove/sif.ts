import { terms } from '../../tokens.js';
import { hash32 } from '../lexical-hash.js';
import type { WordVectors } from './store.js';

/**
 * SIF sentence embeddings (Arora, Liang, Ma: "A Simple but Tough-to-Beat Baseline for Sentence
 * Embeddings", ICLR 2017) over GloVe word vectors, projected to the catalog's dimensions.
 *
 * 1. Words: tokens.ts `terms` (NFKC, lower case; camelCase identifiers also give their parts). A word in
 *    the vocabulary takes its vector; punctuation only when the vocabulary has it.
 * 2. Weights: a / (a + p(w)), `a` = `sifA` (default 1e-3). p(w) is the word's unigram probability,
 *    estimated from its frequency rank r (the vocabulary is ordered by corpus frequency) with Zipf's law,
 *    p = 1 / ((r + 1) * H) with H = ln(341,479) + 0.5772 (the full GloVe vocabulary): "the" weighs 0.01,
 *    a word of rank 1,000 about 0.93, rare words 1.
 * 3. The sentence vector is the weighted average, minus its projection on the common component u:
 *    v - (u . v) u. SIF computes u from the sentences at hand; for a stable vector (the same text
 *    always gives the same vector) u is computed once from the vocabulary itself: the first principal
 *    direction of the weighted word vectors under the frequency distribution, sum_w p(w) (s_w v_w)(s_w v_w)^T,
 *    over the 20,000 most frequent words (power iteration).
 * 4. Unknown words (rare names, identifiers, typos, other scripts, emoji) are never dropped silently:
 *    a known stem after removing a plural/verb suffix, else a split into at most 3 known pieces of 3+
 *    letters (`ratelimiting` -> rate + limiting), else a HASHED subword vector: the sum of fixed
 *    pseudo-random vectors of the word's character 3-grams (padded `<word>`), so that spellings that
 *    share n-grams stay close, scaled to the typical norm of a rare word. They weigh as rare words.
 * 5. A text with no word at all (only spaces or unknown symbols) takes the hashed vector of its raw
 *    characters, so no input gives the zero vector.
 * 6. The 100-dimension result is L2-normalised and mapped to `dims` by a fixed orthonormal projection
 *    Q (dims x 100, Q^T Q = I: Gaussian entries from a seeded generator, then Gram-Schmidt), which keeps
 *    every cosine and the unit length; the result is renormalised in float32.
 */
export interface SifOptions {
  sifA: number;
  removeCommonComponent: boolean;
  dims: number;
  seed: number;
}

/** Size of the full GloVe 6B vocabulary, for the Zipf estimate of p(w). */
const FULL_VOCAB = 341_479;
const HARMONIC = Math.log(FULL_VOCAB) + 0.5772156649;
const SUFFIXES = ['s', 'es', 'ed', 'ing', 'ly', 'er', 'ers', 'ies'];

export class SifEmbedder {
  readonly wordDims: number;
  private readonly common: Float64Array | null;
  private readonly projection: Float32Array;
  private readonly rareNorm: number;
  private readonly oov = new Map<string, Float64Array>();

  constructor(
    private readonly wv: WordVectors,
    private readonly o: SifOptions,
  ) {
    this.wordDims = wv.dims;
    if (o.dims < wv.dims) throw new Error(`cannot project ${wv.dims} dimensions into ${o.dims}`);
    this.rareNorm = medianNorm(wv, Math.min(50_000, wv.words.length >> 1), wv.words.length);
    this.common = o.removeCommonComponent ? this.commonComponent(Math.min(20_000, wv.words.length)) : null;
    this.projection = orthonormalProjection(o.dims, wv.dims, o.seed);
  }

  /** p(w) by Zipf from the frequency rank. */
  weight(rank: number): number {
    const p = 1 / ((rank + 1) * HARMONIC);
    return this.o.sifA / (this.o.sifA + p);
  }

  /** The unit sentence vector in the word-vector space (before projection). */
  sentence(text: string): Float64Array {
    const d = this.wordDims;
    const acc = new Float64Array(d);
    let total = 0;
    for (const t of terms(text, { splitIdentifiers: true })) {
      if (t.kind !== 'word') continue;
      const r = this.wv.rank.get(t.text);
      if (r !== undefined) {
        const w = this.weight(r);
        const scale = this.wv.scales[r] as number;
        const off = r * d;
        for (let j = 0; j < d; j++)
          acc[j] = (acc[j] as number) + w * scale * (this.wv.values[off + j] as number);
        total += w;
        continue;
      }
      const v = this.unknown(t.text);
      const w = this.weight(this.wv.words.length);
      for (let j = 0; j < d; j++) acc[j] = (acc[j] as number) + w * (v[j] as number);
      total += w;
    }
    if (total === 0) {
      const v = hashedVector(text, d, this.rareNorm);
      for (let j = 0; j < d; j++) acc[j] = v[j] as number;
    } else {
      for (let j = 0; j < d; j++) acc[j] = (acc[j] as number) / total;
    }
    if (this.common) {
      const u = this.common;
      let dot = 0;
      for (let j = 0; j < d; j++) dot += (acc[j] as number) * (u[j] as number);
      for (let j = 0; j < d; j++) acc[j] = (acc[j] as number) - dot * (u[j] as number);
    }
    normalize(acc);
    if (!Number.isFinite(acc[0] as number) || norm(acc) === 0) {
      // A text whose average is exactly its common component: fall back to its hashed vector.
      const v = hashedVector(text, d, 1);
      normalize(v);
      return v;
    }
    return acc;
  }

  /** The unit vector of `text` in `dims` dimensions. */
  embed(text: string): Float32Array {
    return this.project(this.sentence(text));
  }

  project(x: Float64Array): Float32Array {
    const { dims } = this.o;
    const d = this.wordDims;
    const q = this.projection;
    const out = new Float32Array(dims);
    let sq = 0;
    for (let i = 0; i < dims; i++) {
      let s = 0;
      const off = i * d;
      for (let j = 0; j < d; j++) s += (q[off + j] as number) * (x[j] as number);
      out[i] = s;
      sq += s * s;
    }
    const inv = 1 / Math.sqrt(sq);
    for (let i = 0; i < dims; i++) out[i] = (out[i] as number) * inv;
    return out;
  }

  /** The vector of an out-of-vocabulary word (cached). */
  unknown(word: string): Float64Array {
    const hit = this.oov.get(word);
    if (hit) return hit;
    const v = this.stemOrPieces(word) ?? hashedVector(word, this.wordDims, this.rareNorm);
    if (this.oov.size >= 50_000) this.oov.clear();
    this.oov.set(word, v);
    return v;
  }

  private stemOrPieces(word: string): Float64Array | null {
    for (const suf of SUFFIXES) {
      if (word.length - suf.length < 3 || !word.endsWith(suf)) continue;
      const stem = word.slice(0, -suf.length);
      const r = this.wv.rank.get(stem) ?? (suf === 'ies' ? this.wv.rank.get(`${stem}y`) : undefined);
      if (r !== undefined) return this.wordVector(r);
    }
    // Fewest known pieces of 3+ characters covering the word (at most 3), by dynamic programming.
    const cps = [...word];
    const n = cps.length;
    if (n < 6 || n > 40) return null;
    const best: Array<{ k: number; from: number; r: number } | null> = Array(n + 1).fill(null);
    best[0] = { k: 0, from: -1, r: -1 };
    for (let end = 3; end <= n; end++) {
      for (let start = 0; start <= end - 3; start++) {
        const prev = best[start];
        if (!prev || prev.k >= 3) continue;
        const r = this.wv.rank.get(cps.slice(start, end).join(''));
        if (r === undefined) continue;
        const cur = best[end];
        if (!cur || prev.k + 1 < cur.k) best[end] = { k: prev.k + 1, from: start, r };
      }
    }
    const last = best[n];
    if (!last || last.k < 2) return null;
    const v = new Float64Array(this.wordDims);
    for (let at = n; at > 0; ) {
      const b = best[at] as { k: number; from: number; r: number };
      const pv = this.wordVector(b.r);
      for (let j = 0; j < v.length; j++) v[j] = (v[j] as number) + (pv[j] as number) / last.k;
      at = b.from;
    }
    return v;
  }

  private wordVector(r: number): Float64Array {
    const d = this.wordDims;
    const v = new Float64Array(d);
    const s = this.wv.scales[r] as number;
    for (let j = 0; j < d; j++) v[j] = s * (this.wv.values[r * d + j] as number);
    return v;
  }

  private commonComponent(top: number): Float64Array {
    const d = this.wordDims;
    const c = new Float64Array(d * d);
    const v = new Float64Array(d);
    for (let r = 0; r < top; r++) {
      const p = 1 / ((r + 1) * HARMONIC);
      const w = this.weight(r) * (this.wv.scales[r] as number);
      for (let j = 0; j < d; j++) v[j] = w * (this.wv.values[r * d + j] as number);
      for (let i = 0; i < d; i++) {
        const pi = p * (v[i] as number);
        const row = i * d;
        for (let j = i; j < d; j++) c[row + j] = (c[row + j] as number) + pi * (v[j] as number);
      }
    }
    for (let i = 0; i < d; i++) for (let j = 0; j < i; j++) c[i * d + j] = c[j * d + i] as number;
    let u = new Float64Array(d).fill(1 / Math.sqrt(d));
    for (let it = 0; it < 200; it++) {
      const next = new Float64Array(d);
      for (let i = 0; i < d; i++) {
        let s = 0;
        for (let j = 0; j < d; j++) s += (c[i * d + j] as number) * (u[j] as number);
        next[i] = s;
      }
      normalize(next);
      let diff = 0;
      for (let j = 0; j < d; j++) diff += Math.abs((next[j] as number) - (u[j] as number));
      u = next;
      if (diff < 1e-12) break;
    }
    return u;
  }
}

/** A fixed pseudo-random vector per character 3-gram of `<text>`, summed and scaled to `length`. */
export function hashedVector(text: string, d: number, length: number): Float64Array {
  const v = new Float64Array(d);
  const cps = [...`<${text}>`];
  const grams: string[] = [];
  if (cps.length < 3) grams.push(cps.join(''));
  for (let k = 0; k + 3 <= cps.length; k++) grams.push(cps.slice(k, k + 3).join(''));
  for (const g of grams) {
    const rnd = splitmix32(hash32(g, 0x5eed));
    for (let j = 0; j < d; j++) v[j] = (v[j] as number) + gaussian(rnd);
  }
  const n = norm(v);
  for (let j = 0; j < d; j++) v[j] = ((v[j] as number) / n) * length;
  return v;
}

/** dims x d matrix (row major) with orthonormal columns, from a seeded generator. */
export function orthonormalProjection(dims: number, d: number, seed: number): Float32Array {
  const rnd = splitmix32(seed ^ 0x9e3779b9);
  const cols: Float64Array[] = [];
  for (let j = 0; j < d; j++) {
    const c = new Float64Array(dims);
    for (let i = 0; i < dims; i++) c[i] = gaussian(rnd);
    // Modified Gram-Schmidt, twice for accuracy.
    for (let pass = 0; pass < 2; pass++) {
      for (const prev of cols) {
        let dot = 0;
        for (let i = 0; i < dims; i++) dot += (c[i] as number) * (prev[i] as number);
        for (let i = 0; i < dims; i++) c[i] = (c[i] as number) - dot * (prev[i] as number);
      }
    }
    normalize(c);
    cols.push(c);
  }
  const q = new Float32Array(dims * d);
  for (let i = 0; i < dims; i++)
    for (let j = 0; j < d; j++) q[i * d + j] = (cols[j] as Float64Array)[i] as number;
  return q;
}

function splitmix32(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return ((z ^ (z >>> 16)) >>> 0) / 4294967296;
  };
}

function gaussian(rnd: () => number): number {
  const u = 1 - rnd();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rnd());
}

function norm(v: Float64Array): number {
  let s = 0;
  for (const x of v) s += x * x;
  return Math.sqrt(s);
}

function normalize(v: Float64Array): void {
  const n = norm(v);
  if (n === 0) return;
  for (let j = 0; j < v.length; j++) v[j] = (v[j] as number) / n;
}

function medianNorm(wv: WordVectors, from: number, to: number): number {
  const d = wv.dims;
  const norms: number[] = [];
  const step = Math.max(1, Math.floor((to - from) / 2000));
  for (let r = from; r < to; r += step) {
    let s = 0;
    for (let j = 0; j < d; j++) s += (wv.values[r * d + j] as number) ** 2;
    norms.push(Math.sqrt(s) * (wv.scales[r] as number));
  }
  norms.sort((a, b) => a - b);
  return norms[norms.length >> 1] ?? 1;
}
