/**
 * What an engine reports about itself on its Prometheus `/metrics` (vLLM's or SGLang's metric names):
 * the prefix-cache counters, the scheduler's queue and the KV cache's fill. Read by the pool's timer
 * (EnginePool, `metrics_path`), never on the request path.
 */

/** One scrape, the figures the engine gave; NaN where it gives none. Reused from scrape to scrape. */
export interface EngineSample {
  /** Prefix-cache lookups and hits (tokens), counters since the engine started. */
  queries: number;
  hits: number;
  /** Older vLLM, SGLang without the counters: a hit-rate gauge instead of the counters. */
  hitRateGauge: number;
  waiting: number;
  running: number;
  /** 0..1 of the KV cache in use. */
  kvUsage: number;
}

export const emptySample = (): EngineSample => ({
  queries: Number.NaN,
  hits: Number.NaN,
  hitRateGauge: Number.NaN,
  waiting: Number.NaN,
  running: Number.NaN,
  kvUsage: Number.NaN,
});

// The names read. Per figure, its names in order of preference: vLLM's newer name, its older one, then
// SGLang's (`--enable-metrics`); the first with any series wins, so an engine that exports two
// generations is not counted twice.
const NAMES = [
  'vllm:prefix_cache_queries_total',
  'vllm:gpu_prefix_cache_queries_total',
  'sglang:prompt_tokens_total',
  'vllm:prefix_cache_hits_total',
  'vllm:gpu_prefix_cache_hits_total',
  'sglang:cached_tokens_total',
  'vllm:gpu_prefix_cache_hit_rate',
  'sglang:cache_hit_rate',
  'vllm:num_requests_waiting',
  'sglang:num_queue_reqs',
  'vllm:num_requests_running',
  'sglang:num_running_reqs',
  'vllm:kv_cache_usage_perc',
  'vllm:gpu_cache_usage_perc',
  'sglang:token_usage',
] as const;
const QUERIES = [0, 1, 2];
const HITS = [3, 4, 5];
const HIT_RATE = [6, 7];
const WAITING = [8, 9];
const RUNNING = [10, 11];
const KV = [12, 13, 14];

// Per name: the sum of its series' values and how many series there were (one pass, no allocation
// besides each read value's text).
const sums = new Float64Array(NAMES.length);
const counts = new Uint32Array(NAMES.length);

const V = 118; // 'v'
const S = 115; // 's'
const LBRACE = 123;
const RBRACE = 125;
const QUOTE = 34;
const BACKSLASH = 92;
const SPACE = 32;
const TAB = 9;
const CR = 13;

/**
 * Reads the vLLM or SGLang figures from a Prometheus text exposition into `out`; only the lines of the
 * names above are looked at (comments, histograms and other metrics are skipped at their first
 * characters).
 * Several series of one name (labels such as `model_name` or `engine`) are summed; the fractions
 * (hit-rate gauge, KV cache usage) averaged. Returns whether any of the names was there.
 */
export function parseEngineMetrics(text: string, out: EngineSample): boolean {
  sums.fill(0);
  counts.fill(0);
  const n = text.length;
  let found = false;
  for (let i = 0; i < n; ) {
    let end = text.indexOf('\n', i);
    if (end < 0) end = n;
    const c = text.charCodeAt(i);
    if ((c === V && text.startsWith('vllm:', i)) || (c === S && text.startsWith('sglang:', i))) {
      for (let k = 0; k < NAMES.length; k++) {
        const name = NAMES[k] as string;
        if (!text.startsWith(name, i)) continue;
        const after = text.charCodeAt(i + name.length);
        if (after !== LBRACE && after !== SPACE && after !== TAB) continue;
        const v = readValue(text, i + name.length, end);
        if (Number.isFinite(v)) {
          sums[k] = (sums[k] as number) + v;
          counts[k] = (counts[k] as number) + 1;
          found = true;
        }
        break;
      }
    }
    i = end + 1;
  }
  out.queries = pick(QUERIES, false);
  out.hits = pick(HITS, false);
  // Counters only as a pair (a hit count without its queries says nothing).
  if (Number.isNaN(out.queries) || Number.isNaN(out.hits)) out.queries = out.hits = Number.NaN;
  out.hitRateGauge = pick(HIT_RATE, true);
  out.waiting = pick(WAITING, false);
  out.running = pick(RUNNING, false);
  out.kvUsage = pick(KV, true);
  return found;
}

