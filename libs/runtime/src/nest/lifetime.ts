import type { BeforeApplicationShutdown, OnApplicationBootstrap } from '@nestjs/common';

/**
 * Something a process runs for as long as its Nest app runs (a BullMQ worker, a stream consumer), as a
 * provider: started once the app is up (onApplicationBootstrap), stopped before the app's connections
 * close (beforeApplicationShutdown). Subclass it to give the provider a name to inject and get.
 */
export class AppLifetime<T> implements OnApplicationBootstrap, BeforeApplicationShutdown {
  /** What start() returned, while it runs. */
  value: T | null = null;

  constructor(
    private readonly start: () => Promise<T>,
    private readonly stop: (value: T) => Promise<void>,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    this.value = await this.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    const v = this.value;
    this.value = null;
    if (v !== null) await this.stop(v);
  }
}
