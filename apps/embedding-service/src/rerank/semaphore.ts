/**
 * At most `limit` tasks at once; the others wait in FIFO order. A waiter whose signal aborts leaves the
 * line at once and rejects with the signal's reason.
 */
export class Semaphore {
  private active = 0;
  private readonly waiting: Array<{ go(): void; signal: AbortSignal; onAbort(): void }> = [];

  constructor(private readonly limit: number) {}

  get running(): number {
    return this.active;
  }

  get queued(): number {
    return this.waiting.length;
  }

  async run<T>(signal: AbortSignal, task: () => Promise<T>): Promise<T> {
    await this.acquire(signal);
    try {
      return await task();
    } finally {
      this.release();
    }
  }

  private acquire(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    if (this.active < this.limit) {
      this.active++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const w = {
        signal,
        go: () => {
          signal.removeEventListener('abort', w.onAbort);
          this.active++;
          resolve();
        },
        onAbort: () => {
          const i = this.waiting.indexOf(w);
          if (i >= 0) this.waiting.splice(i, 1);
          reject(signal.reason);
        },
      };
      signal.addEventListener('abort', w.onAbort, { once: true });
      this.waiting.push(w);
    });
  }

  private release(): void {
    this.active--;
    this.waiting.shift()?.go();
  }
}
