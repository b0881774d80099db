import type { Redis } from 'ioredis';

/**
 * Per-minute, per-model traffic for the console's overview, shared by every gateway replica through
 * Redis. The request path only adds to an in-process table (a map lookup and a few integer
 * increments); once a second the table is written with one pipelined batch of HINCRBY, so Redis sees
 * one round trip per second per replica whatever the request rate. Latency goes into fixed
 * histogram buckets (the same bounds on every replica), so the buckets of all replicas add up and
 * p50/p99 come from the merged counts.
 *
 * Redis: one hash per minute, `<prefix>ov:<minute>` (minute = Unix seconds / 60), fields
 * `<model>\t<what>` with what = req | err | ref | srv | tok | b<i> (err: every status >= 400; ref: the
 * refusals among them, 429 and 402; srv: server errors, >= 500); kept OVERVIEW_TTL_S.
 */

/** Upper bounds (ms) of the latency buckets; a last bucket takes everything above. */
export const LATENCY_BOUNDS_MS = [
  5, 10, 25, 50, 75, 100, 150, 250, 400, 600, 1000, 1500, 2500, 4000, 6000, 10_000, 15_000, 30_000, 60_000,
  120_000,
] as const;
const BUCKETS = LATENCY_BOUNDS_MS.length + 1;
export const OVERVIEW_TTL_S = 3 * 3600;

export function bucketOf(ms: number): number {
  // Linear: 20 bounds, usually left in the first few steps; cheaper than a binary search here.
  for (let i = 0; i < LATENCY_BOUNDS_MS.length; i++) if (ms <= (LATENCY_BOUNDS_MS[i] as number)) return i;
  return LATENCY_BOUNDS_MS.length;
}

/**
 * The value under which `p` % of the observations fall: the upper bound of the bucket that holds the
 * nearest-rank observation (the last bucket reports the largest bound). null without observations.
 */
export function percentileOf(buckets: readonly number[], p: number): number | null {
  let total = 0;
  for (const n of buckets) total += n;
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil((p / 100) * total));
  let seen = 0;
  for (let i = 0; i < buckets.length; i++) {
    seen += buckets[i] as number;
    if (seen >= rank) return LATENCY_BOUNDS_MS[Math.min(i, LATENCY_BOUNDS_MS.length - 1)] as number;
  }
  return LATENCY_BOUNDS_MS.at(-1) as number;
}

interface Cell {
  req: number;
  err: number;
  /** Refusals (429, 402): part of `err`. */
  ref: number;
  /** Server errors (>= 500): part of `err`. */
  srv: number;
  tok: number;
  b: number[];
}

const newCell = (): Cell => ({
  req: 0,
  err: 0,
  ref: 0,
  srv: 0,
  tok: 0,
  b: new Array<number>(BUCKETS).fill(0),
});

export class TrafficRecorder {
  /** minute -> model -> counts not yet written. */
  private pending = new Map<number, Map<string, Cell>>();
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;

  constructor(
    private readonly redis: Pick<Redis, 'pipeline'>,
    private readonly prefix: string,
    private readonly flushMs = 1000,
    private readonly onError: (err: unknown) => void = () => undefined,
  ) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.flush(), this.flushMs);
    this.timer.unref();
  }

  /** One finished model request. Never throws, never waits. */
  record(model: string, status: number, latencyMs: number, tokens: number, now = Date.now()): void {
    const minute = Math.floor(now / 60_000);
    let byModel = this.pending.get(minute);
    if (!byModel) {
      byModel = new Map();
      this.pending.set(minute, byModel);
    }
    let c = byModel.get(model);
    if (!c) {
      c = newCell();
      byModel.set(model, c);
    }
    c.req++;
    if (status >= 400) {
      c.err++;
      if (status >= 500) c.srv++;
      else if (status === 429 || status === 402) c.ref++;
    }
    c.tok += tokens;
    const i = bucketOf(latencyMs);
    c.b[i] = (c.b[i] ?? 0) + 1;
  }

  /** Writes what was recorded since the last flush (one pipeline). */
  flush(): Promise<void> {
    if (this.flushing) return this.flushing;
    if (this.pending.size === 0) return Promise.resolve();
    const batch = this.pending;
    this.pending = new Map();
    const pipe = this.redis.pipeline();
    for (const [minute, byModel] of batch) {
      const key = `${this.prefix}ov:${minute}`;
      for (const [model, c] of byModel) {
        pipe.hincrby(key, `${model}\treq`, c.req);
        if (c.err) pipe.hincrby(key, `${model}\terr`, c.err);
        if (c.ref) pipe.hincrby(key, `${model}\tref`, c.ref);
        if (c.srv) pipe.hincrby(key, `${model}\tsrv`, c.srv);
        if (c.tok) pipe.hincrby(key, `${model}\ttok`, c.tok);
        for (let i = 0; i < BUCKETS; i++) if (c.b[i]) pipe.hincrby(key, `${model}\tb${i}`, c.b[i] as number);
      }
      pipe.expire(key, OVERVIEW_TTL_S);
    }
    this.flushing = pipe
      .exec()
      .then(
        () => undefined,
        (err: unknown) => this.onError(err),
      )
      .finally(() => {
        this.flushing = null;
      });
    return this.flushing;
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flushing;
    await this.flush();
  }
}

