import { randomUUID } from 'node:crypto';
import { ApiError, type CatalogEntry, EmbeddingListSchema, Subjects } from '@infer/contracts';
import { RpcClient } from '@infer/rpc';
import type { CandidateHit, SearchDocumentsRepository } from '@infer/search-index';
import { type Logger } from '@infer/telemetry';
import type { NatsConnection } from '@nats-io/transport-node';

/**
 * Hybrid ranking of the local index (engine `local` with SEARCH_HYBRID=1, the default):
 *
 * 1. recall: PostgreSQL full-text search (repository `candidates`): the documents the web-search query
 *    matches plus those matching any of its words, at most max(4 x count, 40), with their stored vectors;
 * 2. vectors from the embedding service (`SEARCH_EMBED_MODEL`, default `embed-model`, over NATS as the
 *    gateway calls it): the query's, and any candidate's that is missing (stored for next time);
 *    `EmbeddingBackfill` embeds newly ingested documents in the background, so most are there already;
 * 3. final order: relevance = 0.6 * lexical + 0.4 * (1 + cos) / 2, lexical = ts_rank_cd / the best
 *    candidate's (the same mix and weights as the embedding-service's `hybrid` rerank, chosen on
 *    bench/retrieval.ts).
 * If the embedding service cannot answer (not running, a misconfigured model), `rankHybrid` gives null
 * and the engine answers with plain full-text search (a warning is logged): search stays up.
 */
export const SEARCH_HYBRID_WEIGHTS = { lexical: 0.6, semantic: 0.4 } as const;

/** Longest text sent to be embedded (characters): stays under the model's 8192-token input limit. */
const MAX_EMBED_CHARS = 8_000;

export interface TextEmbedder {
  /** Catalog id of the model (stored with each vector). */
  readonly model: string;
  embed(texts: string[], signal?: AbortSignal): Promise<Float32Array[]>;
}

export function documentText(d: { title: string; body: string }): string {
  return `${d.title}\n${d.body}`.slice(0, MAX_EMBED_CHARS);
}

/**
 * The embedding service as a client: builds the same envelope the gateway sends (the model's catalog
 * entry read from the database), asks for base64 vectors, 16 texts per call (a reply stays well under
 * one NATS message). Internal calls: member and key are `search-service`, and no usage is recorded.
 */
export class EmbeddingServiceClient implements TextEmbedder {
  private readonly rpc: RpcClient;
  private entry: { value: CatalogEntry; at: number } | null = null;

  constructor(
    nc: NatsConnection,
    readonly model: string,
    private readonly catalog: () => Promise<CatalogEntry | null>,
    private readonly opts: { subjectPrefix?: string; timeoutMs?: number } = {},
  ) {
    this.rpc = new RpcClient(nc);
  }

  private async catalogEntry(): Promise<CatalogEntry> {
    if (this.entry && Date.now() - this.entry.at < 60_000) return this.entry.value;
    const value = await this.catalog();
    if (value?.kind !== 'embedding')
      throw ApiError.internal(`the search embedding model '${this.model}' is not an enabled embedding model`);
    this.entry = { value, at: Date.now() };
    return value;
  }

  async embed(texts: string[], signal?: AbortSignal): Promise<Float32Array[]> {
    const model = await this.catalogEntry();
    const timeoutMs = this.opts.timeoutMs ?? 30_000;
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += 16) {
      signal?.throwIfAborted();
      const input = texts.slice(i, i + 16).map((t) => (t.trim() ? t.slice(0, MAX_EMBED_CHARS) : '.'));
      const end = await this.rpc.call(
        `${this.opts.subjectPrefix ?? ''}${Subjects.embeddings}`,
        {
          requestId: randomUUID(),
          memberId: 'search-service',
          keyId: 'search-service',
          model,
          body: { model: model.id, input, encoding_format: 'base64' },
          deadline: Date.now() + timeoutMs,
          stream: false,
        },
        { idleTimeoutMs: timeoutMs },
      );
      const list = EmbeddingListSchema.parse(end.data);
      for (const d of [...list.data].sort((a, b) => a.index - b.index)) {
        if (typeof d.embedding !== 'string')
          throw ApiError.internal('the embedding service sent no base64 vector');
        const b = Buffer.from(d.embedding, 'base64');
        out.push(new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength)));
      }
    }
    if (out.length !== texts.length)
      throw ApiError.internal('the embedding service returned too few vectors');
    return out;
  }
}

