import { llamaCppEngineFactory } from './llama-cpp/llama-cpp.engine.js';
import { openaiUpstreamEngineFactory } from './openai-upstream.js';
import type { EngineFactory } from './registry.js';
import { simulatorEngineFactory } from './simulator.js';

/**
 * The engine types this chat service provides, by catalog `engine.type`: `openai` (any
 * OpenAI-compatible upstream server), `llama-cpp` (embedded llama.cpp on CPU) and `simulator` (a
 * test double).
 */
export const builtinEngineFactories: readonly EngineFactory[] = [
  openaiUpstreamEngineFactory,
  llamaCppEngineFactory,
  simulatorEngineFactory,
];
