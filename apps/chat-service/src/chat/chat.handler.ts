import { randomBytes } from 'node:crypto';
import {
  ApiError,
  type ChatCompletion,
  type ChatCompletionChunk,
  type ChatCompletionRequest,
  type FinishReason,
  type ToolCall,
  type UsageReport,
} from '@infer/contracts';
import type { RpcHandler } from '@infer/service-kit';
import type { ChatEngine, EngineDelta, EngineInput, EngineUsage } from '../engines/engine.js';
import type { EngineRegistry } from '../engines/registry.js';
import { countPromptTokens, countTokens } from '../tokens.js';
import { toEngineInput } from './engine-input.js';

type Chunk = ChatCompletionChunk;
type ChunkChoice = Chunk['choices'][number];

/** What one choice produced: its text, calls, why it ended and its usage. */
interface ChoiceResult {
  index: number;
  content: string;
  reasoning: string;
  toolCalls: ToolCall[];
  /** null when the work was cancelled. */
  finish: FinishReason | null;
  usage: EngineUsage;
}

const randomId = (bytes = 12) => randomBytes(bytes).toString('base64url');

/**
 * `infer.chat.completions`: runs the model's engine for the validated request and answers with a
 * ChatCompletion (unary) or ChatCompletionChunks emitted as the engine produces deltas (stream).
 *
 * Stream shape (as OpenAI): per choice, a first chunk `{role: 'assistant', content: ''}` when the
 * engine produces its first delta, then one chunk per delta with `finish_reason: null`, then a chunk
 * with an empty delta and the finish_reason. With `stream_options.include_usage` every chunk carries
 * `usage: null` and one last chunk has `choices: []` and the usage. All chunks share `id` and `created`.
 *
 * n > 1 runs n generations concurrently (choices 0..n-1; their chunks interleave); usage counts the
 * prompt once and sums the completions. A failing choice aborts the others.
 *
 * Abort: a client cancel (the signal aborts with a plain reason) stops the engine at once; a stream
 * then ends with `{usage}` of the work done (the gateway collects it after cancelling), a unary call
 * with a retryable 503 (only a service shutdown aborts unary work). A deadline (reason ApiError 524)
 * is thrown as it is.
 */
export function chatCompletionsHandler(engines: EngineRegistry): RpcHandler<ChatCompletionRequest> {
  return async (req, ctx) => {
    const body = req.body;
    const base = toEngineInput(body, req.model);
    const engine = engines.get(req.model);
    const n = body.n ?? 1;
    const stream = req.stream;
    const includeUsage = stream && body.stream_options?.include_usage === true;
    const id = `chatcmpl-${randomId()}`;
    const created = Math.floor(Date.now() / 1000);
    const model = req.model.id;

    const emit = (choices: ChunkChoice[], usage?: UsageReport) => {
      if (ctx.signal.aborted) return;
      const chunk: Chunk = { id, object: 'chat.completion.chunk', created, model, choices };
      if (includeUsage) chunk.usage = usage ?? null;
      ctx.emit(chunk);
    };

    const failed = new AbortController();
    const signal = AbortSignal.any([ctx.signal, failed.signal]);
    const runs = Array.from({ length: n }, (_, index) =>
      runChoice(engine, { ...base, choice: index }, signal, stream ? emit : null).catch((e: unknown) => {
        failed.abort(e);
        throw e;
      }),
    );
    const results = await Promise.all(runs);
    const usage = sumUsage(results);

    if (ctx.signal.aborted) {
      const reason: unknown = ctx.signal.reason;
      ctx.log.debug(
        { usage, reason: reason instanceof Error ? reason.message : String(reason) },
        'chat completion aborted',
      );
      if (reason instanceof ApiError) throw reason;
      if (!stream) {
        throw new ApiError(
          503,
          'The model service stopped before the answer was finished; retry the request.',
          {
            type: 'server_error',
            code: 'service_unavailable',
          },
        );
      }
      return { usage };
    }

    ctx.log.debug({ usage, n, stream, engine: engine.type }, 'chat completion done');
    if (stream) {
      if (includeUsage) emit([], usage);
      return { usage };
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
          ...(r.reasoning ? { reasoning_content: r.reasoning } : {}),
          ...(r.toolCalls.length ? { tool_calls: r.toolCalls } : {}),
        },
        logprobs: null,
        finish_reason: r.finish as FinishReason,
      })),
      usage,
    };
    return { data: completion, usage };
  };
}

