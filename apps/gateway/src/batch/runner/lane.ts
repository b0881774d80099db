/**
 * The low-priority lane of batch lines, per batch-runner process:
 * - at most `cap` lines of one model run at once (batch work never floods a model's replicas);
 * - while interactive requests are in flight anywhere (`pressure()`, the gateways' count: see
 *   ../pressure.ts) the cap drops to `yieldCap`, so batch work takes only what interactive traffic
 *   leaves free (0 stops new lines entirely while any interactive request runs);
 * - a model that answered 429 or 503 gets no new lines until its backoff passes (doubling from
 *   `backoffMinMs` to `backoffMaxMs`, reset by the next success).
 * Lines already running are never interrupted: yielding is about starting new ones.
 */
export interface LaneOptions {
  cap: number;
  yieldCap: number;
  backoffMinMs: number;
  backoffMaxMs: number;
  /** Interactive requests in flight now (cached by the caller; read at every admission). */
  pressure: () => number;
  now?: () => number;
}

interface ModelLane {
  running: number;
  pausedUntil: number;
  backoffMs: number;
}

export class BatchLane {
  private readonly models = new Map<string, ModelLane>();
  private waiters: (() => void)[] = [];
  private readonly now: () => number;
  /** Admissions deferred because interactive requests were in flight (a metric). */
  yields = 0;

  constructor(private readonly opts: LaneOptions) {
    this.now = opts.now ?? Date.now;
  }

  private lane(model: string): ModelLane {
    let l = this.models.get(model);
    if (!l) {
      l = { running: 0, pausedUntil: 0, backoffMs: 0 };
      this.models.set(model, l);
    }
    return l;
  }

  /** The cap that applies to a model now. */
  capNow(): number {
    return this.opts.pressure() > 0 ? this.opts.yieldCap : this.opts.cap;
  }

  get yielding(): boolean {
    return this.opts.pressure() > 0;
  }

  get running(): number {
    let n = 0;
    for (const l of this.models.values()) n += l.running;
    return n;
  }

  /** Takes a slot when one frees; resolves false (no slot) when `stopped()` turns true first. */
  async acquire(model: string, stopped: () => boolean): Promise<boolean> {
    const l = this.lane(model);
    for (;;) {
      if (stopped()) return false;
      const cap = this.capNow();
      if (l.running < cap && this.now() >= l.pausedUntil) {
        l.running++;
        return true;
      }
      if (l.running < this.opts.cap && cap < this.opts.cap) this.yields++;
      // Woken by a release, or re-checked after 50 ms (pressure and backoff change with time).
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 50);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  release(model: string): void {
    const l = this.lane(model);
    if (l.running > 0) l.running--;
    const w = this.waiters;
    this.waiters = [];
    for (const wake of w) wake();
  }

  /** A 429/503 from the model: pause it; returns how long. */
  backoff(model: string): number {
    const l = this.lane(model);
    l.backoffMs = l.backoffMs ? Math.min(l.backoffMs * 2, this.opts.backoffMaxMs) : this.opts.backoffMinMs;
    l.pausedUntil = Math.max(l.pausedUntil, this.now() + l.backoffMs);
    return l.backoffMs;
  }

  succeeded(model: string): void {
    const l = this.models.get(model);
    if (l) l.backoffMs = 0;
  }
}
