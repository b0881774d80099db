import type { EngineFactory } from './registry.js';
import { simulatorEngineFactory } from './simulator.js';

/**
 * The engine types this chat service provides. Add real engines here (an OpenAI-compatible upstream
 * over HTTP, embedded llama.cpp) as they are written; the simulator is a test double.
 */
export const builtinEngineFactories: readonly EngineFactory[] = [simulatorEngineFactory];
