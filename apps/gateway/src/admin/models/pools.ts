import type { ModelEndpoint, ModelPools, OpsStatusReply } from '@infer/contracts';

/** One endpoint of libs/engine-pool's PoolStatus (its `engine-pools` ops status document), as read here. */
type EndpointDoc = Omit<ModelEndpoint, 'replicas'>;
interface PoolDoc {
  model: string;
  routing: string;
  queued: Record<string, number>;
  endpoints: EndpointDoc[];
}

const STATE_RANK: Record<ModelEndpoint['state'], number> = { up: 0, recovering: 1, cooling: 2 };
const later = (a: string | null, b: string | null) => (a === null ? b : b === null ? a : a >= b ? a : b);
const num = (n: unknown) => (typeof n === 'number' && Number.isFinite(n) ? n : 0);
const numOrNull = (n: unknown) => (typeof n === 'number' && Number.isFinite(n) ? n : null);
const frac = (n: unknown) => {
  const v = numOrNull(n);
  return v === null ? null : Math.min(1, Math.max(0, v));
};
const count = (n: unknown) => {
  const v = numOrNull(n);
  return v === null ? null : Math.max(0, Math.round(v));
};

/** The engine-reported fields of one replica's endpoint (all null when it read nothing). */
function engineFields(e: EndpointDoc) {
  const at = typeof e.metrics_at === 'string' ? e.metrics_at : null;
  return at === null
    ? {
        cache_hit_rate: null,
        kv_cache_usage: null,
        requests_waiting: null,
        requests_running: null,
        metrics_at: null,
      }
    : {
        cache_hit_rate: frac(e.cache_hit_rate),
        kv_cache_usage: frac(e.kv_cache_usage),
        requests_waiting: count(e.requests_waiting),
        requests_running: count(e.requests_running),
        metrics_at: at,
      };
}

function poolsOf(reply: OpsStatusReply): PoolDoc[] {
  const pools = (reply.status as { pools?: unknown } | null)?.pools;
  return Array.isArray(pools)
    ? pools.filter(
        (p): p is PoolDoc =>
          typeof p?.model === 'string' && Array.isArray(p.endpoints) && typeof p.routing === 'string',
      )
    : [];
}

/**
 * Each model's endpoints merged over the service replicas' `engine-pools` documents: in flight,
 * capacity, requests and errors summed; the worst state; the latest cooldown end; the highest run of
 * consecutive failures; the most recent error. What the engine reports on its /metrics (hit rate, queue, KV
 * cache) is taken from the replica that read it last. Models and endpoints sorted by name. Replies from
 * the same process count once.
 */
export function mergePools(all: OpsStatusReply[]): ModelPools {
  // One document per process (several services in one process answer the same one); processes
  // without a pool (e.g. a gateway) are not replicas of any.
  const seen = new Set<string>();
  const replies = all.filter((r) => {
    const key = r.process ?? r.instance;
    if (seen.has(key) || poolsOf(r).length === 0) return false;
    seen.add(key);
    return true;
  });
  const models = new Map<
    string,
    { routing: string; queued: number; endpoints: Map<string, ModelEndpoint> }
  >();
  for (const reply of replies)
    for (const pool of poolsOf(reply)) {
      let m = models.get(pool.model);
      if (!m) {
        m = { routing: pool.routing, queued: 0, endpoints: new Map() };
        models.set(pool.model, m);
      }
      for (const n of Object.values(pool.queued ?? {})) m.queued += num(n);
      for (const e of pool.endpoints) {
        if (typeof e?.url !== 'string') continue;
        const state = e.state in STATE_RANK ? e.state : 'up';
        const cur = m.endpoints.get(e.url);
        if (!cur) {
          m.endpoints.set(e.url, {
            url: e.url,
            state,
            inflight: num(e.inflight),
            capacity: num(e.capacity),
            consecutive_failures: num(e.consecutive_failures),
            cooldown_until: e.cooldown_until ?? null,
            requests: num(e.requests),
            errors: num(e.errors),
            last_error: e.last_error ?? null,
            last_error_at: e.last_error ? (e.last_error_at ?? null) : null,
            ...engineFields(e),
            replicas: 1,
          });
          continue;
        }
        if (STATE_RANK[state] > STATE_RANK[cur.state]) cur.state = state;
        cur.inflight += num(e.inflight);
        cur.capacity += num(e.capacity);
        cur.consecutive_failures = Math.max(cur.consecutive_failures, num(e.consecutive_failures));
        cur.cooldown_until = later(cur.cooldown_until, e.cooldown_until ?? null);
        cur.requests += num(e.requests);
        cur.errors += num(e.errors);
        if (e.last_error && (cur.last_error_at ?? '') < (e.last_error_at ?? '')) {
          cur.last_error = e.last_error;
          cur.last_error_at = e.last_error_at ?? null;
        }
        // Every replica reads the same engine: its newest reading wins (older document versions
        // without the fields read as not reported).
        const fields = engineFields(e);
        if (fields.metrics_at !== null && (cur.metrics_at ?? '') < fields.metrics_at)
          Object.assign(cur, fields);
        cur.replicas += 1;
      }
    }
  return {
    object: 'list',
    replicas: replies.length,
    data: [...models]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([model, m]) => ({
        model,
        routing: m.routing,
        queued: m.queued,
        endpoints: [...m.endpoints.values()].sort((a, b) => (a.url < b.url ? -1 : 1)),
      })),
  };
}
