import {
  ApiError,
  type HostedSearchAsk,
  type ResponseRequest,
  SAMPLING_DEFAULTS,
  type SearchResult,
  type UsageReport,
  ZERO_USAGE,
} from '@infer/contracts';
import type { RpcHandler } from '@infer/rpc';
import { routeOf } from '../chat/fallback.js';
import {
  abortedEnd,
  type ChoiceResult,
  fitContext,
  randomId,
  runChoices,
  sumReasoning,
} from '../chat/generation.js';
import { DEFAULT_MEDIA_OPTIONS, type MediaOptions, resolveMedia } from '../chat/media.js';
import type { EngineInput, EngineMessage } from '../engines/engine.js';
import type { EngineRegistry } from '../engines/registry.js';
import type { ReasoningSeal } from './reasoning-seal.js';
import { ResponseAssembler, type WebSearchCall } from './responses-events.js';
import { responsesEngineFields, responsesReasoning, WEB_SEARCH_FUNCTION } from './responses-request.js';

export interface ResponsesHandlerOptions {
  media?: MediaOptions;
  /** Seals and opens `encrypted_content` (null: not configured, that include is a 400). */
  seal?: ReasoningSeal | null;
  /**
   * Runs one hosted web search through the gateway that admitted the request (its envelope's `search`
   * subject); throws the gateway's ApiError (429 when the member's search budget refuses it). Absent:
   * the `web_search` tool is a 400.
   */
  search?: (subject: string, ask: HostedSearchAsk, signal: AbortSignal) => Promise<SearchResult[]>;
}

/**
 * Model rounds of one response that may search (the hosted web_search tool): after the last, the model
 * is asked to answer without the tool. Every round's tokens count toward the request's usage.
 */
export const MAX_WEB_SEARCH_ROUNDS = 4;

/** The results of one search as the tool output the model reads. */
export function searchResultsText(query: string, results: SearchResult[]): string {
  if (!results.length) return `No web results for "${query}".`;
  return [
    `Web results for "${query}":`,
    ...results.map((r, i) => `[${i + 1}] ${r.title}\nURL: ${r.url}\n${r.content ?? r.snippet}`),
  ].join('\n\n');
}

/** A search failure the whole response ends with (the member's limits, no search service), not the model's to handle. */
const endsResponse = (e: unknown) =>
  !(e instanceof ApiError) || e.status === 429 || e.status === 402 || e.status >= 500;

const addUsage = (a: UsageReport, r: ChoiceResult): UsageReport => ({
  prompt_tokens: a.prompt_tokens + r.usage.prompt_tokens,
  completion_tokens: a.completion_tokens + r.usage.completion_tokens,
  total_tokens: a.total_tokens + r.usage.prompt_tokens + r.usage.completion_tokens,
});

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
    const searchSubject = opts.search && req.search ? req.search : null;
    const fields = responsesEngineFields(body, m, {
      hostedSearch: searchSubject !== null,
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
    // The tools loop: a round whose only calls are hosted web searches runs them (through the gateway,
    // which admits and meters each like POST /v1/search), gives the model the results and runs it
    // again, at most MAX_WEB_SEARCH_ROUNDS times; the output cap bounds the output of all rounds.
    const results: ChoiceResult[] = [];
    let usage: UsageReport = { ...ZERO_USAGE };
    // A failure after a round (a refused search) still reports the tokens used (the error frame).
    ctx.progress = () => usage;
    const cap = base.max_tokens;
    let input = base;
    for (let round = 1; ; round++) {
      const [result] = await runChoices(engine, input, 1, ctx.signal, () => ({
        delta: (d) => assembler.delta(d),
        finish: () => undefined,
      }));
      if (result) {
        results.push(result);
        usage = addUsage(usage, result);
      }
      if (ctx.signal.aborted || !result) return abortedEnd(ctx.signal, req.stream, usage);
      const searches = assembler.roundSearches();
      if (!searchSubject || !searches.length || assembler.roundHasClientCalls() || result.finish === 'length')
        break;
      const messages: EngineMessage[] = [
        ...input.messages,
        {
          role: 'assistant',
          content: result.content || null,
          ...(result.reasoning ? { reasoning_content: result.reasoning } : {}),
          tool_calls: searches.map((c) => ({
            id: c.callId,
            type: 'function' as const,
            function: { name: WEB_SEARCH_FUNCTION, arguments: c.args },
          })),
        },
      ];
      for (const call of searches) {
        const output = await runSearch(call);
        messages.push({ role: 'tool', tool_call_id: call.callId, content: output });
      }
      assembler.nextRound();
      const used = usage.completion_tokens;
      if (cap != null && used >= cap) break;
      const last = round >= MAX_WEB_SEARCH_ROUNDS;
      const tools = last ? input.tools.filter((t) => t.function.name !== WEB_SEARCH_FUNCTION) : input.tools;
      try {
        input = await fitContext(
          engine,
          {
            ...input,
            messages,
            tools,
            // A forced choice applies to the first round; later rounds may answer.
            tool_choice: tools.length ? 'auto' : 'none',
            max_tokens: null,
            max_tokens_default: undefined,
          },
          m,
          ctx.signal,
          { promptParam: 'input', promptName: 'input', maxName: 'max_output_tokens' },
          cap != null ? cap - used : (m.default_max_output_tokens ?? null),
        );
      } catch (e) {
        if (ctx.signal.aborted) return abortedEnd(ctx.signal, req.stream, usage);
        throw e;
      }
    }
    if (ctx.signal.aborted) return abortedEnd(ctx.signal, req.stream, usage);
    const lastResult = results.at(-1);
    const cut =
      lastResult?.finish === 'length' ||
      (cap != null && usage.completion_tokens >= cap && lastResult?.finish !== 'stop');
    const response = assembler.finish(cut, {
      input_tokens: usage.prompt_tokens,
      output_tokens: usage.completion_tokens,
      total_tokens: usage.total_tokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens_details: { reasoning_tokens: sumReasoning(results) },
    });

    /** One hosted search: the tool output the model reads; a failure the model can work around is told to it. */
    async function runSearch(call: WebSearchCall): Promise<string> {
      let query = '';
      try {
        const a: unknown = JSON.parse(call.args || '{}');
        if (a && typeof a === 'object' && typeof (a as { query?: unknown }).query === 'string')
          query = (a as { query: string }).query.trim();
      } catch {
        // not JSON: no query
      }
      assembler.searching(call, query);
      if (!query) {
        assembler.searched(call, false, null);
        return 'The web search needs a non-empty "query" string argument.';
      }
      try {
        const found = await (opts.search as NonNullable<typeof opts.search>)(
          searchSubject as string,
          { requestId: req.requestId, query },
          ctx.signal,
        );
        const sources = body.include?.includes('web_search_call.action.sources')
          ? found.map((r) => r.url)
          : null;
        assembler.searched(call, true, sources);
        return searchResultsText(query, found);
      } catch (e) {
        assembler.searched(call, false, null);
        if (ctx.signal.aborted || endsResponse(e)) throw e;
        return `The web search failed: ${(e as ApiError).message}`;
      }
    }
    if (req.stream) return { usage };
    return { data: response, usage };
  };
}
