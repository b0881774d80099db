import {
  ApiError,
  type Completion,
  type CompletionChunk,
  type CompletionFinishReason,
  type CompletionRequest,
  SAMPLING_DEFAULTS,
  type UsageReport,
  ZERO_USAGE,
} from '@infer/contracts';
import type { RpcHandler } from '@infer/rpc';
import { routeOf } from '../chat/fallback.js';
import { abortedEnd, fitContext, randomId, runChoices, sumUsage } from '../chat/generation.js';
import type { EngineInput } from '../engines/engine.js';
import type { EngineRegistry } from '../engines/registry.js';

/**
 * `infer.chat.legacy-completions` (`POST /v1/completions`): the raw `prompt` continued by the model,
 * with no chat template, no tools and no reasoning. Only models whose catalog capabilities list
 * `completions` (chat-E) take it; others get a 400 naming `model`.
 *
 * Unary: a `text_completion` with `choices[{text, index, finish_reason, logprobs: null}]` and usage.
 * Stream: `text_completion` chunks, one per engine delta (`finish_reason` null), then one per choice
 * with `text: ''` and its finish_reason; with `stream_options.include_usage`, `usage: null` on each and
 * a last chunk with `choices: []` and the usage. All chunks share `id` and `created`.
 */
export function completionsHandler(engines: EngineRegistry): RpcHandler<CompletionRequest> {
  return async (req, ctx) => {
    const body = req.body;
    const m = req.model;
    if (!m.capabilities.completions) {
      throw ApiError.invalid(
        `The model '${m.id}' does not support /v1/completions; use /v1/chat/completions.`,
        'model',
      );
    }
    if (req.stream && !m.capabilities.streaming) {
      throw ApiError.invalid(`The model '${m.id}' does not support streaming.`, 'stream');
    }
    const engine = engines.get(m);
    let base: EngineInput = {
      model: m.id,
      messages: [],
      prompt: body.prompt,
      sampling: {
        temperature: body.temperature ?? SAMPLING_DEFAULTS.temperature,
        top_p: body.top_p ?? SAMPLING_DEFAULTS.top_p,
        seed: body.seed ?? null,
        presence_penalty: null,
        frequency_penalty: null,
      },
      max_tokens: body.max_tokens ?? null,
      stop: (typeof body.stop === 'string' ? [body.stop] : (body.stop ?? [])).filter((s) => s.length > 0),
      tools: [],
      tool_choice: 'none',
      parallel_tool_calls: false,
      response_format: null,
      reasoning: null,
      choice: 0,
      route: routeOf(req),
    };
    const stream = req.stream;
    try {
      base = await fitContext(engine, base, m, ctx.signal, {
        promptParam: 'prompt',
        promptName: 'prompt',
        maxName: 'max_tokens',
      });
    } catch (e) {
      if (ctx.signal.aborted) return abortedEnd(ctx.signal, stream, ZERO_USAGE);
      throw e;
    }
    const n = body.n ?? 1;
    const includeUsage = stream && body.stream_options?.include_usage === true;
    const id = `cmpl-${randomId()}`;
    const created = Math.floor(Date.now() / 1000);
    const emit = (choices: CompletionChunk['choices'], usage?: UsageReport) => {
      if (ctx.signal.aborted) return;
      const chunk: CompletionChunk = { id, object: 'text_completion', created, model: m.id, choices };
      if (includeUsage) chunk.usage = usage ?? null;
      ctx.emit(chunk);
    };

    const results = await runChoices(
      engine,
      base,
      n,
      ctx.signal,
      stream
        ? (index) => ({
            delta: (d) => {
              if (d.content) emit([{ text: d.content, index, finish_reason: null, logprobs: null }]);
            },
            finish: (reason) =>
              emit([{ text: '', index, finish_reason: toCompletionFinish(reason), logprobs: null }]),
          })
        : undefined,
    );
    const usage = sumUsage(results);
    if (ctx.signal.aborted) return abortedEnd(ctx.signal, stream, usage);
    if (stream) {
      if (includeUsage) emit([], usage);
      return { usage };
    }
    const completion: Completion = {
      id,
      object: 'text_completion',
      created,
      model: m.id,
      choices: results.map((r) => ({
        text: r.content,
        index: r.index,
        finish_reason: toCompletionFinish(r.finish ?? 'stop'),
        logprobs: null,
      })),
      usage,
    };
    return { data: completion, usage };
  };
}

const toCompletionFinish = (r: string): CompletionFinishReason => (r === 'length' ? 'length' : 'stop');