export function cosine(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return 0;
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += (a[i] as number) * (b[i] as number);
    na += (a[i] as number) ** 2;
    nb += (b[i] as number) ** 2;
  }
  return na && nb ? dot / Math.sqrt(na * nb) : 0;
}

/** Orders candidates by the hybrid relevance; returns them with it, best first (ties: full-text order). */
export function hybridOrder<T extends { rank: number }>(
  hits: readonly T[],
  cosines: readonly number[],
  weights: { lexical: number; semantic: number } = SEARCH_HYBRID_WEIGHTS,
): Array<T & { relevance: number }> {
  const best = Math.max(0, ...hits.map((h) => h.rank));
  const total = weights.lexical + weights.semantic;
  return hits
    .map((h, i) => {
      const lexical = best > 0 ? h.rank / best : 0;
      const semantic = Math.max(0, Math.min(1, (1 + (cosines[i] ?? 0)) / 2));
      const relevance = (weights.lexical * lexical + weights.semantic * semantic) / total;
      return { h: { ...h, relevance: Number.isFinite(relevance) ? relevance : 0 }, i };
    })
    .sort((a, b) => b.h.relevance - a.h.relevance || a.i - b.i)
    .map((x) => x.h);
}

/** The hybrid ranking of full-text candidates (see the top of this file). */
export async function rankHybrid(
  repo: SearchDocumentsRepository,
  embedder: TextEmbedder,
  q: { query: string; count: number; since?: Date; until?: Date },
  log: Logger,
  signal?: AbortSignal,
): Promise<CandidateHit[] | null> {
  const hits = await repo.candidates({
    query: q.query,
    limit: Math.max(4 * q.count, 40),
    model: embedder.model,
    ...(q.since ? { since: q.since } : {}),
    ...(q.until ? { until: q.until } : {}),
  });
  if (hits.length === 0) return [];
  let vectors: Float32Array[];
  let queryVector: Float32Array;
  try {
    const missing = hits.filter((h) => !h.embedding);
    const made = await embedder.embed([q.query, ...missing.map(documentText)], signal);
    queryVector = made[0] as Float32Array;
    missing.forEach((h, i) => {
      h.embedding = made[i + 1] as Float32Array;
    });
    if (missing.length)
      await repo.setEmbeddings(
        embedder.model,
        missing.map((h) => ({ url: h.url, body: h.body, vector: h.embedding as Float32Array })),
      );
    vectors = hits.map((h) => h.embedding as Float32Array);
  } catch (err) {
    if (signal?.aborted) throw err;
    log.warn({ err }, 'embedding service unavailable: local search answers with full-text search alone');
    return null;
  }
  return hybridOrder(
    hits,
    vectors.map((v) => cosine(queryVector, v)),
  ).slice(0, q.count);
}

/**
 * Embeds documents that have no vector of the model yet (new or changed by an ingest), a batch at a
 * time: at start, then every `intervalMs`, and at once after a batch that found work. Failures (the
 * embedding service not up yet) wait for the next round.
 */
export class EmbeddingBackfill {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;

  constructor(
    private readonly repo: SearchDocumentsRepository,
    private readonly embedder: TextEmbedder,
    private readonly log: Logger,
    private readonly opts: { intervalMs: number; batch?: number },
  ) {}

  start(): void {
    this.schedule(0);
  }

  /** One pass over what is missing now; resolves with how many documents got a vector. */
  async runOnce(): Promise<number> {
    let done = 0;
    for (;;) {
      if (this.stopped) return done;
      const rows = await this.repo.missingEmbeddings(this.embedder.model, this.opts.batch ?? 32);
      if (!rows.length) return done;
      const vectors = await this.embedder.embed(rows.map(documentText));
      const stored = await this.repo.setEmbeddings(
        this.embedder.model,
        rows.map((r, i) => ({ url: r.url, body: r.body, vector: vectors[i] as Float32Array })),
      );
      done += stored;
      if (stored === 0) return done; // every text changed meanwhile: next round
    }
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.runOnce()
        .then((n) => {
          if (n) this.log.info({ documents: n, model: this.embedder.model }, 'search documents embedded');
        })
        .catch((err) => this.log.warn({ err }, 'embedding the search documents failed; will retry'))
        .finally(() => {
          this.running = null;
          this.schedule(this.opts.intervalMs);
        });
    }, ms);
    this.timer.unref?.();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }
}
