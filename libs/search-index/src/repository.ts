// The SearchDocument table (prisma/schema.prisma) and PostgreSQL full-text search over it:
// `websearch_to_tsquery` (the query syntax people type: words, "phrases", -exclusions, or) against the
// generated, GIN-indexed `searchVector` (english, title weighted above body), ranked by `ts_rank_cd`,
// with `ts_headline` for the snippet.
import { randomBytes } from 'node:crypto';
import type { DbClient } from '@infer/persistence';
import type { SearchDocumentInput } from './documents.js';

/** Text search configuration of the index (stemming, stop words). The migration uses the same one. */
export const TEXT_SEARCH_CONFIG = 'english';

export interface IndexHit {
  url: string;
  title: string;
  source: string;
  snippet: string;
  fetchedAt: Date;
  rank: number;
  /** The stored body, when asked for (`withBody`). */
  body?: string;
}

export interface IndexQuery {
  query: string;
  limit: number;
  /** Only documents with fetchedAt >= since. */
  since?: Date;
  /** Only documents with fetchedAt < until. */
  until?: Date;
  withBody?: boolean;
}

export interface UpsertResult {
  inserted: number;
  updated: number;
  unchanged: number;
}

/** A UUIDv7 (time-ordered), as Prisma's `uuid(7)` default makes: raw inserts bypass the client. */
export function uuidv7(now = Date.now()): string {
  const b = randomBytes(16);
  b.writeUIntBE(now, 0, 6);
  b[6] = (b[6]! & 0x0f) | 0x70;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const HEADLINE_OPTIONS =
  'StartSel="", StopSel="", MaxWords=40, MinWords=15, ShortWord=3, MaxFragments=2, FragmentDelimiter=" … "';

export class SearchDocumentsRepository {
  constructor(private readonly db: DbClient) {}

  /** Number of documents in the index (of one source, if given). */
  async count(source?: string): Promise<number> {
    return this.db.searchDocument.count(source ? { where: { source } } : undefined);
  }

  /**
   * Inserts or replaces documents by url in one statement per 500. A document whose title, body,
   * source and date did not change is left alone (counted as unchanged).
   */
  async upsertMany(docs: SearchDocumentInput[]): Promise<UpsertResult> {
    // The last occurrence of a url in the batch wins.
    const byUrl = new Map<string, SearchDocumentInput>();
    for (const d of docs) byUrl.set(d.url, d);
    const unique = [...byUrl.values()];
    const result: UpsertResult = { inserted: 0, updated: 0, unchanged: 0 };
    for (let i = 0; i < unique.length; i += 500) {
      const chunk = unique.slice(i, i + 500);
      const rows = await this.db.$queryRaw<{ inserted: boolean }[]>`
        INSERT INTO "SearchDocument" ("id", "url", "title", "body", "source", "fetchedAt", "updatedAt")
        SELECT id, url, title, body, source, fetched_at, now()
        FROM unnest(
          ${chunk.map(() => uuidv7())}::text[],
          ${chunk.map((d) => d.url)}::text[],
          ${chunk.map((d) => d.title)}::text[],
          ${chunk.map((d) => d.body)}::text[],
          ${chunk.map((d) => d.source)}::text[],
          ${chunk.map((d) => d.fetchedAt.toISOString())}::timestamptz[]
        ) AS t(id, url, title, body, source, fetched_at)
        ON CONFLICT ("url") DO UPDATE SET
          "title" = EXCLUDED."title",
          "body" = EXCLUDED."body",
          "source" = EXCLUDED."source",
          "fetchedAt" = EXCLUDED."fetchedAt",
          "embedding" = NULL,
          "embeddingModel" = NULL,
          "updatedAt" = now()
        WHERE ("SearchDocument"."title", "SearchDocument"."body", "SearchDocument"."source",
               "SearchDocument"."fetchedAt")
          IS DISTINCT FROM (EXCLUDED."title", EXCLUDED."body", EXCLUDED."source", EXCLUDED."fetchedAt")
        RETURNING (xmax = 0) AS inserted`;
      const inserted = rows.filter((r) => r.inserted).length;
      result.inserted += inserted;
      result.updated += rows.length - inserted;
      result.unchanged += chunk.length - rows.length;
    }
    return result;
  }

  /** Makes `source` hold exactly `docs`: upserts them and deletes that source's other documents. */
  async replaceSource(
    source: string,
    docs: SearchDocumentInput[],
  ): Promise<UpsertResult & { deleted: number }> {
    const r = await this.upsertMany(docs.map((d) => ({ ...d, source })));
    const keep = docs.map((d) => d.url);
    const deleted = await this.db.$executeRaw`
      DELETE FROM "SearchDocument" WHERE "source" = ${source} AND NOT ("url" = ANY(${keep}::text[]))`;
    return { ...r, deleted };
  }

  /** Documents per source, with the newest `fetchedAt` of each. */
  async stats(): Promise<{ source: string; documents: number; newest: Date | null }[]> {
    const rows = await this.db.$queryRaw<{ source: string; documents: bigint; newest: Date | null }[]>`
      SELECT "source", count(*) AS documents, max("fetchedAt") AS newest
      FROM "SearchDocument" GROUP BY "source" ORDER BY "source"`;
    return rows.map((r) => ({ source: r.source, documents: Number(r.documents), newest: r.newest }));
  }

  /** Deletes documents by url; returns how many existed. */
  async deleteUrls(urls: string[]): Promise<number> {
    if (!urls.length) return 0;
    return this.db.$executeRaw`DELETE FROM "SearchDocument" WHERE "url" = ANY(${urls}::text[])`;
  }

  /**
   * Full-text search: documents matching the query (and the date window), best first. The snippet is
   * the best one or two passages of the body around the matched words, as plain text.
   */
  async search(q: IndexQuery): Promise<IndexHit[]> {
    const since = q.since ? q.since.toISOString() : null;
    const until = q.until ? q.until.toISOString() : null;
    const rows = await this.db.$queryRaw<
      {
        url: string;
        title: string;
        source: string;
        fetchedAt: Date;
        rank: number;
        snippet: string;
        body: string | null;
      }[]
    >`
      WITH q AS (SELECT websearch_to_tsquery(${TEXT_SEARCH_CONFIG}::regconfig, ${q.query}) AS query),
      top AS (
        SELECT d."url", d."title", d."source", d."fetchedAt", d."body",
               ts_rank_cd(d."searchVector", q.query, 1) AS rank
        FROM "SearchDocument" d, q
        WHERE d."searchVector" @@ q.query
          AND (${since}::timestamptz IS NULL OR d."fetchedAt" >= ${since}::timestamptz)
          AND (${until}::timestamptz IS NULL OR d."fetchedAt" < ${until}::timestamptz)
        ORDER BY rank DESC, d."fetchedAt" DESC, d."url"
        LIMIT ${q.limit}
      )
      SELECT top."url", top."title", top."source", top."fetchedAt", top.rank::float8 AS rank,
             ts_headline(${TEXT_SEARCH_CONFIG}::regconfig, top."body", q.query, ${HEADLINE_OPTIONS}) AS snippet,
             CASE WHEN ${Boolean(q.withBody)} THEN top."body" END AS body
      FROM top, q
      ORDER BY top.rank DESC, top."fetchedAt" DESC, top."url"`;
    return rows.map((r) => ({
      url: r.url,
      title: r.title,
      source: r.source,
      fetchedAt: r.fetchedAt,
      rank: Number(r.rank),
      snippet: r.snippet.replace(/\s+/g, ' ').trim(),
      ...(r.body !== null && q.withBody ? { body: r.body } : {}),
    }));
  }

  /**
   * Candidates for the hybrid ranking: documents matching the query as `search` does, plus (unless the
   * query excludes words with `-`) those matching ANY of its words, so that the vectors can reorder a
   * wider set; at most `limit`, best full-text rank first. Each comes with its text and stored vector.
   * The rank is ts_rank_cd without length normalisation (cover density of the query's words): the
   * vectors judge the topic, the rank how many of the words occur and how close together.
   */
  async candidates(q: IndexQuery & { model: string }): Promise<CandidateHit[]> {
    const since = q.since ? q.since.toISOString() : null;
    const until = q.until ? q.until.toISOString() : null;
    const anyWord = !/(^|\s)-\S/.test(q.query);
    const rows = await this.db.$queryRaw<
      (Omit<CandidateHit, 'embedding'> & { embedding: string | null; embeddingModel: string | null })[]
    >`
      WITH q AS (
        SELECT websearch_to_tsquery(${TEXT_SEARCH_CONFIG}::regconfig, ${q.query}) AS query,
               CASE WHEN ${anyWord}
                 THEN nullif(replace(plainto_tsquery(${TEXT_SEARCH_CONFIG}::regconfig, ${q.query})::text, ' & ', ' | '), '')::tsquery
               END AS anyq
      ),
      top AS (
        SELECT d."url", d."title", d."source", d."fetchedAt", d."body",
               CASE WHEN d."embeddingModel" = ${q.model} THEN encode(d."embedding", 'base64') END AS embedding,
               d."embeddingModel",
               ts_rank_cd(d."searchVector", coalesce(q.anyq, q.query), 0) AS rank
        FROM "SearchDocument" d, q
        WHERE (d."searchVector" @@ q.query OR (q.anyq IS NOT NULL AND d."searchVector" @@ q.anyq))
          AND (${since}::timestamptz IS NULL OR d."fetchedAt" >= ${since}::timestamptz)
          AND (${until}::timestamptz IS NULL OR d."fetchedAt" < ${until}::timestamptz)
        ORDER BY rank DESC, d."fetchedAt" DESC, d."url"
        LIMIT ${q.limit}
      )
      SELECT top."url", top."title", top."source", top."fetchedAt", top."body", top."embedding",
             top."embeddingModel", top.rank::float8 AS rank,
             ts_headline(${TEXT_SEARCH_CONFIG}::regconfig, top."body", coalesce(q.anyq, q.query), ${HEADLINE_OPTIONS}) AS snippet
      FROM top, q
      ORDER BY top.rank DESC, top."fetchedAt" DESC, top."url"`;
    return rows.map((r) => ({
      url: r.url,
      title: r.title,
      source: r.source,
      fetchedAt: r.fetchedAt,
      rank: Number(r.rank),
      snippet: r.snippet.replace(/\s+/g, ' ').trim(),
      body: r.body,
      embedding: r.embedding ? decodeVector(Buffer.from(r.embedding, 'base64')) : null,
    }));
  }

  /** Documents without a vector of `model` (never embedded, text changed, or another model). */
  async missingEmbeddings(
    model: string,
    limit: number,
  ): Promise<{ url: string; title: string; body: string }[]> {
    return this.db.$queryRaw<{ url: string; title: string; body: string }[]>`
      SELECT "url", "title", "body" FROM "SearchDocument"
      WHERE "embedding" IS NULL OR "embeddingModel" IS DISTINCT FROM ${model}
      ORDER BY "updatedAt" DESC, "url" LIMIT ${limit}`;
  }

  /**
   * Stores vectors made from the document text as it was read (`body`): a document whose text changed
   * meanwhile keeps NULL and is embedded again later.
   */
  async setEmbeddings(
    model: string,
    items: { url: string; body: string; vector: Float32Array }[],
  ): Promise<number> {
    if (!items.length) return 0;
    return this.db.$executeRaw`
      UPDATE "SearchDocument" d SET "embedding" = decode(v.embedding, 'base64'), "embeddingModel" = ${model}
      FROM unnest(${items.map((i) => i.url)}::text[], ${items.map((i) => i.body)}::text[],
                  ${items.map((i) => Buffer.from(encodeVector(i.vector)).toString('base64'))}::text[])
           AS v(url, body, embedding)
      WHERE d."url" = v.url AND d."body" = v.body`;
  }
}

export interface CandidateHit extends IndexHit {
  body: string;
  /** The stored vector of the asked model, or null. */
  embedding: Float32Array | null;
}

/** float32 little endian. */
export function encodeVector(v: Float32Array): Uint8Array {
  const out = new Uint8Array(v.length * 4);
  const view = new DataView(out.buffer);
  for (let i = 0; i < v.length; i++) view.setFloat32(i * 4, v[i] as number, true);
  return out;
}

export function decodeVector(b: Uint8Array): Float32Array {
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const out = new Float32Array(Math.floor(b.byteLength / 4));
  for (let i = 0; i < out.length; i++) out[i] = view.getFloat32(i * 4, true);
  return out;
}
