import { ApiError, type ContentPart, OpenAIUpstreamEngineSchema, type ReasoningMode } from '@infer/contracts';
import {
  chatAffinityKey,
  coldChars,
  type Endpoint,
  EndpointFailure,
  EnginePool,
  errorText,
  exhausted,
  type Lease,
  type Outcome,
  type PoolOptions,
  RETRYABLE,
  type RouteRequest,
  statusOutcome,
  textAffinityKey,
  vllmPriority,
} from '@infer/engine-pool';
import { parseEngineSettings } from '@infer/runtime';
import { type Logger } from '@infer/telemetry';
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
  /** One undici Agent for every endpoint of the pool (it keeps a connection pool per origin). */
  private readonly agent: Agent;
  /** The model's endpoints, routing, health and wait queue (libs/engine-pool). */
  readonly pool: EnginePool;

  constructor(
    readonly settings: OpenAIUpstreamSettings,
    private readonly modelId: string,
    private readonly reasoningMode: ReasoningMode,
    private readonly apiKey: string | undefined,
    private readonly log: Logger,
    poolOptions: Partial<PoolOptions> = {},
  ) {
    // vLLM serves its Prometheus metrics on its API port: the pool reads the prefix-cache hit
    // rate there unless the catalog sets `metrics_path`.
    this.pool = new EnginePool(settings, {
      model: modelId,
      log,
      defaultMetricsPath: '/metrics',
      ...poolOptions,
    });
    this.agent = new Agent({
      connect: { timeout: Math.min(settings.timeout_ms, 10_000) },
      headersTimeout: 0,
      bodyTimeout: 0,
      keepAliveTimeout: 30_000,
    });
  }

  async close(): Promise<void> {
    await this.pool.close();
    await this.agent.close();
  }

  /**
   * One choice through the pool. Before the first delta reaches the caller, an endpoint that fails
   * (connect error, 5xx, 408/429, timeout, a stream that breaks) is left for another, up to `retries`
   * times within the request's deadline. After it, a break ends the choice with the error, unless the
   * model has `resume: true`: then the answer continues on another endpoint from the text so far (sent
   * as an assistant prefix with vLLM's `continue_final_message`), and the caller sees one stream.
   */
  async *generate(input: EngineInput, signal: AbortSignal): AsyncGenerator<EngineDelta> {
    const raw = input.prompt !== undefined;
    const body = raw ? this.completionBody(input) : this.chatBody(input);
    const run = new Run(input, this.settings, raw);
    if (signal.aborted) {
      yield run.finish('cancelled');
      return;
    }
    const pool = this.pool;
    const route: RouteRequest = {
      key:
        pool.routing === 'prefix_affinity'
          ? raw
            ? textAffinityKey(input.prompt ?? '')
            : chatAffinityKey(input.messages, input.tools)
          : undefined,
      cls: input.route?.cls,
      member: input.route?.member,
      deadline: input.route?.deadline,
      signal,
      exclude: null,
      cold: pool.routing === 'prefix_affinity' && !raw ? coldChars(input.messages) : undefined,
    };
    if (pool.tierPriority) body.priority = vllmPriority(input.route?.cls);
    let tried: Set<Endpoint> | null = null;
    let retriesLeft = pool.retries;
    let resumed = 0;
    for (;;) {
      let lease: Lease;
      try {
        lease = await pool.acquire(route);
      } catch (e) {
        if (signal.aborted) {
          yield* run.flush();
          yield run.finish('cancelled');
          return;
        }
        throw run.lastFailure ? exhausted(run.lastFailure) : e;
      }
      const before = run.sent;
      let outcome: Outcome = 'ok';
      try {
        yield* this.attempt(lease, raw, body, run, signal);
        return;
      } catch (e) {
        if (signal.aborted) {
          outcome = 'aborted';
          yield* run.flush();
          yield run.finish('cancelled');
          return;
        }
        if (!(e instanceof EndpointFailure)) {
          outcome = 'client_error';
          throw e;
        }
        outcome = e.outcome;
        run.lastFailure = e.error;
        const inTime = input.route?.deadline === undefined || Date.now() < input.route.deadline;
        if (run.sent === 0 && before === 0) {
          // Nothing reached the caller yet: another endpoint may answer the whole request.
          if (!RETRYABLE[e.outcome] || retriesLeft-- <= 0 || !inTime) throw exhausted(e.error);
          pool.countRetry('before_first_byte');
        } else {
          if (!pool.resume || !run.resumable() || resumed >= pool.retries || !inTime) throw e.error;
          resumed++;
          pool.countRetry('resume');
          this.log.warn(
            { endpoint: lease.endpoint.url, sent: run.sent },
            'upstream stream broke; resuming elsewhere',
          );
          run.resumeBody(body, raw);
        }
        tried ??= new Set();
        tried.add(lease.endpoint);
        route.exclude = tried;
      } finally {
        lease.release(outcome, outcome === 'ok' ? undefined : errorText(run.lastFailure));
      }
    }
  }

  /**
   * One request to one endpoint, its deltas yielded as they come. Endpoint faults are thrown as
   * EndpointFailure (with the error the client gets if nothing else answers); faults of the request
   * (an upstream 4xx about it) as ApiError.
   */
  private async *attempt(
    lease: Lease,
    raw: boolean,
    body: Record<string, unknown>,
    run: Run,
    signal: AbortSignal,
  ): AsyncGenerator<EngineDelta> {
    const ac = new AbortController();
    const onAbort = () => ac.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    let timedOut = false;
    // One timer per attempt, re-armed (refresh) at each chunk: `timeout_ms` of silence ends it.
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
          origin: lease.endpoint.origin,
          path: `${lease.endpoint.path}/${raw ? 'completions' : 'chat/completions'}`,
          method: 'POST',
          headers,
          body: JSON.stringify(body),
          signal: ac.signal,
        });
      } catch (e) {
        throw this.networkError(e, timedOut, signal, 'connect');
      }
      open = res.body;
      if (res.statusCode < 200 || res.statusCode > 299) {
        const err = await this.httpError(res.statusCode, res.body);
        const outcome = statusOutcome(res.statusCode);
        throw outcome === 'client_error' ? err : new EndpointFailure(outcome, err);
      }
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
            lease.started();
            const chunk = parseJson(data);
            if (!chunk) continue;
            if (chunk.error) throw new EndpointFailure('broken', this.streamError(chunk.error));
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
        throw this.networkError(e, timedOut, signal, 'broken');
      }
      if (!run.done && !run.finishReason) {
        throw new EndpointFailure(
          'broken',
          ApiError.internal("The model's upstream server ended the answer before it was finished."),
        );
      }
      yield* run.flush();
      yield run.finish(run.reason());
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
    if (input.sampling.top_k) b.top_k = input.sampling.top_k;
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

  private networkError(
    e: unknown,
    timedOut: boolean,
    signal: AbortSignal,
    during: 'connect' | 'broken',
  ): unknown {
    if (e instanceof ApiError || e instanceof EndpointFailure || signal.aborted) return e;
    if (timedOut) {
      this.log.warn({ timeout_ms: this.settings.timeout_ms }, 'upstream timed out');
      return new EndpointFailure(
        'timeout',
        ApiError.internal("The model's upstream server did not answer in time."),
      );
    }
    // undici's request() puts the system error's code on the error itself (fetch: on its cause).
    const err = e as { code?: string; cause?: { code?: string } };
    const code = err?.code ?? err?.cause?.code;
    this.log.warn({ err: e, code }, 'upstream unreachable');
    if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
      return new EndpointFailure(
        'connect',
        ApiError.internal("The model's upstream server could not be reached."),
      );
    }
    return new EndpointFailure(
      during,
      ApiError.internal("The connection to the model's upstream server failed."),
    );
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
  /** The request's stop string the upstream reported as the end (see matchedStop). */
  stopSequence: string | null = null;
  private usage: { prompt_tokens?: number; completion_tokens?: number; reasoning_tokens?: number } | null =
    null;
  private parser: OutputParser | null = null;
  private upstreamReasoning = false;
  private readonly callIndex = new Map<number, number>();
  /** Deltas handed to the caller (0: the request can still go elsewhere as a whole). */
  sent = 0;
  /** The error of the last endpoint that failed (thrown when no other one is left). */
  lastFailure: unknown = null;
  /** Upstream text of the answer so far, as the model wrote it (the prefix a resumed stream continues). */
  private rawContent = '';
  /** Completion tokens of the attempts before a resume (their upstream usage never arrived). */
  private priorCompletion = 0;
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
      if (typeof choice.text === 'string' && choice.text) {
        this.rawContent += choice.text;
        yield* this.content(choice.text);
      }
    } else {
      const d = choice.delta ?? choice.message ?? {};
      const rc = d.reasoning_content ?? d.reasoning;
      if (typeof rc === 'string' && rc) {
        this.upstreamReasoning = true;
        this.reasoning += rc;
        this.sent++;
        yield { type: 'reasoning', text: rc };
      }
      if (typeof d.content === 'string' && d.content) {
        this.rawContent += d.content;
        yield* this.content(d.content);
      }
      if (Array.isArray(d.tool_calls)) {
        for (const [pos, tc] of d.tool_calls.entries()) yield* this.nativeCall(tc, pos);
      }
    }
    if (choice.finish_reason) {
      this.finishReason = choice.finish_reason;
      this.stopSequence = this.matchedStop(choice.stop_reason ?? choice.matched_stop);
    }
  }

  /**
   * The stop string that ended the answer, as the upstream names it: vLLM's `stop_reason` and
   * SGLang's `matched_stop` hold the matched string (or a stop token's id, a number: not a sequence of
   * the request). Only one of the request's own stop strings counts.
   */
  private matchedStop(v: unknown): string | null {
    return typeof v === 'string' && this.input.stop.includes(v) ? v : null;
  }

  /** A non-streamed answer (a server that ignored `stream: true`). */
  *whole(c: UpstreamChunk): Generator<EngineDelta> {
    this.done = true;
    yield* this.chunk(c);
  }

  private *content(text: string): Generator<EngineDelta> {
    for (const p of this.getParser().push(text)) {
      this.sent++;
      yield this.piece(p);
    }
  }

  /**
   * Whether a broken stream can continue elsewhere: only plain text so far (a reasoning trace sent in
   * its own field or a tool call cannot be handed to the next endpoint as an assistant prefix).
   */
  resumable(): boolean {
    return this.nextCall === 0 && !this.upstreamReasoning && !this.done;
  }

  /**
   * Turns `body` into the continuation of the answer so far: chat gets the text as a final assistant
   * message that vLLM continues (`continue_final_message`, no new generation prompt), a raw prompt gets
   * it appended; the output cap shrinks by what was produced.
   */
  resumeBody(body: Record<string, unknown>, raw: boolean): void {
    const sofar = this.rawContent;
    const produced = countTokens(sofar);
    this.priorCompletion = produced;
    this.usage = null;
    this.finishReason = null;
    this.stopSequence = null;
    if (raw) {
      body.prompt = (this.input.prompt ?? '') + sofar;
    } else {
      const base = this.input.messages.map(toUpstreamMessage);
      body.messages = [...base, { role: 'assistant', content: sofar }];
      body.continue_final_message = true;
      body.add_generation_prompt = false;
    }
    if (this.input.max_tokens != null) body.max_tokens = Math.max(1, this.input.max_tokens - produced);
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
    if (first || d.arguments) {
      this.sent++;
      yield d;
    }
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
      (u?.prompt_tokens !== undefined ? Math.max(0, u.prompt_tokens - this.priorCompletion) : undefined) ??
      (this.raw
        ? countTokens(this.input.prompt ?? '')
        : countPromptTokens(this.input.messages, this.input.tools));
    // After a resume the upstream counted the earlier text as prompt: it is completion, ours.
    const completion =
      u?.completion_tokens !== undefined ? u.completion_tokens + this.priorCompletion : estimateCompletion();
    const usage: EngineUsage = {
      prompt_tokens: prompt,
      completion_tokens: completion,
      reasoning_tokens: Math.min(completion, u?.reasoning_tokens ?? countTokens(this.reasoning)),
    };
    return reason === 'stop' && this.stopSequence !== null
      ? { type: 'finish', reason, usage, stop_sequence: this.stopSequence }
      : { type: 'finish', reason, usage };
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
    /** vLLM: the matched stop string (or stop token id); SGLang calls it `matched_stop`. */
    stop_reason?: unknown;
    matched_stop?: unknown;
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
      {
        endpoints: s.discovery ? `dns:${s.discovery.dns}` : (s.endpoints?.map((e) => e.url) ?? [s.base_url]),
        routing: s.routing,
        upstream_model: s.model ?? model.id,
        timeout_ms: s.timeout_ms,
      },
      'openai upstream engine ready',
    );
    return new OpenAIUpstreamEngine(s, model.id, model.capabilities.reasoning, key, log);
  },
};
