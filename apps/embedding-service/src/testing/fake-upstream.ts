/**
 * A FAKE UPSTREAM MODEL SERVER: a TEST DOUBLE for the tests and the benchmark of the upstream engines,
 * not a model. It speaks the wire formats the engines call, on 127.0.0.1 at a random port:
 *   Text Embeddings Inference:  POST /embed, POST /rerank
 *   OpenAI-compatible:          POST /v1/embeddings
 *   vLLM / Infinity / Jina:     POST /v1/rerank
 * Vectors are lexical-hash vectors (deterministic, similar texts are close) of `dimensions` values;
 * rerank scores are the cosine of the query's and the document's vectors, mapped into [0, 1].
 * It records every request, can model latency (`latency(items)` ms per call: the per-call overhead that
 * makes batching pay off), enforce a batch limit like TEI's `--max-client-batch-size` (413), and fail
 * on demand (`failWith`: a status and body for the next calls, or `hang` to never answer).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LexicalHashEngine } from '../engines/lexical-hash.js';
import { BatchSettingsSchema } from '../engines/settings.js';
import { countTokens } from '../tokens.js';

export interface FakeUpstreamOptions {
  dimensions?: number;
  /** Milliseconds one call takes, given how many texts (or documents) it carries. */
  latency?: (items: number) => number;
  /** Most texts per call (TEI's max client batch size); more is a 413 like TEI's. */
  maxBatch?: number;
  /** OpenAI embeddings: report usage.prompt_tokens (default true). */
  reportUsage?: boolean;
  /** Bearer key the server requires, if any. */
  apiKey?: string;
}

export interface RecordedCall {
  path: string;
  body: Record<string, unknown>;
  headers: IncomingMessage['headers'];
}

export interface FakeUpstream {
  url: string;
  calls: RecordedCall[];
  /** Calls that are hanging now (`failWith('hang')`), i.e. whose client has not gone away. */
  hangingCalls(): number;
  /** Answer the next calls with this status and JSON body (`null` to go back to normal). */
  failWith(f: { status: number; body: unknown } | 'hang' | null): void;
  close(): Promise<void>;
}

export async function startFakeUpstream(opts: FakeUpstreamOptions = {}): Promise<FakeUpstream> {
  const dims = opts.dimensions ?? 64;
  const hasher = new LexicalHashEngine(
    { char_ngrams: [3, 5], weights: { words: 1, bigrams: 0.5, chars: 1 }, seed: 1 },
    { dimensions: dims, maxInputTokens: Number.MAX_SAFE_INTEGER, batch: BatchSettingsSchema.parse({}) },
  );
  const calls: RecordedCall[] = [];
  let failure: { status: number; body: unknown } | 'hang' | null = null;
  const hanging = new Set<ServerResponse>();

  const vec = (t: string) => Array.from(hasher.vector(t));
  const score = (q: string, d: string) => {
    const a = hasher.vector(q);
    const b = hasher.vector(d);
    let dot = 0;
    for (let i = 0; i < a.length; i++) dot += (a[i] as number) * (b[i] as number);
    return (dot + 1) / 2;
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
      } catch {
        return send(res, 400, { error: 'body is not JSON' });
      }
      const path = req.url ?? '';
      calls.push({ path, body, headers: req.headers });
      if (failure === 'hang') {
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
        return;
      }
      if (failure) return send(res, failure.status, failure.body);
      if (opts.apiKey && req.headers.authorization !== `Bearer ${opts.apiKey}`) {
        return send(res, 401, { error: { message: 'bad key' } });
      }
      const items = (body.inputs ?? body.input ?? body.texts ?? body.documents ?? []) as string[];
      if (opts.maxBatch && items.length > opts.maxBatch) {
        return send(res, 413, {
          error: `batch size ${items.length} > maximum allowed batch size ${opts.maxBatch}`,
          error_type: 'Validation',
        });
      }
      const wait = opts.latency?.(items.length) ?? 0;
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      switch (path) {
        case '/embed':
          return send(res, 200, items.map(vec));
        case '/rerank': {
          const q = String(body.query);
          return send(
            res,
            200,
            items.map((t, index) => ({ index, score: score(q, t) })).sort((a, b) => b.score - a.score),
          );
        }
        case '/v1/embeddings':
          return send(res, 200, {
            object: 'list',
            model: body.model,
            // Out of order on purpose: clients must use `index`.
            data: items.map((t, index) => ({ object: 'embedding', index, embedding: vec(t) })).reverse(),
            ...(opts.reportUsage === false
              ? {}
              : {
                  usage: {
                    prompt_tokens: items.reduce((s, t) => s + countTokens(t) + 2, 0),
                    total_tokens: 0,
                  },
                }),
          });
        case '/v1/rerank': {
          const q = String(body.query);
          const results = items
            .map((t, index) => ({ index, relevance_score: score(q, t) }))
            .sort((a, b) => b.relevance_score - a.relevance_score)
            .slice(0, Number(body.top_n ?? items.length));
          return send(res, 200, {
            id: 'fake',
            model: body.model,
            results,
            usage: { total_tokens: items.reduce((s, t) => s + countTokens(q) + countTokens(t), 0) },
          });
        }
        default:
          return send(res, 404, { error: 'not found' });
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    hangingCalls: () => hanging.size,
    failWith(f) {
      failure = f;
    },
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const json = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) });
  res.end(json);
}
