import { ApiError, type ContentPart, OpenAIUpstreamEngineSchema, type ReasoningMode } from '@infer/contracts';
import { type Logger, parseEngineSettings } from '@infer/service-kit';
import { Agent, type Dispatcher } from 'undici';
import type { z } from 'zod';
import { countPromptTokens, countTokens } from '../tokens.js';
import type {
  ChatEngine,
  EngineDelta,
  EngineFinishReason,
  EngineInput,
  EngineMessage,
  EngineUsage,
} from './engine.js';
import { OutputParser, type ParsedPiece } from './output-parser.js';
import type { EngineFactory } from './registry.js';
import { sseData } from './sse-reader.js';

export type OpenAIUpstreamSettings = z.output<typeof OpenAIUpstreamEngineSchema>;

/** Longest upstream error message passed on to the client. */
const MAX_UPSTREAM_MESSAGE = 1000;

/**
 * UPSTREAM ENGINE: any OpenAI-compatible HTTP server (vLLM, SGLang, llama.cpp server, TGI, Ollama,
 * LocalAI ...) serves the model; this engine is a client of its `/chat/completions` (and, for legacy
 * completions, `/completions`).
 *
 * - Every request is sent with `stream: true` and `stream_options.include_usage`, and the upstream's
 *   chunks are relayed delta by delta as they arrive (a unary request simply collects them), so the
 *   usage is the upstream's own count. A server that answers with plain JSON instead is read as one
 *   piece. Without an upstream usage the shared approximation (`src/tokens.ts`) is used.
 * - `reasoning_content` (or vLLM's newer `reasoning`) and `tool_calls` deltas are passed through. When
 *   the server leaves them in `content`, they are parsed out of the text (`reasoning_parser`,
 *   `tool_call_parser` settings; see output-parser.ts).
 * - Reasoning switches are translated for the model's catalog mode: `reasoning_effort` for `effort`,
 *   `chat_template_kwargs.enable_thinking` for `default_on`/`default_off`.
 * - Images reach the upstream as `data:` URIs (the service fetched them already, behind its SSRF
 *   guard): the upstream never fetches a URL a client chose.
 * - Errors: an upstream 4xx about the request (400, 404 of a route aside, 413, 422 ...) becomes our 400
 *   with the upstream's message; 401/403 (our credentials), 404, 5xx, refused connections, resets and
 *   timeouts become a 500 with a clean message (details in the log); 408/429 (upstream busy) a
 *   retryable 503.
 * - `timeout_ms` bounds the wait for the response headers and then the silence between two chunks.
 * - Abort: the HTTP request to the upstream is aborted (the server sees the connection close and stops
 *   generating); the choice ends 'cancelled' with the approximate usage of what arrived.
 */
export class OpenAIUpstreamEngine implements ChatEngine {
  readonly type = 'openai';
  readonly media = { images: true, audio: true };
  private readonly agent: Agent;
  /** `base_url` split for undici's request(): scheme://host:port, and the path without a trailing slash. */
  private readonly origin: string;
  private readonly path: string;

