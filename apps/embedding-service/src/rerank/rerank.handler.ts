import { randomUUID } from 'node:crypto';
import {
  ApiError,
  parseOrThrow,
  type RerankRequest,
  RerankRequestSchema,
  type RerankResponse,
  type RerankResult,
  rerankDocumentText,
} from '@infer/contracts';
import type { RpcHandler } from '@infer/rpc';
import type { RerankEngine } from '../engines/engine.js';
import type { EngineRegistry } from '../engines/registry.js';
import { EngineConfigError } from '../engines/settings.js';
import { abortedError, emitInFrames } from '../frames.js';
import { Semaphore } from './semaphore.js';

/**
 * `infer.embedding.rerank`: the validated RerankRequest -> a RerankResponse (Cohere-compatible).
 *
 * - `documents` are strings (or Cohere's `{text}`), at most RERANK_MAX_DOCUMENTS (the schema's 400 on `documents`);
 *   the query is checked against the model's query limit (400 on `query`);
 * - the model's engine scores every document in [0, 1]; at most `maxConcurrent` rerank calls of one
 *   model run at once, the others wait in line (a cancelled request leaves the line);
 * - `results` are sorted by `relevance_score` descending (ties: lower original `index` first), cut to
 *   `top_n` (all when omitted or larger than the list), each with the document's original `index` and
 *   `document: {text}` unless `return_documents` is false;
 * - `id` is a fresh UUID; `meta.billed_units.total_tokens` = `meta.tokens.input_tokens` = the engine's
 *   token count (see each engine), which is also the usage counted against quota.
 *
 * With `req.stream` the `results` leave as data frames and the end frame carries `{id, results: [], meta}`.
 */
export function rerankHandler(engines: EngineRegistry<RerankEngine>): RpcHandler<RerankRequest> {
  const lines = new WeakMap<RerankEngine, Semaphore>();
  return async (req, ctx) => {
    const body = parseOrThrow(RerankRequestSchema, req.body);
    const docs = body.documents.map(rerankDocumentText);
    let engine: RerankEngine;
    let info: Awaited<ReturnType<RerankEngine['ready']>>;
    try {
      engine = engines.get(req.model);
      info = await engine.ready();
    } catch (e) {
      if (e instanceof EngineConfigError) ctx.log.error({ detail: e.detail }, 'model misconfigured');
      throw e;
    }
    const queryTokens = engine.countQueryTokens(body.query);
    if (queryTokens > info.maxQueryTokens) {
      throw ApiError.invalid(
        `Invalid value for 'query': the query has ${queryTokens} tokens, more than the ${info.maxQueryTokens} the model '${req.model.id}' accepts.`,
        'query',
      );
    }
    let line = lines.get(engine);
    if (!line) {
      line = new Semaphore(info.maxConcurrent);
      lines.set(engine, line);
    }
    const sem = line;
    let ranked: Awaited<ReturnType<RerankEngine['rank']>>;
    try {
      ranked = await sem.run(ctx.signal, () => engine.rank(body.query, docs, ctx.signal));
    } catch (e) {
      throw abortedError(ctx.signal, e);
    }
    if (ranked.scores.length !== docs.length) {
      throw new Error(
        `the ${engine.type} engine returned ${ranked.scores.length} scores for ${docs.length} documents`,
      );
    }
    const order = ranked.scores
      .map((s, index) => ({ index, relevance_score: Number.isFinite(s) ? Math.min(1, Math.max(0, s)) : 0 }))
      .sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index);
    const top = order.slice(0, body.top_n ?? order.length);
    const results: RerankResult[] = top.map((r) =>
      body.return_documents ? { ...r, document: { text: docs[r.index] as string } } : r,
    );
    const tokens = ranked.tokens;
    const usage = { prompt_tokens: tokens, completion_tokens: 0, total_tokens: tokens };
    const response: RerankResponse = {
      id: randomUUID(),
      results: [],
      meta: { billed_units: { total_tokens: tokens }, tokens: { input_tokens: tokens } },
    };
    ctx.log.debug({ documents: docs.length, tokens, engine: engine.type }, 'rerank done');
    if (req.stream) {
      emitInFrames(
        ctx,
        results,
        (r) => (r.document ? Buffer.byteLength(JSON.stringify(r.document.text)) : 0) + 80,
      );
      return { data: response, usage };
    }
    response.results = results;
    return { data: response, usage };
  };
}
