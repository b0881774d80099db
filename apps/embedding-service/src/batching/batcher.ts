import type { BatchSettings } from '../engines/settings.js';

/** An item to batch; `tokens` counts against the batch's token budget. */
export interface BatchItem {
  tokens: number;
}

/** Runs one batch: one output per item, in the order of the items. */
export type RunBatch<I, O> = (items: I[], signal: AbortSignal) => Promise<O[]>;

interface Job<O> {
  results: O[];
  remaining: number;
  settled: boolean;
  resolve(v: O[]): void;
  reject(e: unknown): void;
  signal: AbortSignal;
  onAbort(): void;
  /** Batches in flight that hold items of this job. */
  batches: Set<Batch<O>>;
}

interface Entry<I, O> {
  job: Job<O>;
  index: number;
  item: I;
  /** performance.now() when queued. */
  at: number;
}

interface Batch<O> {
  jobs: Set<Job<O>>;
  ac: AbortController;
}

export interface BatcherStats {
  /** Engine calls made. */
  batches: number;
  /** Items sent to the engine. */
  items: number;
  /** Most items in one engine call. */
  largest: number;
}

/**
 * DYNAMIC BATCHING of one model's work: concurrent requests submit their items (texts), and engine calls
 * take items from the front of one FIFO queue, from as many requests as fit, within a size budget
 * (`max_items`, `max_tokens`; an item larger than the token budget goes alone) and a time budget:
 *   - an idle engine (no call in flight) starts at once, so a lone request pays no wait;
 *   - while calls are in flight and a slot is free, the oldest queued item waits at most `max_wait_ms`
 *     for company (or until the batch is full);
 *   - while all `max_concurrent` slots are busy, items pile up and the next call takes a full batch, so
 *     batches grow with load by themselves.
 * Results are split back per request, in item order. A request larger than the budget is spread over
 * several calls.
 *
 * Cancellation: when a request's signal aborts, its items still queued are removed, it rejects at once
 * with the signal's reason, and an engine call whose every request is gone is aborted too. A failing
 * engine call rejects the requests that had items in it (their other items are dropped from the queue).
 *
 * `enabled: false` keeps the queue, budgets and concurrency but never merges two requests in one call
 * and never waits: the baseline for the benchmark.
 */
export class DynamicBatcher<I extends BatchItem, O> {
  private queue: Array<Entry<I, O>> = [];
  private queuedTokens = 0;
  private running = 0;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  readonly stats: BatcherStats = { batches: 0, items: 0, largest: 0 };

  constructor(
    private readonly run: RunBatch<I, O>,
    readonly settings: BatchSettings,
  ) {}

  /** Queued items not yet in an engine call. */
  get pending(): number {
    return this.queue.length;
  }

  submit(items: readonly I[], signal: AbortSignal): Promise<O[]> {
    if (items.length === 0) return Promise.resolve([]);
    if (signal.aborted) return Promise.reject(signal.reason);
    if (this.closed) return Promise.reject(new Error('the batcher is closed'));
    return new Promise<O[]>((resolve, reject) => {
      const job: Job<O> = {
        results: new Array<O>(items.length),
        remaining: items.length,
        settled: false,
        resolve,
        reject,
        signal,
        onAbort: () => this.abortJob(job, signal.reason),
        batches: new Set(),
      };
      signal.addEventListener('abort', job.onAbort, { once: true });
      const at = performance.now();
      items.forEach((item, index) => {
        this.queue.push({ job, index, item, at });
        this.queuedTokens += item.tokens;
      });
      this.schedule();
    });
  }

  /** Rejects everything queued; calls in flight finish on their own. */
  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const jobs = new Set(this.queue.map((e) => e.job));
    for (const job of jobs) this.fail(job, new Error('the batcher is closed'));
  }

  private schedule(): void {
    const s = this.settings;
    while (this.running < s.max_concurrent && this.queue.length > 0) {
      const waited = performance.now() - (this.queue[0] as Entry<I, O>).at;
      const full = this.queue.length >= s.max_items || this.queuedTokens >= s.max_tokens;
      // An idle engine starts at once: waiting only pays when other work is in flight (under load).
      if (!s.enabled || full || this.running === 0 || waited >= s.max_wait_ms) {
        this.dispatch();
        continue;
      }
      // Wait for company, but no longer than the oldest item's time budget.
      this.timer ??= setTimeout(
        () => {
          this.timer = null;
          this.schedule();
        },
        Math.max(0, s.max_wait_ms - waited),
      );
      return;
    }
    if (this.queue.length === 0 && this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
  }

  private dispatch(): void {
    const s = this.settings;
    const entries: Array<Entry<I, O>> = [];
    let tokens = 0;
    const firstJob = (this.queue[0] as Entry<I, O>).job;
    let take = 0;
    for (const e of this.queue) {
      if (entries.length >= s.max_items) break;
      if (entries.length > 0 && tokens + e.item.tokens > s.max_tokens) break;
      if (!s.enabled && e.job !== firstJob) break;
      entries.push(e);
      tokens += e.item.tokens;
      take++;
    }
    this.queue.splice(0, take);
    this.queuedTokens -= tokens;
    const batch: Batch<O> = { jobs: new Set(entries.map((e) => e.job)), ac: new AbortController() };
    for (const job of batch.jobs) job.batches.add(batch);
    this.running++;
    this.stats.batches++;
    this.stats.items += entries.length;
    this.stats.largest = Math.max(this.stats.largest, entries.length);
    const items = entries.map((e) => e.item);
    Promise.resolve()
      .then(() => this.run(items, batch.ac.signal))
      .then((outs) => {
        if (outs.length !== entries.length) {
          throw new Error(`the engine returned ${outs.length} results for ${entries.length} items`);
        }
        entries.forEach((e, i) => {
          const job = e.job;
          if (job.settled) return;
          job.results[e.index] = outs[i] as O;
          if (--job.remaining === 0) this.succeed(job);
        });
      })
      .catch((err: unknown) => {
        for (const job of batch.jobs) this.fail(job, err);
      })
      .finally(() => {
        this.running--;
        for (const job of batch.jobs) job.batches.delete(batch);
        this.schedule();
      });
  }

  private succeed(job: Job<O>): void {
    job.settled = true;
    job.signal.removeEventListener('abort', job.onAbort);
    job.resolve(job.results);
  }

  private fail(job: Job<O>, err: unknown): void {
    if (job.settled) return;
    job.settled = true;
    job.signal.removeEventListener('abort', job.onAbort);
    if (this.queue.some((e) => e.job === job)) {
      this.queue = this.queue.filter((e) => {
        if (e.job !== job) return true;
        this.queuedTokens -= e.item.tokens;
        return false;
      });
    }
    job.reject(err);
  }

  private abortJob(job: Job<O>, reason: unknown): void {
    if (job.settled) return;
    this.fail(job, reason);
    // An engine call that no request waits for any more is stopped.
    for (const batch of job.batches) {
      if ([...batch.jobs].every((j) => j.settled)) batch.ac.abort(reason);
    }
    this.schedule();
  }
}