  constructor(
    readonly settings: OpenAIUpstreamSettings,
    private readonly modelId: string,
    private readonly reasoningMode: ReasoningMode,
    private readonly apiKey: string | undefined,
    private readonly log: Logger,
  ) {
    const base = new URL(settings.base_url);
    this.origin = base.origin;
    this.path = base.pathname.replace(/\/+$/, '');
    this.agent = new Agent({
      connect: { timeout: Math.min(settings.timeout_ms, 10_000) },
      headersTimeout: 0,
      bodyTimeout: 0,
      keepAliveTimeout: 30_000,
    });
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  async *generate(input: EngineInput, signal: AbortSignal): AsyncGenerator<EngineDelta> {
    const raw = input.prompt !== undefined;
    const body = raw ? this.completionBody(input) : this.chatBody(input);
    const run = new Run(input, this.settings, raw);
    if (signal.aborted) {
      yield run.finish('cancelled');
      return;
    }
    const ac = new AbortController();
    const onAbort = () => ac.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    let timedOut = false;
    // One timer per generation, re-armed (refresh) at each chunk: `timeout_ms` of silence ends it.
    const timer = setTimeout(() => {
      timedOut = true;
      ac.abort(new Error('upstream timeout'));
    }, this.settings.timeout_ms);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'text/event-stream, application/json',
    };
    if (this.apiKey) headers.authorization = `Bearer ${this.apiKey}`;
    // The answer's body, until it has been read to its end (then nothing is left to release).
    let open: Dispatcher.ResponseData['body'] | null = null;
    // The body's iterator (an SSE answer), to read its end after [DONE].
    let rest: AsyncIterator<Uint8Array> | null = null;
    try {
      let res: Dispatcher.ResponseData;
      try {
        // undici's request() on the engine's pooled Agent: no WHATWG fetch machinery (Request/Response
        // objects, a web stream per body) per call; redirects are not followed (an upstream that
        // redirects a POST is misconfigured: its 3xx is answered like any other refusal).
        res = await this.agent.request({
          origin: this.origin,
          path: `${this.path}/${raw ? 'completions' : 'chat/completions'}`,
          method: 'POST',
          headers,
          body: JSON.stringify(body),
          signal: ac.signal,
        });
      } catch (e) {
        throw this.networkError(e, timedOut, signal);
      }
      open = res.body;
      if (res.statusCode < 200 || res.statusCode > 299) throw await this.httpError(res.statusCode, res.body);
      const ct = res.headers['content-type'];
      const type = (Array.isArray(ct) ? ct[0] : ct) ?? '';
      try {
        if (type.includes('text/event-stream')) {
          // Read through an iterable without return(): leaving the loop at [DONE] does not destroy the
          // body, whose end (normally right behind [DONE]) is then drained so the connection is reused.
          const chunks = res.body[Symbol.asyncIterator]();
          rest = chunks;
          for await (const data of sseData({
            [Symbol.asyncIterator]: () => ({ next: () => chunks.next() }),
          })) {
            timer.refresh();
            if (data === '[DONE]') {
              run.done = true;
              break;
            }
            const chunk = parseJson(data);
            if (!chunk) continue;
            if (chunk.error) throw this.streamError(chunk.error);
            yield* run.chunk(chunk);
          }
        } else {
          const whole = parseJson(await res.body.text());
          if (!whole) throw ApiError.internal("The model's upstream server sent an answer we cannot read.");
          if (whole.error) throw this.streamError(whole.error);
          yield* run.whole(whole);
        }
        // After [DONE] the body's end is normally already here: read it (at most 200 ms) so the
        // connection goes back to the pool before the next request wants one.
        if (run.done && rest && !res.body.readableEnded) await drainRest(rest, res.body, 200);
        if (res.body.readableEnded) open = null;
      } catch (e) {
        throw this.networkError(e, timedOut, signal);
      }
      if (!run.done && !run.finishReason) {
        throw ApiError.internal("The model's upstream server ended the answer before it was finished.");
      }
      yield* run.flush();
      yield run.finish(run.reason());
    } catch (e) {
      if (signal.aborted) {
        yield* run.flush();
        yield run.finish('cancelled');
        return;
      }
      throw e;
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      // A body that ended needs nothing: a complete answer builds no abort reason (no DOMException). A
      // body left before its end (the consumer stopped early, an error, a server that kept it open after
      // [DONE]) is destroyed, which closes its connection.
      if (open && !open.destroyed && !open.readableEnded) open.destroy();
    }
  }

  private common(input: EngineInput): Record<string, unknown> {
    const b: Record<string, unknown> = {
      model: this.settings.model ?? this.modelId,
      stream: true,
      stream_options: { include_usage: true },
      temperature: input.sampling.temperature,
      top_p: input.sampling.top_p,
    };
    if (input.max_tokens != null) b.max_tokens = input.max_tokens;
    if (input.stop.length) b.stop = input.stop;
    if (input.sampling.seed != null) b.seed = input.sampling.seed + input.choice;
    if (input.sampling.presence_penalty != null) b.presence_penalty = input.sampling.presence_penalty;
    if (input.sampling.frequency_penalty != null) b.frequency_penalty = input.sampling.frequency_penalty;
    return b;
  }

  private completionBody(input: EngineInput): Record<string, unknown> {
    return { ...this.common(input), prompt: input.prompt };
  }

