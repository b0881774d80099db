/**
 * A long-lived table of per-request entries (calls waiting for replies, work in flight, messages waiting
 * for an ack): a Map whose entries are holders emptied as they leave. A Map that gains and loses an entry
 * per request rebuilds its hash table every few dozen requests, and V8 keeps each replaced table, with the
 * entries it held, in the old generation until a full collection: whatever those entries point at would
 * survive every scavenge until then and be promoted (the request's envelope, body, answer, its abort
 * controller and closures; bench/results/data-path-issue-13.md, "what the gateway promotes"). An emptied holder is all a
 * replaced table keeps here. The one place that rule is implemented: RpcClient, RpcServer and the
 * gateway's UsagePublisher use it.
 */
export class InflightTable<K, V> {
  private readonly map = new Map<K, { value: V | null }>();

  get size(): number {
    return this.map.size;
  }

  get(key: K): V | undefined {
    return this.map.get(key)?.value ?? undefined;
  }

  set(key: K, value: V): void {
    this.map.set(key, { value });
  }

  /** Removes the entry and empties its holder. */
  delete(key: K): boolean {
    const h = this.map.get(key);
    if (!h) return false;
    h.value = null;
    return this.map.delete(key);
  }

  *entries(): IterableIterator<[K, V]> {
    for (const [k, h] of this.map) if (h.value !== null) yield [k, h.value];
  }

  *values(): IterableIterator<V> {
    for (const h of this.map.values()) if (h.value !== null) yield h.value;
  }
}

/**
 * An InflightTable keyed by small integers it hands out (V8 Smis: no string per entry, the number at the
 * end of a reply subject), wrapping long before a key could stop being one.
 */
export class NumberedTable<V> extends InflightTable<number, V> {
  private seq = 0;

  /** The key for the next entry (set it with `set`). */
  nextKey(): number {
    this.seq = this.seq >= 0x3fffffff ? 1 : this.seq + 1;
    return this.seq;
  }
}
