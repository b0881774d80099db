import type { CatalogEntry, ServiceRequest } from '@infer/contracts';
import { wantsFallback } from '@infer/engine-pool';
import type { Logger } from '@infer/telemetry';
import type { ChatEngine, EngineDelta, EngineInput, EngineMeasure } from '../engines/engine.js';
import type { EngineRegistry } from '../engines/registry.js';

/** Who asks and until when, from the envelope, for engines that route and queue (EngineInput.route). */
export const routeOf = (req: ServiceRequest<unknown>): EngineInput['route'] => ({
  cls: req.tier,
  member: req.memberId,
  deadline: req.deadline,
});

/**
 * The engine of a request whose model has fallbacks the caller's tier may use (the gateway resolved
 * them into `req.fallbacks`): a choice runs on the model's own engine; when that fails before its first
 * delta because no endpoint could take the request (503 overloaded / service_unavailable, or every
 * endpoint tried failed: `wantsFallback`), it runs on the next fallback's engine, and so on. Once a delta
 * went out, a failure is the answer's (never a second model mid-answer). `onAnswer` hears, once, which
 * fallback model answered (the handler names it in the chunks, the meta frame and the end frame).
 * Without fallbacks the handler uses the engine directly (nothing added per request).
 */
export class FallbackEngine implements ChatEngine {
  readonly type: string;
  readonly media: ChatEngine['media'];
  private readonly chain: CatalogEntry[];
  /** Index in `chain` of the model that answered first: later choices start there. */
  private from = 0;
  private told = false;

  constructor(
    private readonly engines: EngineRegistry,
    private readonly primary: ChatEngine,
    model: CatalogEntry,
    fallbacks: readonly CatalogEntry[],
    private readonly log: Logger,
    private readonly onAnswer: (model: CatalogEntry) => void,
  ) {
    this.type = primary.type;
    this.media = primary.media;
    this.chain = [model, ...fallbacks];
    if (primary.measure) this.measure = primary.measure.bind(primary);
  }

  /** The primary engine's own count, when it has one (fitContext checks the request against it). */
  readonly measure?: (input: EngineInput, signal: AbortSignal) => Promise<EngineMeasure>;

  async *generate(input: EngineInput, signal: AbortSignal): AsyncGenerator<EngineDelta> {
    for (let i = this.from; i < this.chain.length; i++) {
      const m = this.chain[i] as CatalogEntry;
      const engine = i === 0 ? this.primary : this.engines.get(m);
      let started = false;
      try {
        for await (const d of engine.generate(i === 0 ? input : { ...input, model: m.id }, signal)) {
          if (!started) {
            started = true;
            if (i > 0 && !this.told) {
              this.told = true;
              this.from = i;
              this.onAnswer(m);
            }
          }
          yield d;
        }
        return;
      } catch (e) {
        if (started || signal.aborted || i === this.chain.length - 1 || !wantsFallback(e)) throw e;
        this.log.warn(
          { model: m.id, fallback: this.chain[i + 1]?.id, err: (e as Error).message },
          'no endpoint could take the request; trying the fallback model',
        );
      }
    }
  }
}

/** The engine to run a request on: its model's, wrapped with its fallbacks when it has any. */
export function engineWithFallbacks(
  engines: EngineRegistry,
  req: ServiceRequest<unknown>,
  log: Logger,
  onAnswer: (model: CatalogEntry) => void,
): ChatEngine {
  const engine = engines.get(req.model);
  if (!req.fallbacks?.length) return engine;
  return new FallbackEngine(engines, engine, req.model, req.fallbacks, log, onAnswer);
}