  private chatBody(input: EngineInput): Record<string, unknown> {
    const b = this.common(input);
    b.messages = input.messages.map(toUpstreamMessage);
    if (input.tools.length) {
      b.tools = input.tools;
      b.tool_choice = input.tool_choice;
      b.parallel_tool_calls = input.parallel_tool_calls;
    }
    if (input.response_format) b.response_format = input.response_format;
    if (this.reasoningMode === 'effort' && input.reasoning?.effort) {
      b.reasoning_effort = input.reasoning.effort;
    } else if (this.reasoningMode === 'default_on' || this.reasoningMode === 'default_off') {
      b.chat_template_kwargs = { enable_thinking: input.reasoning !== null };
    }
    return b;
  }

  private networkError(e: unknown, timedOut: boolean, signal: AbortSignal): unknown {
    if (e instanceof ApiError || signal.aborted) return e;
    if (timedOut) {
      this.log.warn({ timeout_ms: this.settings.timeout_ms }, 'upstream timed out');
      return ApiError.internal("The model's upstream server did not answer in time.");
    }
    // undici's request() puts the system error's code on the error itself (fetch: on its cause).
    const err = e as { code?: string; cause?: { code?: string } };
    const code = err?.code ?? err?.cause?.code;
    this.log.warn({ err: e, code }, 'upstream unreachable');
    if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
      return ApiError.internal("The model's upstream server could not be reached.");
    }
    return ApiError.internal("The connection to the model's upstream server failed.");
  }

  private async httpError(status: number, body: Dispatcher.ResponseData['body']): Promise<ApiError> {
    const text = await body.text().catch(() => '');
    const { message, param } = upstreamMessage(text);
    if (status === 408 || status === 429) {
      this.log.warn({ status }, 'upstream busy');
      return new ApiError(503, "The model's upstream server is busy; retry later.", {
        type: 'server_error',
        code: 'service_unavailable',
      });
    }
    if (status === 401 || status === 403 || status === 404 || status >= 500 || status < 400) {
      this.log.error({ status, upstream: message?.slice(0, 300) }, 'upstream error');
      return ApiError.internal(
        status >= 500
          ? "The model's upstream server had an error."
          : "The model's upstream server refused the request (service configuration).",
      );
    }
    return ApiError.invalid(
      message ? clip(message) : `The model's upstream server refused the request (HTTP ${status}).`,
      param,
    );
  }

  private streamError(err: unknown): ApiError {
    const { message } = upstreamMessage(JSON.stringify({ error: err }));
    this.log.error({ upstream: message?.slice(0, 300) }, 'upstream failed mid-answer');
    return ApiError.internal("The model's upstream server failed while answering.");
  }
}

/** Reads what is left of a body after [DONE] (normally only its end); destroys it after `ms`. */
async function drainRest(
  rest: AsyncIterator<Uint8Array>,
  body: { destroy(): void },
  ms: number,
): Promise<void> {
  const guard = setTimeout(() => body.destroy(), ms);
  try {
    while (!(await rest.next()).done) {
      // bytes after [DONE] are ignored
    }
  } catch {
    // destroyed by the guard, or the server reset the connection: nothing to do
  } finally {
    clearTimeout(guard);
  }
}

/** One generation: turns upstream chunks into engine deltas and keeps what usage needs. */
class Run {
  done = false;
  finishReason: string | null = null;
  private usage: { prompt_tokens?: number; completion_tokens?: number; reasoning_tokens?: number } | null =
    null;
  private parser: OutputParser | null = null;
  private upstreamReasoning = false;
  private readonly callIndex = new Map<number, number>();
  private nextCall = 0;
  private text = '';
  private reasoning = '';
  private callText = '';

  constructor(
    private readonly input: EngineInput,
    private readonly settings: OpenAIUpstreamSettings,
    private readonly raw: boolean,
  ) {}

  private getParser(): OutputParser {
    if (!this.parser) {
      const offered = this.input.tools.length > 0 && this.input.tool_choice !== 'none';
      const rp = this.raw ? 'none' : this.settings.reasoning_parser;
      this.parser = new OutputParser({
        think: rp !== 'none' && !this.upstreamReasoning,
        startInThink: rp === 'think_tags_open' && this.input.reasoning !== null && !this.upstreamReasoning,
        tools: offered && this.settings.tool_call_parser !== 'none' ? this.settings.tool_call_parser : null,
      });
    }
    return this.parser;
  }

