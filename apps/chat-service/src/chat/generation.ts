import { randomBytes } from 'node:crypto';
import {
  ApiError,
  type CatalogEntry,
  type EndFrame,
  type FinishReason,
  type ToolCall,
  type UsageReport,
} from '@infer/contracts';
import type { ChatEngine, EngineDelta, EngineInput, EngineUsage } from '../engines/engine.js';
import { countPromptTokens, countTokens } from '../tokens.js';

/**
 * What the three endpoints of the chat service share: running an engine for n choices, collecting each
 * choice's text, reasoning, tool calls and usage, and the context-window check before it.
 */

/** What one choice produced: its text, calls, why it ended and its usage. */
export interface ChoiceResult {
  index: number;
  content: string;
  reasoning: string;
  toolCalls: ToolCall[];
  /** null when the work was cancelled. */
  finish: FinishReason | null;
  /** The request's stop string that ended the choice (finish 'stop'), when the engine reports one. */
  stopSequence: string | null;
  usage: EngineUsage;
}

/** A delta of one choice as a stream sends it (chat chunk delta shape). */
export interface ChoiceDelta {
  content?: string;
  reasoning_content?: string;
  tool_calls?: Array<{
    index: number;
    id?: string;
    type?: 'function';
    function: { name?: string; arguments?: string };
  }>;
}

/** Receives a streamed choice's deltas as the engine produces them, then its finish reason. */
export interface ChoiceSink {
  delta(d: ChoiceDelta): void;
  /** `stopSequence`: the stop string that ended the choice, or null. */
  finish(reason: FinishReason, stopSequence: string | null): void;
}

export const randomId = (bytes = 12) => randomBytes(bytes).toString('base64url');

/**
 * Runs choices 0..n-1 of `base` concurrently. A failing choice aborts the others and its error is
 * thrown. When `signal` aborts, every choice ends with the usage of the work done.
 */
export async function runChoices(
  engine: ChatEngine,
  base: EngineInput,
  n: number,
  signal: AbortSignal,
  sinkFor?: (index: number) => ChoiceSink,
): Promise<ChoiceResult[]> {
  const failed = new AbortController();
  const inner = AbortSignal.any([signal, failed.signal]);
  const runs = Array.from({ length: n }, (_, index) =>
    runChoice(engine, { ...base, choice: index }, inner, sinkFor?.(index) ?? null).catch((e: unknown) => {
      failed.abort(e);
      throw e;
    }),
  );
  const settled = await Promise.allSettled(runs);
  const bad = settled.find((s) => s.status === 'rejected');
  if (bad) throw (bad as PromiseRejectedResult).reason;
  return settled.map((s) => (s as PromiseFulfilledResult<ChoiceResult>).value);
}

/** Runs one choice to its end; with a sink (streaming) each delta is passed on as it arrives. */
export async function runChoice(
  engine: ChatEngine,
  input: EngineInput,
  signal: AbortSignal,
  sink: ChoiceSink | null,
): Promise<ChoiceResult> {
  const r: ChoiceResult = {
    index: input.choice,
    content: '',
    reasoning: '',
    toolCalls: [],
    finish: null,
    stopSequence: null,
    usage: { prompt_tokens: 0, completion_tokens: 0, reasoning_tokens: 0 },
  };
  const calls = new Map<number, ToolCall>();
  const send = (d: ChoiceDelta) => {
    if (sink && !signal.aborted) sink.delta(d);
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
  r.stopSequence = end.reason === 'stop' ? (end.stop_sequence ?? null) : null;
  r.usage = end.usage;
  if (sink && !signal.aborted) sink.finish(end.reason, r.stopSequence);
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
    prompt_tokens: promptEstimate(input),
    completion_tokens: reasoning + countTokens(r.content) + calls,
    reasoning_tokens: reasoning,
  };
}

const promptEstimate = (input: EngineInput) =>
  input.prompt !== undefined ? countTokens(input.prompt) : countPromptTokens(input.messages, input.tools);

/** Prompt counted once (every choice reads the same prompt), completions summed. */
export function sumUsage(results: ChoiceResult[]): UsageReport {
  const prompt = Math.max(0, ...results.map((r) => r.usage.prompt_tokens));
  const completion = results.reduce((s, r) => s + r.usage.completion_tokens, 0);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

/** Reasoning tokens of all choices (for the Responses API's output_tokens_details). */
export const sumReasoning = (results: ChoiceResult[]) =>
  results.reduce((s, r) => s + r.usage.reasoning_tokens, 0);

export interface ContextNames {
  /** `param` of an over-long prompt: messages, prompt or input. */
  promptParam: string;
  /** What the prompt is called in the message: "messages", "prompt", "input". */
  promptName: string;
  /** The request field of the output cap: max_tokens or max_output_tokens. */
  maxName: string;
}

/**
 * The context-window rule: prompt tokens + the requested output cap must fit the model's context (the
 * catalog's `context_window`, and the engine's own when it is smaller). Prompt tokens are the
 * engine's exact count when it can measure them, else the shared approximation. An explicit cap that
 * does not fit is a 400 stating both numbers; a default cap (`defaultMax`) is lowered to what fits.
 * Returns the input with the cap to use.
 */
export async function fitContext(
  engine: ChatEngine,
  input: EngineInput,
  model: Pick<CatalogEntry, 'id' | 'context_window'>,
  signal: AbortSignal,
  names: ContextNames,
  defaultMax: number | null = null,
): Promise<EngineInput> {
  const measured = engine.measure
    ? await engine.measure(input, signal)
    : { prompt_tokens: promptEstimate(input), context_tokens: null };
  const limits = [model.context_window, measured.context_tokens].filter(
    (x): x is number => typeof x === 'number' && x > 0,
  );
  const withDefault = (max: number): EngineInput => ({ ...input, max_tokens: max, max_tokens_default: true });
  if (!limits.length) return input.max_tokens == null && defaultMax != null ? withDefault(defaultMax) : input;
  const limit = Math.min(...limits);
  const prompt = measured.prompt_tokens;
  if (input.max_tokens != null) {
    if (prompt + input.max_tokens > limit) {
      throw ApiError.invalid(
        `This model's maximum context length is ${limit} tokens. However, you requested ${prompt + input.max_tokens} tokens (${prompt} in the ${names.promptName}, ${input.max_tokens} in ${names.maxName}). Please reduce the length of the ${names.promptName} or ${names.maxName}.`,
        names.promptParam,
      );
    }
    return input;
  }
  if (prompt >= limit) {
    throw ApiError.invalid(
      `This model's maximum context length is ${limit} tokens. However, your ${names.promptName} resulted in ${prompt} tokens, which leaves no room for an answer. Please reduce the length of the ${names.promptName}.`,
      names.promptParam,
    );
  }
  return defaultMax != null ? withDefault(Math.min(defaultMax, limit - prompt)) : input;
}

/**
 * The end of work that an abort cut short: a deadline (reason ApiError 524) is thrown as it is; a
 * client cancel ends a stream with the usage of the work done (the gateway collects it after
 * cancelling); a unary call is only aborted by a service shutdown, which is a retryable 503.
 */
export function abortedEnd(signal: AbortSignal, stream: boolean, usage: UsageReport): EndFrame {
  const reason: unknown = signal.reason;
  if (reason instanceof ApiError) throw reason;
  if (!stream) {
    throw new ApiError(503, 'The model service stopped before the answer was finished; retry the request.', {
      type: 'server_error',
      code: 'service_unavailable',
    });
  }
  return { usage };
}
