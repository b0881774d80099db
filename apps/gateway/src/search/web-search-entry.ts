import { type CatalogEntry, CatalogEntrySchema, TIERS } from '@infer/contracts';

/**
 * What the gateway puts in the envelope's `model` for a search. Web search has no model and no entry in
 * the catalog file (so GET /v1/models does not list it): this fixed entry of kind `search` names the
 * capability, and the search-service's own environment picks the engine (`engine.type: search-service`
 * says exactly that). Its price per search is the gateway's WEB_SEARCH_PRICE (`pricing.per_search`:
 * each successful search costs it, POST /v1/search, MCP and the hosted web_search tool alike). Usage
 * events carry `web-search` as their model. Built once at start-up.
 */
export function webSearchEntry(pricePerSearch = '0'): CatalogEntry {
  return CatalogEntrySchema.parse({
    id: 'web-search',
    kind: 'search',
    rank: 1_000_000,
    description: 'web search (POST /v1/search and the MCP web_search tool)',
    tiers: [...TIERS],
    pricing: pricePerSearch === '0' ? {} : { per_search: pricePerSearch },
    engine: { type: 'search-service' },
  });
}
