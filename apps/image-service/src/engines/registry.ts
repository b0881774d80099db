import { type EngineFactory, EngineRegistry } from '@infer/runtime';
import { type Logger } from '@infer/telemetry';
import type { ImageEngine } from './engine.js';

/**
 * Makes image engines of one type from a catalog entry's `engine` settings. `create` validates them
 * (parseEngineSettings: a 500 naming the model and the problem, it is operator configuration) and
 * builds the engine. Must not do I/O that can hang: the api role calls it to check a model before
 * queueing its job.
 */
export type ImageEngineFactory = EngineFactory<ImageEngine>;

/** The image service's engines, one per model id and settings (see EngineRegistry of @infer/runtime). */
export class ImageEngineRegistry extends EngineRegistry<ImageEngine> {
  constructor(log: Logger, factories: readonly ImageEngineFactory[] = []) {
    super(log, factories, {
      service: 'image service',
      // A GenAI span per engine call, with tracing on (see traceEngine of @infer/telemetry).
      spans: {
        generate: (input: { operation?: string }) =>
          input?.operation === 'edit' ? 'image_edit' : 'image_generation',
      },
    });
  }
}
