import { ApiError, type CatalogEntry } from '@infer/contracts';
import type { Logger } from '@infer/service-kit';
import type { ChatEngine } from './engine.js';

/** The catalog's engine settings of one model: `{type, ...settings}`. */
export type EngineSettings = { type: string } & Record<string, unknown>;

export interface EngineFactoryContext {
  model: CatalogEntry;
  log: Logger;
  /** The service's environment (e.g. for an upstream key named by `api_key_env`); default process.env. */
  env?: NodeJS.ProcessEnv;
}

/** Makes engines of one type from a catalog entry's `engine` settings. */
export interface EngineFactory {
  readonly type: string;
  /**
   * Validates `settings` (throw ApiError.internal naming the model and the problem: it is operator
   * configuration) and builds the engine.
   */
  create(settings: EngineSettings, ctx: EngineFactoryContext): ChatEngine;
}

/**
 * Picks the engine of a model from its catalog entry (`model.engine.type`) and keeps one instance per
 * model id and settings: a request with the same settings reuses it; changed settings (a catalog
 * reload) replace it and close the old one.
 */
export class EngineRegistry {
  private readonly factories = new Map<string, EngineFactory>();
  private readonly engines = new Map<string, { key: string; engine: ChatEngine }>();

  constructor(
    private readonly log: Logger,
    factories: readonly EngineFactory[] = [],
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {
    for (const f of factories) this.register(f);
  }

  register(factory: EngineFactory): this {
    this.factories.set(factory.type, factory);
    return this;
  }

  get types(): string[] {
    return [...this.factories.keys()];
  }

  get(model: CatalogEntry): ChatEngine {
    const settings = model.engine as EngineSettings;
    const key = stableJson(settings);
    const cached = this.engines.get(model.id);
    if (cached?.key === key) return cached.engine;
    const factory = this.factories.get(settings.type);
    if (!factory) {
      throw ApiError.internal(
        `Model '${model.id}' is configured with engine type '${settings.type}', which the chat service does not provide.`,
      );
    }
    const engine = factory.create(settings, {
      model,
      log: this.log.child({ model: model.id, engine: settings.type }),
      env: this.env,
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

  private async closeQuietly(model: string, engine: ChatEngine): Promise<void> {
    try {
      await engine.close?.();
    } catch (err) {
      this.log.warn({ err, model, engine: engine.type }, 'engine did not close cleanly');
    }
  }
}

/** JSON with object keys sorted, so that equal settings give equal cache keys. */
function stableJson(v: unknown): string {
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