/**
 * Runs one choice to its end. With `emit` (streaming) each delta becomes a chunk as it arrives.
 */
async function runChoice(
  engine: ChatEngine,
  input: EngineInput,
  signal: AbortSignal,
  emit: ((choices: ChunkChoice[]) => void) | null,
): Promise<ChoiceResult> {
  const index = input.choice;
  const r: ChoiceResult = {
    index,
    content: '',
    reasoning: '',
    toolCalls: [],
    finish: null,
    usage: { prompt_tokens: 0, completion_tokens: 0, reasoning_tokens: 0 },
  };
  const calls = new Map<number, ToolCall>();
  let started = false;
  const send = (delta: ChunkChoice['delta'], finish: FinishReason | null = null) => {
    if (!emit) return;
    if (!started) {
      started = true;
      emit([{ index, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]);
    }
    emit([{ index, delta, logprobs: null, finish_reason: finish }]);
  };

  let end: Extract<EngineDelta, { type: 'finish' }> | undefined;
  try {
    for await (const d of engine.generate(input, signal)) {
      if (d.type === 'finish') {
        end = d;
        break;
      }
      if (signal.aborted) {
        // An engine should finish with 'cancelled' at once; one that goes on is not waited for.
        if (d.type === 'content') r.content += d.text;
        if (d.type === 'reasoning') r.reasoning += d.text;
        break;
      }
      switch (d.type) {
        case 'content':
          if (!d.text) break;
          r.content += d.text;
          send({ content: d.text });
          break;
        case 'reasoning':
          if (!d.text) break;
          r.reasoning += d.text;
          send({ reasoning_content: d.text });
          break;
        case 'tool_call': {
          let call = calls.get(d.index);
          const first = !call;
          if (!call) {
            call = {
              id: d.id ?? `call_${randomId()}`,
              type: 'function',
              function: { name: '', arguments: '' },
            };
            calls.set(d.index, call);
          }
          if (d.name) call.function.name += d.name;
          if (d.arguments) call.function.arguments += d.arguments;
          const fn: { name?: string; arguments?: string } = {};
          if (d.name !== undefined) fn.name = d.name;
          if (d.arguments !== undefined) fn.arguments = d.arguments;
          send({
            tool_calls: [
              first
                ? { index: d.index, id: call.id, type: 'function', function: fn }
                : { index: d.index, function: fn },
            ],
          });
          break;
        }
      }
    }
  } catch (e) {
    if (!signal.aborted) throw e;
    // An engine that throws on abort: its usage is estimated below.
  }
  r.toolCalls = [...calls.entries()].sort(([a], [b]) => a - b).map(([, c]) => c);

  if (!end || end.reason === 'cancelled') {
    if (!signal.aborted)
      throw ApiError.internal(`The '${engine.type}' engine ended without finishing the answer.`);
    r.usage = end?.usage ?? estimateUsage(input, r);
    return r;
  }
  r.finish = end.reason;
  r.usage = end.usage;
  if (!signal.aborted) send({}, end.reason);
  return r;
}

/** Usage of cancelled work for engines that could not report it: the shared approximation. */
function estimateUsage(input: EngineInput, r: ChoiceResult): EngineUsage {
  const reasoning = countTokens(r.reasoning);
  const calls = r.toolCalls.reduce(
    (s, c) => s + countTokens(c.function.name) + countTokens(c.function.arguments),
    0,
  );
  return {
    prompt_tokens: countPromptTokens(input.messages, input.tools),
    completion_tokens: reasoning + countTokens(r.content) + calls,
    reasoning_tokens: reasoning,
  };
}

/** Prompt counted once (every choice reads the same prompt), completions summed. */
function sumUsage(results: ChoiceResult[]): UsageReport {
  const prompt = Math.max(0, ...results.map((r) => r.usage.prompt_tokens));
  const completion = results.reduce((s, r) => s + r.usage.completion_tokens, 0);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}
