import {
  type AnthropicModelList,
  ApiError,
  type CatalogEntry,
  type Model,
  type ModelKind,
  modelEndpoints,
  type Tier,
  tierReaches,
} from '@infer/contracts';

export interface CatalogSource {
  listEnabled(): Promise<CatalogEntry[]>;
}

/**
 * The model catalog as the gateway uses it: an immutable snapshot, replaced whole on refresh, with the
 * per-tier model lists precomputed so that GET /models and model resolution do no work per request.
 */
export class CatalogSnapshot {
  private readonly byId: Map<string, CatalogEntry>;
  /** Ids and aliases. */
  private readonly byName: Map<string, CatalogEntry>;
  private readonly listsByTier: Map<Tier, { object: 'list'; data: Model[] }>;
  private readonly anthropicListsByTier: Map<Tier, AnthropicModelList>;

  constructor(entries: CatalogEntry[]) {
    // Frozen copies: the snapshot's entries travel in every envelope, and RpcClient serialises each entry
    // object once and reuses its JSON (libs/rpc rpc.ts envelopeJson), so they must never change.
    const sorted = entries
      .map((e) => deepFreeze(structuredClone(e)))
      .sort((a, b) => a.rank - b.rank || a.id.localeCompare(b.id));
    this.byId = new Map(sorted.map((e) => [e.id, e]));
    // Aliases resolve to their model; a model's own id always wins over another's alias.
    this.byName = new Map(this.byId);
    for (const e of sorted) for (const a of e.aliases) if (!this.byName.has(a)) this.byName.set(a, e);
    this.listsByTier = new Map();
    this.anthropicListsByTier = new Map();
    for (const tier of ['community', 'inference', 'premium'] as const) {
      this.listsByTier.set(tier, {
        object: 'list',
        data: sorted
          .filter((e) => tierReaches(tier, e))
          .map((e) => ({
            id: e.id,
            object: 'model' as const,
            created: e.created,
            owned_by: e.owned_by,
            endpoints: modelEndpoints(e),
          })),
      });
      const data = sorted
        .filter((e) => tierReaches(tier, e))
        .map((e) => ({
          type: 'model' as const,
          id: e.id,
          display_name: e.id,
          created_at: new Date(e.created * 1000).toISOString(),
        }));
      this.anthropicListsByTier.set(tier, {
        data,
        has_more: false,
        first_id: data[0]?.id ?? null,
        last_id: data.at(-1)?.id ?? null,
      });
    }
  }

  /** GET /models in Anthropic's list shape (requests that carry `anthropic-version`). */
  anthropicListFor(tier: Tier): AnthropicModelList {
    return (
      this.anthropicListsByTier.get(tier) ?? { data: [], has_more: false, first_id: null, last_id: null }
    );
  }

  /** The model an id or alias names, or undefined. */
  named(name: string): CatalogEntry | undefined {
    return this.byName.get(name);
  }

  get size(): number {
    return this.byId.size;
  }

  get(id: string): CatalogEntry | undefined {
    return this.byId.get(id);
  }

  /**
   * The ids of `ids` that `tier` does not reach (unknown ones too): what a key's allow-list may not name
   * (it narrows the tier, never widens it).
   */
  outsideTier(tier: Tier, ids: readonly string[]): string[] {
    return ids.filter((id) => {
      const e = this.byId.get(id);
      return !e || !tierReaches(tier, e);
    });
  }

  /** GET /models: exactly the models this tier may use, most capable first. */
  listFor(tier: Tier, models: ReadonlySet<string> | null = null): { object: 'list'; data: Model[] } {
    const list = this.listsByTier.get(tier) ?? { object: 'list', data: [] };
    return models === null ? list : { object: 'list', data: list.data.filter((m) => models.has(m.id)) };
  }

  /**
   * The model a request names (its id or one of its aliases), checked in the spec's order: unknown ->
   * 404 model_not_found; a model of
   * another kind than the endpoint serves -> 400 (param model); a tier that does not reach it -> 401
   * auth_error; a model outside the key's allow-list (`models`, null: none) -> the same 401.
   */
  resolve(
    id: string,
    tier: Tier,
    kinds: readonly ModelKind[],
    endpoint: string,
    models: ReadonlySet<string> | null = null,
  ): CatalogEntry {
    const entry = this.byName.get(id);
    if (!entry) throw ApiError.modelNotFound(id);
    if (!kinds.includes(entry.kind)) {
      throw ApiError.invalid(`The model '${id}' is not supported on ${endpoint}.`, 'model');
    }
    if (!tierReaches(tier, entry) || (models !== null && !models.has(entry.id)))
      throw ApiError.noModelAccess(id);
    return entry;
  }

  /**
   * The fallback models of `entry` that `tier` may use (same kind, in the catalog's order), for the
   * service envelope; undefined when there are none (nothing is added to the envelope).
   */
  fallbacksFor(entry: CatalogEntry, tier: Tier): CatalogEntry[] | undefined {
    if (!entry.fallbacks.length) return undefined;
    const out: CatalogEntry[] = [];
    for (const id of entry.fallbacks) {
      const fb = this.byId.get(id);
      if (fb && fb.kind === entry.kind && tierReaches(tier, fb)) out.push(fb);
    }
    return out.length ? out : undefined;
  }
}

function deepFreeze<T>(v: T): T {
  if (v !== null && typeof v === 'object') {
    for (const x of Object.values(v)) deepFreeze(x);
    Object.freeze(v);
  }
  return v;
}
