import type { CatalogEntry } from '@infer/contracts';
import type { Logger } from '@infer/service-kit';
import { EngineConfigError, type EngineContext, type EngineSettings } from './settings.js';

/** Makes engines of one type from a catalog entry's `engine` settings. */
export interface EngineFactory<E> {
  readonly type: string;
  /** Validates the settings (EngineConfigError when they cannot work) and builds the engine. */
  create(settings: EngineSettings, ctx: EngineContext): E;
}

interface Closable {
  readonly type: string;
  close?(): Promise<void>;
}

/**
 * Picks the engine of a model from its catalog entry (`model.engine.type`), one registry per capability
 * (embeddings, rerank), and keeps one instance per model id and configuration: requests with the same
 * settings share it (and its batcher and loaded weights); changed settings (a catalog reload) replace
 * it and close the old one once.
 */
export class EngineRegistry<E extends Closable> {
  private readonly factories = new Map<string, EngineFactory<E>>();
  private readonly engines = new Map<string, { key: string; engine: E }>();

  constructor(
    /** `embeddings` or `rerank`, for messages. */
    readonly capability: string,
    private readonly log: Logger,
    factories: ReadonlyArray<EngineFactory<E>> = [],
  ) {
    for (const f of factories) this.register(f);
  }

  register(factory: EngineFactory<E>): this {
    this.factories.set(factory.type, factory);
    return this;
  }

  get types(): string[] {
    return [...this.factories.keys()].sort();
  }

  get(model: CatalogEntry): E {
    const settings = model.engine as EngineSettings;
    // The vector size and context window are part of what an engine serves.
    const key = stableJson({ settings, dimensions: model.dimensions, context_window: model.context_window });
    const cached = this.engines.get(model.id);
    if (cached?.key === key) return cached.engine;
    const factory = this.factories.get(settings.type);
    if (!factory) {
      throw new EngineConfigError(
        model.id,
        `engine type '${settings.type}' is not a ${this.capability} engine of this service (${this.types.join(', ')})`,
      );
    }
    const engine = factory.create(settings, {
      model,
      log: this.log.child({ model: model.id, engine: settings.type }),
    });
    this.engines.set(model.id, { key, engine });
    if (cached) void this.closeQuietly(model.id, cached.engine);
    return engine;
  }

  async close(): Promise<void> {
    const all = [...this.engines.entries()];
    this.engines.clear();
    await Promise.all(all.map(([id, { engine }]) => this.closeQuietly(id, engine)));
  }

  private async closeQuietly(model: string, engine: E): Promise<void> {
    try {
      await engine.close?.();
    } catch (err) {
      this.log.warn({ err, model, engine: engine.type }, 'engine did not close cleanly');
    }
  }
}

/** JSON with object keys sorted, so that equal settings give equal cache keys. */
export function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`;
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .filter((k) => o[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${stableJson(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
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
