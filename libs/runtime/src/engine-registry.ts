import { ApiError, type CatalogEntry } from '@infer/contracts';
import type { Logger } from '@infer/telemetry';
import { type EngineSpanMethods, traceEngine } from '@infer/telemetry';
import type { z } from 'zod';

/** The catalog's engine settings of one model: `{type, ...settings}`. */
export type EngineSettings = { type: string } & Record<string, unknown>;

/** What every factory gets besides the settings; a registry may add fields of its own (`Ctx`). */
export interface EngineContext {
  model: CatalogEntry;
  /** The registry's logger, bound to the model id and the engine type. */
  log: Logger;
}

/** No extra context. */
export type NoEngineContext = Record<never, never>;

/** Makes engines of one catalog `engine.type`. */
export interface EngineFactory<E, Ctx extends object = NoEngineContext> {
  readonly type: string;
  /**
   * Validates `settings` (throwing a 500 that names the model and the problem: it is operator
   * configuration, see parseEngineSettings) and builds the engine. Synchronous and without I/O that
   * can hang: resources an engine loads are started lazily by the engine.
   */
  create(settings: EngineSettings, ctx: EngineContext & Ctx): E;
}

export interface EngineRegistryOptions<Ctx extends object = NoEngineContext> {
  /** Names the service in the unknown-type 500: `chat service` -> "which the chat service does not provide". */
  service?: string;
  /** For a registry per capability (speech, transcription): "... does not provide for speech". */
  capability?: string;
  /** Given to every factory besides the model and the log (e.g. the environment of upstream keys). */
  context?: Ctx;
  /**
   * What one engine instance serves, compared as stableJson: by default the model's `engine`
   * settings; a service whose engines also depend on other catalog fields adds them here.
   */
  key?(model: CatalogEntry): unknown;
  /** The error for a model whose engine type no factory makes; default ApiError.internal naming both. */
  unknownType?(model: CatalogEntry, type: string, types: readonly string[]): Error;
  /**
   * The engine methods that do model work, with their gen_ai.operation.name (e.g. `{ generate: 'chat' }`):
   * with tracing on, each call inside a sampled trace gets a GenAI span (see traceEngine), for every
   * engine this registry builds, embedded or upstream.
   */
  spans?: EngineSpanMethods;
}

/** The options argument: required when the factories need context that has required fields. */
type OptionsArg<Ctx extends object> = NoEngineContext extends Ctx
  ? [options?: EngineRegistryOptions<Ctx>]
  : [options: EngineRegistryOptions<Ctx> & { context: Ctx }];

/**
 * Picks the engine of a model from its catalog entry (`model.engine.type`) and keeps one instance per
 * model id and settings: a request with the same settings reuses it; changed settings (a catalog
 * reload) replace it and close the old one.
 */
export class EngineRegistry<
  E extends { close?(): Promise<void> | void },
  Ctx extends object = NoEngineContext,
> {
  private readonly factories = new Map<string, EngineFactory<E, Ctx>>();
  private readonly engines = new Map<string, { key: string; type: string; engine: E }>();
  private readonly options: EngineRegistryOptions<Ctx>;

  constructor(
    private readonly log: Logger,
    factories: Iterable<EngineFactory<E, Ctx>> = [],
    ...[options]: OptionsArg<Ctx>
  ) {
    this.options = options ?? {};
    for (const f of factories) this.register(f);
  }

  register(factory: EngineFactory<E, Ctx>): this {
    this.factories.set(factory.type, factory);
    return this;
  }

  /** The engine types this registry makes, in registration order. */
  get types(): string[] {
    return [...this.factories.keys()];
  }

  /**
   * Throws the unknown-type error (a 500 naming the model) when no engine of the model's type exists
   * here, without building one: settings are validated where the engine is built.
   */
  assertServes(model: CatalogEntry): void {
    this.factoryOf(model);
  }

  get(model: CatalogEntry): E {
    const settings = model.engine as EngineSettings;
    const key = stableJson(this.options.key ? this.options.key(model) : settings);
    const cached = this.engines.get(model.id);
    if (cached?.key === key) return cached.engine;
    let engine = this.factoryOf(model).create(settings, {
      ...this.options.context,
      model,
      log: this.log.child({ model: model.id, engine: settings.type }),
    } as EngineContext & Ctx);
    if (this.options.spans)
      engine = traceEngine(engine, { type: settings.type, model: model.id }, this.options.spans);
    this.engines.set(model.id, { key, type: settings.type, engine });
    if (cached) void this.closeQuietly(model.id, cached);
    return engine;
  }

  /** Nest lifecycle hook: a registry provided to a Nest app closes its engines when the app stops. */
  onApplicationShutdown(): Promise<void> {
    return this.close();
  }

  /** Closes every engine; one that fails to close is logged, not thrown. */
  async close(): Promise<void> {
    const all = [...this.engines.entries()];
    this.engines.clear();
    await Promise.all(all.map(([id, entry]) => this.closeQuietly(id, entry)));
  }

  private factoryOf(model: CatalogEntry): EngineFactory<E, Ctx> {
    const type = (model.engine as EngineSettings).type;
    const factory = this.factories.get(type);
    if (factory) return factory;
    if (this.options.unknownType) throw this.options.unknownType(model, type, this.types);
    const { service, capability } = this.options;
    throw ApiError.internal(
      `Model '${model.id}' is configured with engine type '${type}', which ${service ? `the ${service}` : 'this service'} does not provide${capability ? ` for ${capability}` : ''} (it has: ${this.types.join(', ')}).`,
    );
  }

  private async closeQuietly(model: string, { type, engine }: { type: string; engine: E }): Promise<void> {
    try {
      await engine.close?.();
    } catch (err) {
      this.log.warn({ err, model, engine: type }, 'engine did not close cleanly');
    }
  }
}

/**
 * Validates a model's engine settings with a zod schema. A problem is the operator's: a 500 naming the
 * model, the engine type and every field at fault.
 */
export function parseEngineSettings<S extends z.ZodType>(
  schema: S,
  settings: unknown,
  model: CatalogEntry,
): z.output<S> {
  const r = schema.safeParse(settings);
  if (r.success) return r.data;
  const type = (settings as { type?: unknown } | null | undefined)?.type;
  const why = r.error.issues
    .map((i) => `${i.path.map(String).join('.') || 'engine'}: ${i.message}`)
    .join('; ');
  throw ApiError.internal(
    `Model '${model.id}' has invalid ${typeof type === 'string' ? `${type} ` : ''}engine settings: ${why}.`,
  );
}

/** JSON with object keys sorted at every level (undefined members left out), so equal settings give equal keys. */
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
