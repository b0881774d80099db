import {
  ApiError,
  type Embedding,
  type EmbeddingList,
  type EmbeddingRequest,
  EmbeddingRequestSchema,
  parseOrThrow,
} from '@infer/contracts';
import type { RpcHandler } from '@infer/rpc';
import { DynamicBatcher } from '../batching/batcher.js';
import type { EmbeddingEngine, EmbeddingEngineInfo } from '../engines/engine.js';
import type { EngineRegistry } from '../engines/registry.js';
import { EngineConfigError } from '../engines/settings.js';
import { abortedError, emitInFrames } from '../frames.js';
import { detokenizeInputs, tokenLists } from './token-input.js';
import { encodedSize, encodeVector, truncateVector } from './vectors.js';

interface TextItem {
  text: string;
  tokens: number;
}
interface VectorOut {
  vector: Float32Array;
  /** Set when the engine counted better than before the call. */
  tokens?: number;
}

/**
 * One dynamic batcher per engine instance (a catalog change makes a new engine, hence a new batcher; the
 * old one goes with its engine). Nothing to close: on stop, the requests in flight are aborted, which
 * takes their texts out of the queues.
 */
export class BatcherPool {
  private readonly batchers = new WeakMap<EmbeddingEngine, DynamicBatcher<TextItem, VectorOut>>();

  for(engine: EmbeddingEngine, info: EmbeddingEngineInfo): DynamicBatcher<TextItem, VectorOut> {
    let b = this.batchers.get(engine);
    if (!b) {
      b = new DynamicBatcher<TextItem, VectorOut>(async (items, signal) => {
        const r = await engine.embed(
          items.map((i) => i.text),
          signal,
        );
        if (r.vectors.length !== items.length) {
          throw new Error(
            `the ${engine.type} engine returned ${r.vectors.length} vectors for ${items.length} texts`,
          );
        }
        return r.vectors.map((vector, i) => {
          if (vector.length !== info.dimensions) {
            throw new Error(
              `the ${engine.type} engine returned a ${vector.length}-value vector, not ${info.dimensions}`,
            );
          }
          const tokens = r.tokens?.[i];
          return tokens === undefined ? { vector } : { vector, tokens };
        });
      }, info.batch);
      this.batchers.set(engine, b);
    }
    return b;
  }
}

/**
 * `infer.embedding.embeddings`: the validated EmbeddingRequest -> an EmbeddingList.
 *
 * - `input` (a string or up to EMBEDDINGS_MAX_INPUTS non-empty strings) is checked against the model's
 *   per-input token limit (engine `maxInputTokens`); the first input over it is a 400 whose `param` names
 *   it (`input[3]`, or `input` for a single string);
 * - `dimensions` (optional) shortens the vectors to that many values, L2-normalised again; more than the
 *   model has is a 400 on `dimensions`;
 * - the texts go through the model's dynamic batcher, shared with concurrent requests;
 * - `data` keeps the input order, each item with its `index`; `encoding_format` float or base64;
 * - usage: `prompt_tokens` = `total_tokens` = the engine's tokens of every input (see each engine).
 *
 * When the gateway asks for a stream (`req.stream`), the `data` items leave as data frames of at most
 * FRAME_BUDGET_BYTES, and the end frame carries the rest of the list with `data: []`; the gateway joins
 * them into one JSON reply. Otherwise the whole list is the end frame's `data`.
 */
export function embeddingsHandler(
  engines: EngineRegistry<EmbeddingEngine>,
  pool: BatcherPool,
): RpcHandler<EmbeddingRequest> {
  return async (req, ctx) => {
    const body = parseOrThrow(EmbeddingRequestSchema, req.body);
    const lists = tokenLists(body.input);
    const single = typeof body.input === 'string' || (lists !== null && typeof body.input[0] === 'number');
    const modelId = req.model.id;
    let engine: EmbeddingEngine;
    let info: EmbeddingEngineInfo;
    try {
      engine = engines.get(req.model);
      info = await engine.ready();
    } catch (e) {
      if (e instanceof EngineConfigError) ctx.log.error({ detail: e.detail }, 'model misconfigured');
      throw e;
    }
    if (body.dimensions !== undefined && body.dimensions > info.dimensions) {
      throw ApiError.invalid(
        `Invalid value for 'dimensions': the model '${modelId}' makes ${info.dimensions}-dimension vectors; ask for at most ${info.dimensions}, got ${body.dimensions}.`,
        'dimensions',
      );
    }
    // Token ids (token-input.ts) are read in the model's tokenizer: their count is the usage.
    const texts = lists
      ? detokenizeInputs(engine, modelId, lists, single)
      : typeof body.input === 'string'
        ? [body.input]
        : (body.input as string[]);
    const counts = lists ? lists.map((ids) => ids.length) : engine.countTokens(texts);
    counts.forEach((n, i) => {
      if (n > info.maxInputTokens) {
        const param = single ? 'input' : `input[${i}]`;
        throw ApiError.invalid(
          `Invalid value for '${param}': the input has ${n} tokens, more than the ${info.maxInputTokens} tokens the model '${modelId}' reads per input. Shorten or split it.`,
          param,
        );
      }
    });
    const items = texts.map((text, i) => ({ text, tokens: counts[i] as number }));
    let outs: VectorOut[];
    try {
      outs = await pool.for(engine, info).submit(items, ctx.signal);
    } catch (e) {
      throw abortedError(ctx.signal, e);
    }

    const dims = body.dimensions ?? info.dimensions;
    const format = body.encoding_format;
    const data: Embedding[] = outs.map((o, index) => ({
      object: 'embedding',
      index,
      embedding: encodeVector(truncateVector(o.vector, dims), format),
    }));
    const promptTokens = outs.reduce((sum, o, i) => sum + (o.tokens ?? (counts[i] as number)), 0);
    const usage = { prompt_tokens: promptTokens, completion_tokens: 0, total_tokens: promptTokens };
    const list: EmbeddingList = {
      object: 'list',
      data: [],
      model: modelId,
      usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
    };
    ctx.log.debug({ inputs: texts.length, tokens: promptTokens, engine: engine.type }, 'embeddings done');
    if (req.stream) {
      emitInFrames(ctx, data, (d) => encodedSize(d.embedding) + 40);
      return { data: list, usage };
    }
    list.data = data;
    return { data: list, usage };
  };
}
