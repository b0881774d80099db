import {
  ApiError,
  type ContentPart,
  type ResponseCompletedEvent,
  type ResponseInputMessage,
  type ResponseObject,
  type ResponseOutputItem,
  type ResponseRequest,
  SAMPLING_DEFAULTS,
  ZERO_USAGE,
} from '@infer/contracts';
import type { RpcHandler } from '@infer/service-kit';
import { decideReasoning } from '../chat/engine-input.js';
import { abortedEnd, fitContext, randomId, runChoices, sumReasoning, sumUsage } from '../chat/generation.js';
import { DEFAULT_MEDIA_OPTIONS, type MediaOptions, resolveMedia } from '../chat/media.js';
import type { EngineInput, EngineMessage } from '../engines/engine.js';
import type { EngineRegistry } from '../engines/registry.js';

export interface ResponsesHandlerOptions {
  media?: MediaOptions;
}

/**
 * `infer.chat.responses` (`POST /v1/responses`, the Responses API subset of the spec). Only models
 * whose catalog capabilities list `responses` (chat-E, chat-F) take it; others get a 400 naming
 * `model`.
 *
 * - `instructions` becomes a system message before `input`; `input` is a string (one user message) or
 *   Responses-format messages (`input_text`, `output_text`, `input_image` parts; images only in user
 *   messages, on models with vision).
 * - Reasoning follows the model's catalog default (chat-E reasons, chat-F does not).
 * - `max_output_tokens` defaults to the catalog's `default_max_output_tokens` (65536 on chat-E), lowered
 *   to what the context window leaves; an explicit value that does not fit is a 400.
 * - `output`: a `reasoning` item when the model reasoned, then the assistant `message` item; `status`
 *   `completed`, or `incomplete` (with `incomplete_details.reason: max_output_tokens`) when the cap cut
 *   the answer, as OpenAI does. `usage`: input/output/total tokens (+ OpenAI's details).
 * - `stream: true`: no incremental events; the whole response arrives as ONE terminal event
 *   `response.completed` (the gateway writes it as `event: response.completed` + `data:`).
 */
export function responsesHandler(
  engines: EngineRegistry,
  opts: ResponsesHandlerOptions = {},
): RpcHandler<ResponseRequest> {
  const media = opts.media ?? DEFAULT_MEDIA_OPTIONS;
  return async (req, ctx) => {
    const body = req.body;
    const m = req.model;
    if (!m.capabilities.responses) {
      throw ApiError.invalid(
        `The model '${m.id}' does not support /v1/responses; use /v1/chat/completions.`,
        'model',
      );
    }
    const engine = engines.get(m);
    const offset = body.instructions ? 1 : 0;
    const messages: EngineMessage[] = [];
    if (body.instructions) messages.push({ role: 'system', content: body.instructions });
    if (typeof body.input === 'string') messages.push({ role: 'user', content: body.input });
    else for (const [i, item] of body.input.entries()) messages.push(toEngineMessage(item, i));
    const reasoning = decideReasoning(m, {});
    let base: EngineInput = {
      model: m.id,
      messages,
      sampling: {
        temperature: body.temperature ?? SAMPLING_DEFAULTS.temperature,
        top_p: body.top_p ?? SAMPLING_DEFAULTS.top_p,
        seed: null,
        presence_penalty: null,
        frequency_penalty: null,
      },
      max_tokens: body.max_output_tokens ?? null,
      stop: [],
      tools: [],
      tool_choice: 'none',
      parallel_tool_calls: false,
      response_format: null,
      reasoning,
      choice: 0,
    };
    try {
      base.messages = await resolveMedia(
        messages,
        m,
        engine,
        media,
        ctx.signal,
        (mi, pi) => (typeof body.input === 'string' ? 'input' : `input[${mi}].content[${pi}]`),
        (i) => i - offset,
        '.image_url',
      );
      base = await fitContext(
        engine,
        base,
        m,
        ctx.signal,
        { promptParam: 'input', promptName: 'input', maxName: 'max_output_tokens' },
        m.default_max_output_tokens ?? null,
      );
    } catch (e) {
      if (ctx.signal.aborted) return abortedEnd(ctx.signal, req.stream, ZERO_USAGE);
      throw e;
    }
    const createdAt = Math.floor(Date.now() / 1000);
    const [result] = await runChoices(engine, base, 1, ctx.signal);
    const usage = sumUsage(result ? [result] : []);
    if (ctx.signal.aborted || !result) return abortedEnd(ctx.signal, req.stream, usage);
    const cut = result.finish === 'length';
    const output: ResponseOutputItem[] = [];
    if (reasoning !== null || result.reasoning) {
      output.push({
        id: `rs_${randomId()}`,
        type: 'reasoning',
        summary: [],
        content: [{ type: 'reasoning_text', text: result.reasoning }],
      });
    }
    output.push({
      id: `msg_${randomId()}`,
      type: 'message',
      role: 'assistant',
      status: cut ? 'incomplete' : 'completed',
      content: [{ type: 'output_text', text: result.content, annotations: [] }],
    });
    const response: ResponseObject = {
      id: `resp_${randomId()}`,
      object: 'response',
      created_at: createdAt,
      model: m.id,
      status: cut ? 'incomplete' : 'completed',
      output,
      usage: {
        input_tokens: usage.prompt_tokens,
        output_tokens: usage.completion_tokens,
        total_tokens: usage.total_tokens,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens_details: { reasoning_tokens: sumReasoning([result]) },
      },
      instructions: body.instructions ?? null,
      max_output_tokens: base.max_tokens,
      temperature: base.sampling.temperature,
      top_p: base.sampling.top_p,
      error: null,
      incomplete_details: cut ? { reason: 'max_output_tokens' } : null,
    };
    if (req.stream) {
      const event: ResponseCompletedEvent = { type: 'response.completed', response, sequence_number: 0 };
      ctx.emit(event);
      return { usage };
    }
    return { data: response, usage };
  };
}

/** A Responses-format input message as an engine message; `i` is its index in `input` (for `param`). */
function toEngineMessage(item: ResponseInputMessage, i: number): EngineMessage {
  const parts =
    typeof item.content === 'string' ? [{ type: 'input_text' as const, text: item.content }] : item.content;
  const text = () =>
    parts
      .map((p, j) => {
        if (p.type === 'input_image') {
          throw ApiError.invalid('Images are accepted in user messages only.', `input[${i}].content[${j}]`);
        }
        return p.text;
      })
      .join('\n');
  switch (item.role) {
    case 'system':
    case 'developer':
      return { role: 'system', content: text() };
    case 'assistant':
      return { role: 'assistant', content: text() };
    case 'user': {
      if (parts.every((p) => p.type !== 'input_image')) return { role: 'user', content: text() };
      const content: ContentPart[] = parts.map((p) =>
        p.type === 'input_image'
          ? { type: 'image_url', image_url: { url: p.image_url, ...(p.detail ? { detail: p.detail } : {}) } }
          : { type: 'text', text: p.text },
      );
      return { role: 'user', content };
    }
  }
}
