import { type EngineFactory, EngineRegistry as EngineRegistryBase } from '@infer/runtime';
import { type Logger } from '@infer/telemetry';
import { EngineConfigError } from './settings.js';

export type { EngineFactory } from '@infer/runtime';

/**
 * The engines of one capability (embeddings, rerank), one instance per model id and configuration:
 * requests with the same settings share it (and its batcher and loaded weights); changed settings (a
 * catalog reload) replace it and close the old one once. An unknown engine type is an
 * EngineConfigError (its details go to the log, not to the client).
 */
export class EngineRegistry<E extends { close?(): Promise<void> }> extends EngineRegistryBase<E> {
  constructor(
    /** `embeddings` or `rerank`, for messages. */
    readonly capability: string,
    log: Logger,
    factories: ReadonlyArray<EngineFactory<E>> = [],
  ) {
    super(log, factories, {
      // A GenAI span per engine call, with tracing on (see traceEngine of @infer/telemetry).
      spans: capability === 'rerank' ? { rank: 'rerank' } : { embed: 'embeddings' },
      // The vector size and context window are part of what an engine serves.
      key: (model) => ({
        settings: model.engine,
        dimensions: model.dimensions,
        context_window: model.context_window,
      }),
      unknownType: (model, type, types) =>
        new EngineConfigError(
          model.id,
          `engine type '${type}' is not a ${capability} engine of this service (${[...types].sort().join(', ')})`,
        ),
    });
  }
}

/**
 * A lazily started async resource (weights, a context): started once, shared by every caller, and
 * forgotten when it fails, so that the next request tries again (e.g. after the operator fixed a path).
 */
export function lazy<T>(start: () => Promise<T>): { get(): Promise<T>; peek(): Promise<T> | null } {
  let p: Promise<T> | null = null;
  return {
    get() {
      if (!p) {
        p = start();
        p.catch(() => {
          p = null;
        });
      }
      return p;
    },
    peek: () => p,
  };
}
