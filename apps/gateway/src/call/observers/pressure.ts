import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';

/** Redis hash of interactive model requests in flight: field = gateway replica, value = `<count>:<epoch ms>`. */
export const PRESSURE_KEY_SUFFIX = 'lane:interactive';
/** A replica's report older than this is ignored (the replica died or lost Redis). */
export const PRESSURE_STALE_MS = 2_000;

/**
 * Interactive pressure, as the batch lane measures it: the interactive model requests in flight on
 * every gateway replica, as the peak of each `everyMs` window (a request of 2 ms that came and went
 * between two reports still counts). Each replica counts its own in memory (an increment when a model
 * request is admitted, a decrement when it settles: no Redis work on the request path) and writes
 * the window's peak to one Redis hash every `everyMs` (and at once when it leaves zero), so the batch
 * runners see the cluster's interactive load within ~100 ms.
 */
export class InteractivePressure {
  private inFlight = 0;
  /** Highest in-flight count since the last report. */
  private peak = 0;
  private timer: NodeJS.Timeout | undefined;
  private writing = false;
  readonly replica = randomBytes(6).toString('hex');

  constructor(
    private readonly redis: Redis,
    private readonly key: string,
    private readonly everyMs = 100,
  ) {}

  start(): void {
    this.timer ??= setInterval(() => void this.report(), this.everyMs);
    this.timer.unref();
  }

  begin(): void {
    const was = this.inFlight++;
    if (this.inFlight > this.peak) this.peak = this.inFlight;
    // Leaving zero is reported at once, but after the request has gone on its way (the end of this
    // turn of the event loop): the Redis write does not delay its NATS publish.
    if (was === 0 && this.timer) setImmediate(this.reportSoon);
  }

  private readonly reportSoon = (): void => {
    if (this.timer) void this.report(); // not after stop()
  };

  end(): void {
    if (this.inFlight > 0) this.inFlight--;
  }

  get count(): number {
    return this.inFlight;
  }

  private async report(): Promise<void> {
    if (this.writing) return;
    this.writing = true;
    try {
      const peak = this.peak;
      this.peak = this.inFlight;
      await this.redis.hset(this.key, this.replica, `${peak}:${Date.now()}`);
    } catch {
      // Redis down: the lane sees a stale report and treats it as zero; nothing to do here.
    } finally {
      this.writing = false;
    }
  }

  onApplicationShutdown(): Promise<void> {
    return this.stop();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.redis.hdel(this.key, this.replica).catch(() => undefined);
  }
}

/** Sum of the fresh reports in the hash: what the batch lane reads. */
export async function readPressure(redis: Redis, key: string, now = Date.now()): Promise<number> {
  const all = await redis.hgetall(key);
  let sum = 0;
  for (const v of Object.values(all)) {
    const i = v.indexOf(':');
    const n = Number(v.slice(0, i));
    const at = Number(v.slice(i + 1));
    if (Number.isFinite(n) && now - at <= PRESSURE_STALE_MS) sum += n;
  }
  return sum;
}
