import {
  type ChatCompletion,
  type ChatCompletionChunk,
  type ChatServiceBody,
  type FinishReason,
  type UsageReport,
  ZERO_USAGE,
} from '@infer/contracts';
import type { RpcHandler } from '@infer/rpc';
import type { EngineRegistry } from '../engines/registry.js';
import { countPromptTokens } from '../tokens.js';
import { checkChatRequest, toEngineInput } from './engine-input.js';
import { engineWithFallbacks, routeOf } from './fallback.js';
import { abortedEnd, type ChoiceSink, fitContext, randomId, runChoices, sumUsage } from './generation.js';
import { DEFAULT_MEDIA_OPTIONS, type MediaOptions, resolveMedia } from './media.js';

type Chunk = ChatCompletionChunk;
type ChunkChoice = Chunk['choices'][number];

export interface ChatHandlerOptions {
  media?: MediaOptions;
}

/**
 * `infer.chat.completions`: runs the model's engine for the validated request and answers with a
 * ChatCompletion (unary) or ChatCompletionChunks emitted as the engine produces deltas (stream).
 *
 * Stream shape (as OpenAI): per choice, a first chunk `{role: 'assistant', content: ''}` when the
 * engine produces its first delta, then one chunk per delta with `finish_reason: null`, then a chunk
 * with an empty delta and the finish_reason. With `stream_options.include_usage` every chunk carries
 * `usage: null` and one last chunk has `choices: []` and the usage. All chunks share `id` and `created`.
 *
 * A choice that a stop string ended carries it as `stop_reason` beside `finish_reason: 'stop'` (as vLLM
 * does; the Messages front door turns it into Anthropic's `stop_sequence`); absent otherwise.
 *
 * n > 1 runs n generations concurrently (choices 0..n-1; their chunks interleave); usage counts the
 * prompt once and sums the completions. A failing choice aborts the others.
 *
 * Abort: a client cancel (the signal aborts with a plain reason) stops the engine at once; a stream
 * then ends with `{usage}` of the work done (the gateway collects it after cancelling), a unary call
 * with a retryable 503 (only a service shutdown aborts unary work). A deadline (reason ApiError 524)
 * is thrown as it is.
 */
export function chatCompletionsHandler(
  engines: EngineRegistry,
  opts: ChatHandlerOptions = {},
): RpcHandler<ChatServiceBody> {
  const media = opts.media ?? DEFAULT_MEDIA_OPTIONS;
  return async (req, ctx) => {
    const body = req.body;
    checkChatRequest(body, req.model);
    const stream = req.stream;
    // The model that answers: req.model, or a fallback when no endpoint of it could take the request.
    let model = req.model.id;
    const engine = engineWithFallbacks(engines, req, ctx.log, (m) => {
      model = m.id;
      if (stream) ctx.meta?.({ model: m.id, fallback_from: req.model.id });
    });
    let base = toEngineInput(body, req.model);
    base.route = routeOf(req);
    // An upper bound to fit (Messages front door): passed as the default cap, which fitContext lowers.
    const fit = body.fit_max_tokens === true && base.max_tokens != null ? base.max_tokens : null;
    if (fit !== null) base.max_tokens = null;
    try {
      base.messages = await resolveMedia(base.messages, req.model, engine, media, ctx.signal);
      base = await fitContext(
        engine,
        base,
        req.model,
        ctx.signal,
        {
          promptParam: 'messages',
          promptName: 'messages',
          maxName: body.max_completion_tokens != null ? 'max_completion_tokens' : 'max_tokens',
        },
        fit,
      );
    } catch (e) {
      if (ctx.signal.aborted) return abortedEnd(ctx.signal, stream, ZERO_USAGE);
      throw e;
    }
    const n = body.n ?? 1;
    const includeUsage = stream && body.stream_options?.include_usage === true;
    const id = `chatcmpl-${randomId()}`;
    const created = Math.floor(Date.now() / 1000);

    const emit = (choices: ChunkChoice[], usage?: UsageReport) => {
      if (ctx.signal.aborted) return;
      const chunk: Chunk = { id, object: 'chat.completion.chunk', created, model, choices };
      if (includeUsage) chunk.usage = usage ?? null;
      ctx.emit(chunk);
    };
    // Deltas sent so far (engines send about one token per delta): the usage a heartbeat reports, so
    // the gateway can bill what the client received if this replica dies before the end.
    let sentDeltas = 0;
    if (stream) {
      let prompt = -1;
      ctx.progress = () => {
        if (prompt < 0) prompt = countPromptTokens(base.messages, base.tools);
        return { prompt_tokens: prompt, completion_tokens: sentDeltas, total_tokens: prompt + sentDeltas };
      };
    }
    // Per choice, a first chunk {role: 'assistant', content: ''} before its first delta.
    const sinkFor = (index: number): ChoiceSink => {
      let started = false;
      const send = (delta: ChunkChoice['delta'], finish: FinishReason | null, stop: string | null) => {
        if (!started) {
          started = true;
          emit([{ index, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]);
        }
        emit([
          stop === null
            ? { index, delta, logprobs: null, finish_reason: finish }
            : { index, delta, logprobs: null, finish_reason: finish, stop_reason: stop },
        ]);
      };
      return {
        delta: (d) => {
          sentDeltas++;
          send(d, null, null);
        },
        finish: (reason, stop) => send({}, reason, stop),
      };
    };

    const results = await runChoices(engine, base, n, ctx.signal, stream ? sinkFor : undefined);
    const usage = sumUsage(results);

    if (ctx.signal.aborted) {
      const reason: unknown = ctx.signal.reason;
      ctx.log.debug(
        { usage, reason: reason instanceof Error ? reason.message : String(reason) },
        'chat completion aborted',
      );
      return abortedEnd(ctx.signal, stream, usage);
    }

    ctx.log.debug({ usage, n, stream, engine: engine.type }, 'chat completion done');
    if (stream) {
      if (includeUsage) emit([], usage);
      return model === req.model.id ? { usage } : { usage, model };
    }
    const completion: ChatCompletion = {
      id,
      object: 'chat.completion',
      created,
      model,
      choices: results.map((r) => ({
        index: r.index,
        message: {
          role: 'assistant',
          content: r.toolCalls.length && !r.content ? null : r.content,
          refusal: null,
          ...(r.reasoning ? { reasoning_content: r.reasoning } : {}),
          ...(r.toolCalls.length ? { tool_calls: r.toolCalls } : {}),
        },
        logprobs: null,
        finish_reason: r.finish as FinishReason,
        ...(r.stopSequence !== null ? { stop_reason: r.stopSequence } : {}),
      })),
      usage,
    };
    return model === req.model.id ? { data: completion, usage } : { data: completion, usage, model };
  };
}
