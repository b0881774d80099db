import type { SearchDocumentsRepository } from '@infer/search-index';
import type { SearchConfig, SearchEngineName } from '../config.js';
import { BraveEngine } from './brave.js';
import type { SearchEngine } from './engine.js';
import { LocalIndexEngine } from './local.js';
import { SearxngEngine } from './searxng.js';

export interface EngineDeps {
  /** The local index (the `local` engine; also used for seeding). */
  repo: SearchDocumentsRepository;
}

type EngineFactory = (config: SearchConfig, deps: EngineDeps) => SearchEngine;

/** One factory per SEARCH_ENGINE value. The config schema has already checked each engine's settings. */
export const ENGINE_FACTORIES: Record<SearchEngineName, EngineFactory> = {
  local: (_config, deps) => new LocalIndexEngine(deps.repo),
  searxng: (config) =>
    new SearxngEngine({
      baseUrl: config.SEARXNG_URL!,
      timeoutMs: config.SEARCH_TIMEOUT_MS,
      ...(config.SEARXNG_ENGINES ? { engines: config.SEARXNG_ENGINES } : {}),
      ...(config.SEARXNG_LANGUAGE ? { language: config.SEARXNG_LANGUAGE } : {}),
    }),
  brave: (config) =>
    new BraveEngine({
      apiKey: config.BRAVE_API_KEY!,
      baseUrl: config.BRAVE_BASE_URL,
      timeoutMs: config.SEARCH_TIMEOUT_MS,
      ...(config.BRAVE_COUNTRY ? { country: config.BRAVE_COUNTRY } : {}),
      ...(config.BRAVE_SAFESEARCH ? { safesearch: config.BRAVE_SAFESEARCH } : {}),
    }),
};

/** The engine SEARCH_ENGINE names. */
export function createEngine(config: SearchConfig, deps: EngineDeps): SearchEngine {
  return ENGINE_FACTORIES[config.SEARCH_ENGINE](config, deps);
}