/** The first of `names` (indexes into NAMES) that had a series: their sum, or their mean for a fraction. */
function pick(names: readonly number[], mean: boolean): number {
  for (const k of names) {
    const n = counts[k] as number;
    if (n > 0) return mean ? (sums[k] as number) / n : (sums[k] as number);
  }
  return Number.NaN;
}

/** The sample value after a metric name: past the label set (quoted values may hold `}`), up to a blank. */
function readValue(text: string, from: number, end: number): number {
  let i = from;
  if (text.charCodeAt(i) === LBRACE) {
    let quoted = false;
    for (i++; i < end; i++) {
      const c = text.charCodeAt(i);
      if (quoted) {
        if (c === BACKSLASH) i++;
        else if (c === QUOTE) quoted = false;
      } else if (c === QUOTE) quoted = true;
      else if (c === RBRACE) break;
    }
    i++;
  }
  while (i < end && (text.charCodeAt(i) === SPACE || text.charCodeAt(i) === TAB)) i++;
  let j = i;
  while (j < end) {
    const c = text.charCodeAt(j);
    if (c === SPACE || c === TAB || c === CR) break;
    j++;
  }
  return j > i ? Number(text.slice(i, j)) : Number.NaN;
}

/** How far back the hit rate looks: counter deltas over about the last minute. */
export const HIT_WINDOW_MS = 60_000;
const RING = 64;

/**
 * An endpoint's engine-reported figures, from its last scrapes. The prefix-cache hit rate is RECENT:
 * hits / queries over the counters' change between the oldest sample of the last HIT_WINDOW_MS (a ring
 * of at most 64 samples, so a fast scrape interval shortens the window) and the newest one. With one
 * sample, or no lookups in the window (an idle engine), it is the engine's lifetime rate. A counter
 * that went down means the engine restarted: the ring starts again from that sample. An engine that
 * only has the older hit-rate gauge reports that gauge.
 */
export class EngineReport {
  cacheHitRate: number | null = null;
  kvUsage: number | null = null;
  waiting: number | null = null;
  running: number | null = null;
  /** Epoch ms of the last good scrape; 0 = nothing reported. */
  at = 0;
  private readonly t = new Float64Array(RING);
  private readonly q = new Float64Array(RING);
  private readonly h = new Float64Array(RING);
  /** Index of the next write; `size` samples end just before it. */
  private head = 0;
  private size = 0;

  /** Takes one scrape's sample, read at `now` (epoch ms). */
  record(s: EngineSample, now: number): void {
    this.at = now;
    this.waiting = Number.isFinite(s.waiting) ? Math.max(0, Math.round(s.waiting)) : null;
    this.running = Number.isFinite(s.running) ? Math.max(0, Math.round(s.running)) : null;
    this.kvUsage = Number.isFinite(s.kvUsage) ? clamp01(s.kvUsage) : null;
    if (Number.isFinite(s.queries) && Number.isFinite(s.hits)) {
      if (this.size) {
        const last = (this.head + RING - 1) % RING;
        if (s.queries < (this.q[last] as number) || s.hits < (this.h[last] as number)) this.size = 0;
      }
      this.t[this.head] = now;
      this.q[this.head] = s.queries;
      this.h[this.head] = s.hits;
      this.head = (this.head + 1) % RING;
      if (this.size < RING) this.size++;
      this.cacheHitRate = this.rate(now, s.queries, s.hits);
    } else {
      this.size = 0;
      this.cacheHitRate = Number.isFinite(s.hitRateGauge) ? clamp01(s.hitRateGauge) : null;
    }
  }

  /** Nothing reported (a failed scrape, an engine without these metrics). */
  clear(): void {
    this.cacheHitRate = this.kvUsage = this.waiting = this.running = null;
    this.at = 0;
    this.size = 0;
  }

  private rate(now: number, queries: number, hits: number): number | null {
    // The oldest sample still inside the window (the newest one always is).
    let base = (this.head + RING - 1) % RING;
    for (let k = this.size - 1; k >= 1; k--) {
      const i = (this.head + RING - 1 - k) % RING;
      if (now - (this.t[i] as number) <= HIT_WINDOW_MS) {
        base = i;
        break;
      }
    }
    const dq = queries - (this.q[base] as number);
    if (dq > 0) return clamp01((hits - (this.h[base] as number)) / dq);
    return queries > 0 ? clamp01(hits / queries) : null;
  }
}

const clamp01 = (x: number) => Math.min(1, Math.max(0, x));
