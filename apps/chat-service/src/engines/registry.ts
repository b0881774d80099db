import { EngineRegistry as EngineRegistryBase, type EngineFactory as KitEngineFactory } from '@infer/runtime';
import { type Logger } from '@infer/telemetry';
import type { ChatEngine } from './engine.js';

/** What the chat service gives its engine factories besides the model and the log. */
export interface ChatEngineContext {
  /** The service's environment (e.g. for an upstream key named by `api_key_env`); default process.env. */
  env?: NodeJS.ProcessEnv;
}

/** Makes chat engines of one type from a catalog entry's `engine` settings. */
export type EngineFactory = KitEngineFactory<ChatEngine, ChatEngineContext>;

/** The chat service's engines, one per model id and settings (see EngineRegistry of @infer/runtime). */
export class EngineRegistry extends EngineRegistryBase<ChatEngine, ChatEngineContext> {
  constructor(log: Logger, factories: readonly EngineFactory[] = [], env: NodeJS.ProcessEnv = process.env) {
    super(log, factories, { service: 'chat service', context: { env }, spans: { generate: 'chat' } });
  }
}
