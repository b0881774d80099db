import { ApiError, type CatalogEntry } from '@infer/contracts';
import type { Logger } from '@infer/service-kit';
import type { ImageEngine } from './engine.js';

/** The catalog's engine settings of one model: `{type, ...settings}`. */
export type EngineSettings = { type: string } & Record<string, unknown>;

/** Makes image engines of one type from a catalog entry's `engine` settings. */
export interface ImageEngineFactory {
  readonly type: string;
  /**
   * Validates `settings` (throws ApiError.internal naming the model and the problem: it is operator
   * configuration) and builds the engine. Must not do I/O that can hang: the api role calls it to
   * check a model before queueing its job.
   */
  create(settings: EngineSettings, ctx: { model: CatalogEntry; log: Logger }): ImageEngine;
}

/**
 * Picks the engine of a model from its catalog entry (`model.engine.type`) and keeps one instance per
 * model id and settings; changed settings (a catalog change) replace it and close the old one.
 */
export class ImageEngineRegistry {
  private readonly factories = new Map<string, ImageEngineFactory>();
  private readonly engines = new Map<string, { key: string; engine: ImageEngine }>();

  constructor(
    private readonly log: Logger,
    factories: readonly ImageEngineFactory[] = [],
  ) {
    for (const f of factories) this.factories.set(f.type, f);
  }

  get types(): string[] {
    return [...this.factories.keys()];
  }

  /**
   * Throws the 500 naming the model when no engine of its type exists here. The api role checks this
   * before queueing; settings are validated where the engine is built (the worker), which alone needs
   * what they point at (workflow files, upstream keys).
   */
  assertServes(model: CatalogEntry): void {
    const type = (model.engine as EngineSettings).type;
    if (!this.factories.has(type)) {
      throw ApiError.internal(
        `Model '${model.id}' is configured with engine type '${type}', which the image service does not provide (it has: ${this.types.join(', ')}).`,
      );
    }
  }

  get(model: CatalogEntry): ImageEngine {
    const settings = model.engine as EngineSettings;
    const key = stableJson(settings);
    const cached = this.engines.get(model.id);
    if (cached?.key === key) return cached.engine;
    this.assertServes(model);
    const factory = this.factories.get(settings.type)!;
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

  private async closeQuietly(model: string, engine: ImageEngine): Promise<void> {
    try {
      await engine.close?.();
    } catch (err) {
      this.log.warn({ err, model, engine: engine.type }, 'engine did not close cleanly');
    }
  }
}

/** Parses engine settings with a zod schema; a problem is a 500 naming the model (operator config). */
export function engineSettings<T>(
  schema: {
    safeParse(
      v: unknown,
    ):
      | { success: true; data: T }
      | { success: false; error: { issues: Array<{ path: PropertyKey[]; message: string }> } };
  },
  settings: unknown,
  model: CatalogEntry,
): T {
  const r = schema.safeParse(settings);
  if (r.success) return r.data;
  const why = r.error.issues.map((i) => `${i.path.join('.') || 'engine'}: ${i.message}`).join('; ');
  throw ApiError.internal(`Model '${model.id}' has invalid engine settings (${why}).`);
}

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

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