export interface ModelTraffic {
  model: string;
  requests: number;
  errors: number;
  tokens: number;
  p50_ms: number | null;
  p99_ms: number | null;
  requests_per_min: number[];
  errors_per_min: number[];
  /** Refusals (429, 402) per minute: part of errors_per_min. */
  refusals_per_min: number[];
  /** Server errors (>= 500) per minute: part of errors_per_min. */
  server_errors_per_min: number[];
  tokens_per_min: number[];
  p50_per_min: Array<number | null>;
  p99_per_min: Array<number | null>;
}

/**
 * Turns the minute hashes (oldest first, one per minute of the window, `{}` for a minute without
 * traffic) into per-model series and window totals.
 */
export function summarize(hashes: ReadonlyArray<Record<string, string>>): ModelTraffic[] {
  const n = hashes.length;
  const models = new Map<string, { cells: Cell[] }>();
  hashes.forEach((h, i) => {
    for (const [field, value] of Object.entries(h)) {
      const tab = field.lastIndexOf('\t');
      if (tab <= 0) continue;
      const model = field.slice(0, tab);
      const what = field.slice(tab + 1);
      let m = models.get(model);
      if (!m) {
        m = { cells: Array.from({ length: n }, newCell) };
        models.set(model, m);
      }
      const c = m.cells[i] as Cell;
      const v = Number(value) || 0;
      if (what === 'req') c.req += v;
      else if (what === 'err') c.err += v;
      else if (what === 'ref') c.ref += v;
      else if (what === 'srv') c.srv += v;
      else if (what === 'tok') c.tok += v;
      else if (what.startsWith('b')) {
        const b = Number(what.slice(1));
        if (Number.isInteger(b) && b >= 0 && b < BUCKETS) c.b[b] = (c.b[b] ?? 0) + v;
      }
    }
  });
  const out: ModelTraffic[] = [];
  for (const [model, { cells }] of models) {
    const all = new Array<number>(BUCKETS).fill(0);
    for (const c of cells) for (let b = 0; b < BUCKETS; b++) all[b] = (all[b] ?? 0) + (c.b[b] ?? 0);
    out.push({
      model,
      requests: cells.reduce((s, c) => s + c.req, 0),
      errors: cells.reduce((s, c) => s + c.err, 0),
      tokens: cells.reduce((s, c) => s + c.tok, 0),
      p50_ms: percentileOf(all, 50),
      p99_ms: percentileOf(all, 99),
      requests_per_min: cells.map((c) => c.req),
      errors_per_min: cells.map((c) => c.err),
      refusals_per_min: cells.map((c) => c.ref),
      server_errors_per_min: cells.map((c) => c.srv),
      tokens_per_min: cells.map((c) => c.tok),
      p50_per_min: cells.map((c) => percentileOf(c.b, 50)),
      p99_per_min: cells.map((c) => percentileOf(c.b, 99)),
    });
  }
  return out.sort((a, b) => b.requests - a.requests || a.model.localeCompare(b.model));
}

/** Reads the window's minute hashes (one pipeline) and summarizes them. */
export async function readTraffic(
  redis: Pick<Redis, 'pipeline'>,
  prefix: string,
  minutes: number,
  now = Date.now(),
): Promise<{ minuteStarts: number[]; models: ModelTraffic[] }> {
  const last = Math.floor(now / 60_000);
  const minuteList = Array.from({ length: minutes }, (_, i) => last - minutes + 1 + i);
  const pipe = redis.pipeline();
  for (const m of minuteList) pipe.hgetall(`${prefix}ov:${m}`);
  const res = (await pipe.exec()) ?? [];
  const hashes = res.map(([err, v]) => {
    if (err) throw err;
    return (v ?? {}) as Record<string, string>;
  });
  return { minuteStarts: minuteList.map((m) => m * 60), models: summarize(hashes) };
}