  *chunk(c: UpstreamChunk): Generator<EngineDelta> {
    if (c.usage) this.takeUsage(c.usage);
    const choice = c.choices?.[0];
    if (!choice) return;
    if (this.raw) {
      if (typeof choice.text === 'string' && choice.text) yield* this.content(choice.text);
    } else {
      const d = choice.delta ?? choice.message ?? {};
      const rc = d.reasoning_content ?? d.reasoning;
      if (typeof rc === 'string' && rc) {
        this.upstreamReasoning = true;
        this.reasoning += rc;
        yield { type: 'reasoning', text: rc };
      }
      if (typeof d.content === 'string' && d.content) yield* this.content(d.content);
      if (Array.isArray(d.tool_calls)) {
        for (const [pos, tc] of d.tool_calls.entries()) yield* this.nativeCall(tc, pos);
      }
    }
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
  }

  /** A non-streamed answer (a server that ignored `stream: true`). */
  *whole(c: UpstreamChunk): Generator<EngineDelta> {
    this.done = true;
    yield* this.chunk(c);
  }

  private *content(text: string): Generator<EngineDelta> {
    for (const p of this.getParser().push(text)) yield this.piece(p);
  }

  *flush(): Generator<EngineDelta> {
    if (!this.parser) return;
    for (const p of this.parser.end()) yield this.piece(p);
  }

  private piece(p: ParsedPiece): EngineDelta {
    switch (p.type) {
      case 'content':
        this.text += p.text;
        return { type: 'content', text: p.text };
      case 'reasoning':
        this.reasoning += p.text;
        return { type: 'reasoning', text: p.text };
      case 'tool_call':
        this.callText += p.name + p.arguments;
        return { type: 'tool_call', index: this.nextCall++, name: p.name, arguments: p.arguments };
    }
  }

  private *nativeCall(tc: UpstreamToolCallDelta, pos: number): Generator<EngineDelta> {
    const key = typeof tc.index === 'number' ? tc.index : pos;
    let index = this.callIndex.get(key);
    const first = index === undefined;
    if (index === undefined) {
      index = this.nextCall++;
      this.callIndex.set(key, index);
    }
    const name = first ? (tc.function?.name ?? '') : undefined;
    const args = tc.function?.arguments;
    if (typeof args === 'string') this.callText += args;
    if (name) this.callText += name;
    const d: EngineDelta = { type: 'tool_call', index };
    if (first && typeof tc.id === 'string' && tc.id) d.id = tc.id;
    if (name !== undefined) d.name = name;
    if (typeof args === 'string') d.arguments = args;
    else if (args && typeof args === 'object') d.arguments = JSON.stringify(args); // Ollama sends objects
    if (first || d.arguments) yield d;
  }

  private takeUsage(u: UpstreamUsage): void {
    this.usage = {
      prompt_tokens: num(u.prompt_tokens),
      completion_tokens: num(u.completion_tokens),
      reasoning_tokens: num(u.completion_tokens_details?.reasoning_tokens),
    };
  }

  reason(): EngineFinishReason {
    const r = this.finishReason;
    if (r === 'length') return 'length';
    if (r === 'tool_calls' || r === 'function_call' || (this.nextCall > 0 && r !== 'length')) {
      return this.raw ? 'stop' : 'tool_calls';
    }
    return 'stop';
  }

  finish(reason: EngineFinishReason): EngineDelta {
    const u = this.usage;
    const estimateCompletion = () =>
      countTokens(this.reasoning) + countTokens(this.text) + countTokens(this.callText);
    const prompt =
      u?.prompt_tokens ??
      (this.raw
        ? countTokens(this.input.prompt ?? '')
        : countPromptTokens(this.input.messages, this.input.tools));
    const completion = u?.completion_tokens ?? estimateCompletion();
    const usage: EngineUsage = {
      prompt_tokens: prompt,
      completion_tokens: completion,
      reasoning_tokens: Math.min(completion, u?.reasoning_tokens ?? countTokens(this.reasoning)),
    };
    return { type: 'finish', reason, usage };
  }
}

