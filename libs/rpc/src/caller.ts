import { AsyncLocalStorage } from 'node:async_hooks';
import type { PriorityClass } from '@infer/contracts';

/** Who a service is working for, as the engine pools need it (from the service envelope). */
export interface Caller {
  /** The caller's class (its tier, or `batch`); absent = community. */
  cls: PriorityClass | undefined;
  member: string;
  /** Epoch ms. */
  deadline: number;
}

const store = new AsyncLocalStorage<Caller>();

/**
 * Runs `fn` with `caller` as the current caller: the RPC server does it around every handler, so an
 * engine pool deep inside an engine (embeddings batches, transcription, images) orders its wait queue by
 * the caller's class without every engine interface carrying it.
 */
export function withCaller<T>(caller: Caller, fn: () => T): T {
  return store.run(caller, fn);
}

/** The caller of the work running now, if any. */
export function currentCaller(): Caller | undefined {
  return store.getStore();
}
