import { ApiError, type ResponseRequest, SAMPLING_DEFAULTS, ZERO_USAGE } from '@infer/contracts';
import type { RpcHandler } from '@infer/rpc';
import { routeOf } from '../chat/fallback.js';
import { abortedEnd, fitContext, randomId, runChoices, sumReasoning, sumUsage } from '../chat/generation.js';
import { DEFAULT_MEDIA_OPTIONS, type MediaOptions, resolveMedia } from '../chat/media.js';
import type { EngineInput } from '../engines/engine.js';
import type { EngineRegistry } from '../engines/registry.js';
import type { ReasoningSeal } from './reasoning-seal.js';
import { ResponseAssembler } from './responses-events.js';
import { responsesEngineFields, responsesReasoning } from './responses-request.js';

export interface ResponsesHandlerOptions {
  media?: MediaOptions;
  /** Seals and opens `encrypted_content` (null: not configured, that include is a 400). */
  seal?: ReasoningSeal | null;
}

/**
 * `infer.chat.responses` (`POST /v1/responses`, the Responses API). Only models whose catalog
 * capabilities list `responses` (chat-E, chat-F) take it; others get a 400 naming `model`.
 *
 * - `instructions` becomes a system message before `input`; `input` is a string (one user message) or
 *   Responses-format items: messages (`input_text`, `output_text`, `input_image` parts; images only in
 *   user messages, on models with vision), `function_call` / `function_call_output` items, replayed
 *   `reasoning` items (responses-request.ts).
 * - `tools` (function tools), `tool_choice`, `parallel_tool_calls` and `text.format` (json_object,
 *   json_schema) with the rules and 400s of chat completions; unknown fields are 400s (the schema).
 * - Reasoning follows the model's catalog default (chat-E reasons, chat-F does not).
 * - `max_output_tokens` defaults to the catalog's `default_max_output_tokens` (65536 on chat-E), lowered
 *   to what the context window leaves; an explicit value that does not fit is a 400.
 * - `output`: a `reasoning` item when the model reasons, then the assistant `message` item and/or
 *   `function_call` items; `status` `completed`, or `incomplete` (with `incomplete_details.reason:
 *   max_output_tokens`) when the cap cut the answer, as OpenAI does.
 * - `stream: true`: the Responses event sequence (responses-events.ts), ending with
 *   `response.completed` carrying the whole response.
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
    const seal = opts.seal ?? null;
    const sealing = body.include?.includes('reasoning.encrypted_content') ?? false;
    if (sealing && !seal) {
      throw ApiError.invalid(
        "include 'reasoning.encrypted_content' is not available: no seal key is configured on this deployment (RESPONSES_SEAL_KEYS).",
        'include',
      );
    }
    const fields = responsesEngineFields(body, m, {
      openSealed: seal ? (blob, param) => seal.open(blob, req.memberId, param) : undefined,
    });
    const reasoning = responsesReasoning(m, body.reasoning?.effort ?? null);
    let base: EngineInput = {
      model: m.id,
      messages: fields.messages,
      sampling: {
        temperature: body.temperature ?? SAMPLING_DEFAULTS.temperature,
        top_p: body.top_p ?? SAMPLING_DEFAULTS.top_p,
        seed: null,
        presence_penalty: null,
        frequency_penalty: null,
      },
      max_tokens: body.max_output_tokens ?? null,
      stop: [],
      tools: fields.tools,
      tool_choice: fields.tool_choice,
      parallel_tool_calls: fields.parallel_tool_calls,
      response_format: fields.response_format,
      reasoning,
      choice: 0,
      route: routeOf(req),
    };
    try {
      base.messages = await resolveMedia(
        base.messages,
        m,
        engine,
        media,
        ctx.signal,
        (mi, pi) => (typeof body.input === 'string' ? 'input' : `input[${mi}].content[${pi}]`),
        (i) => fields.inputIndex[i] ?? i,
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
    const assembler = new ResponseAssembler(
      {
        id: `resp_${randomId()}`,
        object: 'response',
        created_at: Math.floor(Date.now() / 1000),
        model: m.id,
        instructions: body.instructions ?? null,
        max_output_tokens: base.max_tokens,
        temperature: base.sampling.temperature,
        top_p: base.sampling.top_p,
        error: null,
        tools: body.tools ?? [],
        tool_choice: fields.echo.tool_choice,
        parallel_tool_calls: fields.parallel_tool_calls,
        metadata: body.metadata ?? {},
        text: fields.echo.text,
        store: body.store !== false,
        previous_response_id: null,
        service_tier: 'default',
        reasoning: { effort: reasoning?.effort ?? null, summary: body.reasoning?.summary ?? null },
      },
      req.stream ? (e) => ctx.signal.aborted || ctx.emit(e) : null,
      fields.offered,
      sealing && seal ? (text) => seal.seal(text, req.memberId) : null,
    );
    assembler.start(reasoning !== null);
    const [result] = await runChoices(engine, base, 1, ctx.signal, () => ({
      delta: (d) => assembler.delta(d),
      finish: () => undefined,
    }));
    const usage = sumUsage(result ? [result] : []);
    if (ctx.signal.aborted || !result) return abortedEnd(ctx.signal, req.stream, usage);
    const response = assembler.finish(result.finish === 'length', {
      input_tokens: usage.prompt_tokens,
      output_tokens: usage.completion_tokens,
      total_tokens: usage.total_tokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens_details: { reasoning_tokens: sumReasoning([result]) },
    });
    if (req.stream) return { usage };
    return { data: response, usage };
  };
}