interface UpstreamToolCallDelta {
  index?: number;
  id?: string;
  function?: { name?: string; arguments?: unknown };
}
interface UpstreamUsage {
  prompt_tokens?: unknown;
  completion_tokens?: unknown;
  completion_tokens_details?: { reasoning_tokens?: unknown } | null;
}
interface UpstreamChunk {
  error?: unknown;
  usage?: UpstreamUsage | null;
  choices?: Array<{
    text?: unknown;
    delta?: UpstreamDelta;
    message?: UpstreamDelta;
    finish_reason?: string | null;
  }>;
}
interface UpstreamDelta {
  content?: unknown;
  reasoning_content?: unknown;
  reasoning?: unknown;
  tool_calls?: UpstreamToolCallDelta[];
}

const num = (v: unknown): number | undefined =>
  typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.round(v) : undefined;

function parseJson(text: string): UpstreamChunk | null {
  try {
    const v = JSON.parse(text);
    return v && typeof v === 'object' ? (v as UpstreamChunk) : null;
  } catch {
    return null;
  }
}

const clip = (s: string) => (s.length > MAX_UPSTREAM_MESSAGE ? `${s.slice(0, MAX_UPSTREAM_MESSAGE)}...` : s);

/** The message (and param) of an upstream error body, whatever dialect: OpenAI, vLLM, TGI, Ollama. */
export function upstreamMessage(text: string): { message: string | null; param: string | null } {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    const t = text.trim();
    return { message: t && t.length < 2000 && !t.startsWith('<') ? t : null, param: null };
  }
  const o = (v && typeof v === 'object' ? v : {}) as Record<string, unknown>;
  const inner = o.error && typeof o.error === 'object' ? (o.error as Record<string, unknown>) : o;
  const pick = (x: unknown) => (typeof x === 'string' && x ? x : null);
  let message = pick(inner.message) ?? pick(o.error) ?? pick(o.detail) ?? pick(o.message);
  if (!message && Array.isArray(o.detail)) {
    // FastAPI validation errors: [{loc, msg}]
    message = o.detail
      .map((d) => (d && typeof d === 'object' ? pick((d as Record<string, unknown>).msg) : null))
      .filter(Boolean)
      .join('; ');
  }
  const param = pick(inner.param);
  return { message: message || null, param: param && /^[A-Za-z0-9_.[\]]{1,100}$/.test(param) ? param : null };
}

/** Engine messages in the OpenAI wire format (reasoning traces of earlier turns are not sent back). */
function toUpstreamMessage(m: EngineMessage): Record<string, unknown> {
  switch (m.role) {
    case 'system':
      return m.name
        ? { role: 'system', content: m.content, name: m.name }
        : { role: 'system', content: m.content };
    case 'user': {
      const content = typeof m.content === 'string' ? m.content : m.content.map(toUpstreamPart);
      return m.name ? { role: 'user', content, name: m.name } : { role: 'user', content };
    }
    case 'assistant': {
      const out: Record<string, unknown> = { role: 'assistant', content: m.content };
      if (m.tool_calls?.length) out.tool_calls = m.tool_calls;
      // An earlier turn's own reasoning (replayed or opened from encrypted_content): vLLM and SGLang
      // chat templates with interleaved thinking read it; servers that do not, ignore the field.
      if (m.reasoning_content) out.reasoning_content = m.reasoning_content;
      if (m.name) out.name = m.name;
      return out;
    }
    case 'tool':
      return { role: 'tool', content: m.content, tool_call_id: m.tool_call_id };
  }
}

function toUpstreamPart(p: ContentPart): Record<string, unknown> {
  switch (p.type) {
    case 'text':
      return { type: 'text', text: p.text };
    case 'image_url':
      return { type: 'image_url', image_url: p.image_url };
    case 'input_audio':
      return { type: 'input_audio', input_audio: p.input_audio };
  }
}

export const openaiUpstreamEngineFactory: EngineFactory = {
  type: 'openai',
  create(settings, { model, log, env }) {
    const s = parseEngineSettings(OpenAIUpstreamEngineSchema, settings, model);
    let key: string | undefined;
    if (s.api_key_env) {
      key = (env ?? process.env)[s.api_key_env];
      if (!key) {
        throw ApiError.internal(
          `Model '${model.id}': the environment variable ${s.api_key_env} (api_key_env) is not set in the chat service.`,
        );
      }
    }
    log.info(
      { base_url: s.base_url, upstream_model: s.model ?? model.id, timeout_ms: s.timeout_ms },
      'openai upstream engine ready',
    );
    return new OpenAIUpstreamEngine(s, model.id, model.capabilities.reasoning, key, log);
  },
};
