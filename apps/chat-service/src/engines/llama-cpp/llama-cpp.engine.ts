import { availableParallelism } from 'node:os';
import { ApiError, type CatalogEntry, LlamaCppEngineSchema, type Tool } from '@infer/contracts';
import { parseEngineSettings } from '@infer/runtime';
import { type Logger } from '@infer/telemetry';
import {
  getLlama,
  type Llama,
  type LlamaContext,
  type LlamaContextSequence,
  type LlamaGrammar,
  LlamaGrammarEvaluationState,
  LlamaLogLevel,
  type LlamaModel,
  type Token,
} from 'node-llama-cpp';
import type { z } from 'zod';
import { jsonGrammar, toolCallGrammar } from '../../structured/json-grammar.js';
import { checkJson } from '../../structured/json-schema.js';
import type {
  ChatEngine,
  EngineDelta,
  EngineFinishReason,
  EngineInput,
  EngineMeasure,
  EngineUsage,
} from '../engine.js';
import { OutputParser, type ParsedPiece } from '../output-parser.js';
import type { EngineFactory } from '../registry.js';
import { StopSequenceFilter } from '../stop-sequences.js';
import { CHATML_TEMPLATE, ChatTemplate } from './chat-template.js';

export type LlamaCppSettings = z.output<typeof LlamaCppEngineSchema>;

const THINK_OPEN = '<think>\n';
const THINK_CLOSE = '\n</think>\n\n';
const EFFORT_SCALE = { low: 0.25, medium: 1, high: 4 } as const;
/** A function declared without `parameters` takes none (as in the OpenAI API). */
const NO_PARAMETERS = { type: 'object', properties: {}, additionalProperties: false };

let sharedLlama: Promise<Llama> | null = null;
/** One llama.cpp runtime per process, CPU only, never built or downloaded at run time. */
function llamaRuntime(): Promise<Llama> {
  sharedLlama ??= getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error }).catch((e) => {
    sharedLlama = null;
    throw e;
  });
  return sharedLlama;
}

interface Loaded {
  llama: Llama;
  model: LlamaModel;
  context: LlamaContext;
  template: ChatTemplate;
  contextSize: number;
  pool: SequencePool;
}

/**
 * EMBEDDED llama.cpp ENGINE (node-llama-cpp, CPU): runs a GGUF model in the chat service's process.
 *
 * - Loading: on first use (the model file is named by the catalog's `gguf`), one context with
 *   `parallel` sequences; `threads` default min(2, cores) and never more than the cores (more threads
 *   than cores make llama.cpp crawl, docs/platform-notes.md). `context_size` default min(catalog context_window,
 *   the model's training context, 8192).
 * - Prompt: the model's own Jinja chat template (or `chat_template`), `enable_thinking` set from the
 *   request's reasoning decision; legacy completions tokenize the raw prompt. A sequence keeps the
 *   previous request's tokens, so a conversation that grows reuses its evaluated prefix.
 * - Sampling: temperature, top_p, top_k (0 = off), seed (+ choice index); `max_tokens` caps every sampled
 *   token (reasoning included) and defaults to what the context has left; stop sequences cut the
 *   answer; an end-of-generation token ends it.
 * - Reasoning: when the request reasons the answer starts inside `<think>` (opened by the template or
 *   by the engine); after `reasoning_budget` reasoning tokens (x0.25 / x1 / x4 for reasoning_effort
 *   low / medium / high) the engine closes the block itself (budget forcing) and the answer follows.
 * - Structured output and forced tools: `response_format` json_object / json_schema, and tool_choice
 *   `required` or a named function, are enforced by a GBNF grammar (structured/json-grammar.ts) on the
 *   answer (after the reasoning). The result is then checked against the schema (and each call's
 *   arguments against the tool's parameters); a miss is sampled again (`structured_retries`), then it
 *   is a 500. Constrained answers therefore arrive in one piece once checked; reasoning still streams.
 *   An answer cut by max_tokens is returned as it is with finish_reason `length`.
 * - Tool calls in `auto` mode are parsed from the text (`tool_call_format`).
 * - Usage: exact token counts: the prompt's tokens, and the sampled tokens of the returned answer
 *   (tokens the engine injects, like a forced `</think>`, and discarded retries are not billed).
 * - Abort: generation stops before the next token; the usage so far is reported.
 * - No image or audio input (node-llama-cpp has no multimodal support): such parts are a 400.
 */
export class LlamaCppEngine implements ChatEngine {
  readonly type = 'llama-cpp';
  readonly media = { images: false, audio: false };
  private loading: Promise<Loaded> | null = null;
  private closed = false;
  readonly threads: number;

  constructor(
    readonly settings: LlamaCppSettings,
    private readonly entry: Pick<CatalogEntry, 'id' | 'context_window'>,
    private readonly log: Logger,
  ) {
    const cores = Math.max(1, availableParallelism());
    const wanted = settings.threads ?? Math.min(2, cores);
    if (wanted > cores) {
      log.warn({ threads: wanted, cores }, 'llama-cpp threads capped at the number of cores');
    }
    this.threads = Math.min(wanted, cores);
  }

  /** Loads the model (once; a failed load is retried by the next request). */
  load(): Promise<Loaded> {
    if (this.closed) return Promise.reject(ApiError.internal('The model engine is shutting down.'));
    this.loading ??= this.doLoad().catch((e: unknown) => {
      this.loading = null;
      this.log.error({ err: e, gguf: this.settings.gguf }, 'llama-cpp model failed to load');
      throw ApiError.internal(`The model '${this.entry.id}' could not be loaded by the embedded engine.`);
    });
    return this.loading;
  }

  private async doLoad(): Promise<Loaded> {
    const t0 = performance.now();
    const llama = await llamaRuntime();
    const model = await llama.loadModel({ modelPath: this.settings.gguf, gpuLayers: 0 });
    try {
      const wanted =
        this.settings.context_size ??
        Math.min(this.entry.context_window ?? Number.POSITIVE_INFINITY, model.trainContextSize || 8192, 8192);
      const context = await model.createContext({
        contextSize: wanted,
        sequences: this.settings.parallel,
        threads: this.threads,
      });
      const sequences = Array.from({ length: this.settings.parallel }, () => context.getSequence());
      const source =
        this.settings.chat_template ?? model.fileInfo.metadata.tokenizer?.chat_template ?? CHATML_TEMPLATE;
      const tokenText = (t: Token | null) => (t == null ? '' : model.detokenize([t], true));
      const template = new ChatTemplate(
        String(source),
        tokenText(model.tokens.bos),
        tokenText(model.tokens.eos),
      );
      const contextSize = sequences[0]?.contextSize ?? context.contextSize;
      this.log.info(
        {
          gguf: this.settings.gguf,
          ms: Math.round(performance.now() - t0),
          context_size: contextSize,
          parallel: this.settings.parallel,
          threads: this.threads,
        },
        'llama-cpp model loaded',
      );
      return { llama, model, context, template, contextSize, pool: new SequencePool(sequences) };
    } catch (e) {
      await model.dispose().catch(() => undefined);
      throw e;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const l = await this.loading?.catch(() => null);
    this.loading = null;
    if (!l) return;
    l.pool.close();
    await l.context.dispose().catch(() => undefined);
    await l.model.dispose().catch(() => undefined);
  }

  async measure(input: EngineInput): Promise<EngineMeasure> {
    const l = await this.load();
    return { prompt_tokens: this.prompt(l, input).tokens.length, context_tokens: l.contextSize };
  }

  /** The prompt's tokens, and whether the answer starts inside the reasoning block. */
  private prompt(l: Loaded, input: EngineInput): { tokens: Token[]; inThink: boolean } {
    const { model } = l;
    let tokens: Token[];
    let inThink = false;
    if (input.prompt !== undefined) {
      tokens = model.tokenize(input.prompt, false);
    } else {
      let text: string;
      try {
        text = l.template.render({
          messages: input.messages,
          tools: input.tools.length && input.tool_choice !== 'none' ? input.tools : [],
          thinking: input.reasoning !== null,
          effort: input.reasoning?.effort ?? null,
        });
      } catch (e) {
        // The template was parsed at load time: what fails now is the template refusing these
        // messages (`raise_exception`, e.g. roles that do not alternate), a client matter.
        this.log.debug({ err: e }, 'chat template refused the messages');
        throw ApiError.invalid(
          `The model's chat template refused the messages: ${(e as Error).message}`.slice(0, 500),
          'messages',
        );
      }
      if (input.reasoning) {
        inThink = true;
        if (!/<think>\s*$/.test(text)) text += THINK_OPEN;
      }
      tokens = model.tokenize(text, true);
    }
    const bos = model.tokens.bos;
    if (bos != null && model.tokens.shouldPrependBosToken && tokens[0] !== bos) tokens = [bos, ...tokens];
    return { tokens, inThink };
  }

  async *generate(input: EngineInput, signal: AbortSignal): AsyncGenerator<EngineDelta> {
    const l = await this.load();
    const { tokens, inThink } = this.prompt(l, input);
    const usage: EngineUsage = { prompt_tokens: tokens.length, completion_tokens: 0, reasoning_tokens: 0 };
    const room = l.contextSize - tokens.length;
    if (room < 1) {
      throw ApiError.invalid(
        `This model's maximum context length is ${l.contextSize} tokens. However, your messages resulted in ${tokens.length} tokens.`,
        input.prompt !== undefined ? 'prompt' : 'messages',
      );
    }
    const maxTokens = Math.min(input.max_tokens ?? room, room);
    const seq = await l.pool.acquire(signal);
    if (!seq) {
      yield { type: 'finish', reason: 'cancelled', usage };
      return;
    }
    try {
      yield* new Generation(this, l, seq, input, tokens, inThink, maxTokens, usage, signal).run();
    } finally {
      l.pool.release(seq);
    }
  }
}

/** What a constrained answer must satisfy, and the grammar that shapes it. */
interface Constraint {
  grammar: LlamaGrammar;
  kind: 'json' | 'tools';
  schema: Record<string, unknown> | null;
  tools: Tool[];
}

/** One generation on one sequence. */
class Generation {
  private readonly model: LlamaModel;
  private produced = 0;
  private history: Token[];
  private answerStart = -1;
  private readonly budget: number;
  private grammarState: LlamaGrammarEvaluationState | undefined;

  constructor(
    private readonly engine: LlamaCppEngine,
    private readonly l: Loaded,
    private readonly seq: LlamaContextSequence,
    private readonly input: EngineInput,
    promptTokens: Token[],
    private readonly startInThink: boolean,
    private readonly maxTokens: number,
    private readonly usage: EngineUsage,
    private readonly signal: AbortSignal,
  ) {
    this.model = l.model;
    this.history = [...promptTokens];
    const effort = input.reasoning?.effort ?? 'medium';
    this.budget = Math.max(1, Math.round(engine.settings.reasoning_budget * EFFORT_SCALE[effort]));
  }

  private finish(reason: EngineFinishReason, stopSequence: string | null = null): EngineDelta {
    const usage = { ...this.usage };
    return reason === 'stop' && stopSequence !== null
      ? { type: 'finish', reason, usage, stop_sequence: stopSequence }
      : { type: 'finish', reason, usage };
  }

  async *run(): AsyncGenerator<EngineDelta> {
    const constraint = await this.constraint();
    const toolFormat =
      !constraint && this.input.tools.length && this.input.tool_choice !== 'none'
        ? this.engine.settings.tool_call_format
        : null;
    const raw = this.input.prompt !== undefined;
    const parser = new OutputParser({ think: !raw, startInThink: this.startInThink, tools: toolFormat });
    const stops = new StopSequenceFilter(this.input.stop);
    let calls = 0;
    let answer = '';

    const emit = function* (pieces: ParsedPiece[]): Generator<EngineDelta> {
      for (const p of pieces) {
        if (p.type === 'reasoning') yield { type: 'reasoning', text: p.text };
        else if (p.type === 'tool_call') {
          yield { type: 'tool_call', index: calls++, name: p.name, arguments: p.arguments };
        } else if (constraint) answer += p.text;
        else {
          const text = stops.push(p.text);
          if (text) yield { type: 'content', text };
        }
      }
    };

    // Pass 1: reasoning (if any) and, unconstrained, the answer as it streams.
    const attempt = this.sample(parser, constraint, 0);
    let outcome: Outcome = 'eog';
    for (;;) {
      const step = await attempt.next();
      if (step.done) {
        outcome = step.value;
        break;
      }
      yield* emit(step.value);
      if (!constraint && stops.stopped) {
        outcome = 'stop';
        await attempt.return('stop');
        break;
      }
    }
    if (outcome === 'cancelled') {
      yield this.finish('cancelled');
      return;
    }
    if (!constraint) {
      if (outcome !== 'stop') yield* emit(parser.end());
      const rest = stops.flush();
      if (rest) yield { type: 'content', text: rest };
      if (outcome === 'length') yield this.finish('length');
      else yield this.finish(calls > 0 && !raw ? 'tool_calls' : 'stop', stops.matched);
      return;
    }

    // Constrained: the answer was collected; check it, sample it again on a miss.
    if (parser.inReasoning || outcome === 'length') {
      // Cut by max_tokens: returned as it is (nothing to check).
      yield* emit(parser.end());
      if (answer) yield { type: 'content', text: answer };
      yield this.finish('length');
      return;
    }
    yield* emit(parser.end());
    const retries = this.engine.settings.structured_retries;
    for (let n = 0; ; n++) {
      const verdict = this.check(constraint, answer);
      if (verdict.ok) {
        if (verdict.calls) {
          for (const c of verdict.calls) {
            yield { type: 'tool_call', index: calls++, name: c.name, arguments: c.arguments };
          }
          yield this.finish('tool_calls');
        } else {
          yield { type: 'content', text: answer.trim() };
          yield this.finish('stop');
        }
        return;
      }
      if (n >= retries) {
        throw ApiError.internal(
          `The model did not produce ${constraint.kind === 'json' ? 'output matching the response_format' : 'valid tool calls'} after ${retries + 1} attempts (last: ${verdict.reason}).`,
        );
      }
      // Sample the answer again from where it started (the reasoning stays).
      const answerTokens = this.history.length - this.answerStart;
      this.usage.completion_tokens -= answerTokens;
      this.produced -= answerTokens;
      this.history = this.history.slice(0, this.answerStart);
      answer = '';
      const again = this.sample(new OutputParser({ think: false, tools: null }), constraint, n + 1);
      for (;;) {
        const step = await again.next();
        if (step.done) {
          outcome = step.value;
          break;
        }
        for (const p of step.value) if (p.type === 'content') answer += p.text;
      }
      if (outcome === 'cancelled') {
        yield this.finish('cancelled');
        return;
      }
      if (outcome === 'length') {
        if (answer) yield { type: 'content', text: answer };
        yield this.finish('length');
        return;
      }
    }
  }

  private check(
    c: Constraint,
    answer: string,
  ): { ok: true; calls?: Array<{ name: string; arguments: string }> } | { ok: false; reason: string } {
    if (c.kind === 'json') {
      const r = checkJson(answer, c.schema);
      return r.ok ? { ok: true } : r;
    }
    const p = new OutputParser({ think: false, tools: this.engine.settings.tool_call_format });
    const pieces = [...p.push(answer), ...p.end()];
    const calls = pieces.filter((x) => x.type === 'tool_call');
    if (!calls.length || pieces.some((x) => x.type === 'content' && x.text.trim())) {
      return { ok: false, reason: 'no parsable tool call' };
    }
    for (const call of calls) {
      const tool = c.tools.find((t) => t.function.name === call.name);
      if (!tool) return { ok: false, reason: `unknown function ${call.name}` };
      const r = checkJson(call.arguments, tool.function.parameters ?? NO_PARAMETERS);
      if (!r.ok) return { ok: false, reason: `${call.name} arguments: ${r.reason}` };
    }
    return { ok: true, calls: calls.map((x) => ({ name: x.name, arguments: x.arguments })) };
  }

  /** The grammar for this request's answer, or null when the answer is free text. */
  private async constraint(): Promise<Constraint | null> {
    const { input } = this;
    if (input.prompt !== undefined) return null;
    const llama = this.l.llama;
    const fmt = input.response_format;
    const choice = input.tool_choice;
    if (input.tools.length && (choice === 'required' || typeof choice === 'object')) {
      const tools =
        typeof choice === 'object'
          ? input.tools.filter((t) => t.function.name === choice.function.name)
          : input.tools;
      const src = toolCallGrammar(
        tools.map((t) => ({ name: t.function.name, parameters: t.function.parameters ?? NO_PARAMETERS })),
        this.engine.settings.tool_call_format,
        choice === 'required' && input.parallel_tool_calls,
      );
      return { grammar: await grammar(llama, src), kind: 'tools', schema: null, tools };
    }
    if (fmt?.type === 'json_object' || fmt?.type === 'json_schema') {
      const schema = fmt.type === 'json_schema' ? fmt.json_schema.schema : null;
      return { grammar: await grammar(llama, jsonGrammar(schema)), kind: 'json', schema, tools: [] };
    }
    return null;
  }

  /**
   * Samples until the end-of-generation token, max_tokens, an abort, or a `return()` from the
   * consumer; yields the parsed pieces of each token's text. In the reasoning phase it closes the
   * block at the budget; at the start of the answer it switches the grammar on.
   */
  private async *sample(
    parser: OutputParser,
    constraint: Constraint | null,
    attempt: number,
  ): AsyncGenerator<ParsedPiece[], Outcome, void> {
    const { model, seq, input } = this;
    let reasoning = parser.inReasoning;
    const startAnswer = () => {
      this.answerStart = this.history.length;
      if (constraint)
        this.grammarState = new LlamaGrammarEvaluationState({ model, grammar: constraint.grammar });
    };
    if (!reasoning) startAnswer();
    // Reuse the evaluated prefix the sequence already holds; evaluate at least the last token.
    await seq.adaptStateToTokens(this.history.slice(0, -1), false);
    const pending = this.history.slice(seq.nextTokenIndex);
    const seed =
      input.sampling.seed != null
        ? (input.sampling.seed + input.choice * 1_000_003 + attempt * 7919) >>> 0
        : (Math.random() * 2 ** 32) >>> 0;
    const decoder = new Detokenizer(model);
    const it = seq.evaluate(pending, {
      temperature: input.sampling.temperature,
      topP: input.sampling.top_p,
      topK: input.sampling.top_k ?? 0,
      seed,
      grammarEvaluationState: () => this.grammarState,
    });
    let inject: Token[] | undefined;
    let outcome: Outcome = 'eog';
    try {
      for (;;) {
        if (this.signal.aborted) {
          outcome = 'cancelled';
          break;
        }
        const r = await it.next(inject);
        inject = undefined;
        if (r.done) break;
        if (this.signal.aborted) {
          outcome = 'cancelled';
          break;
        }
        const tok = r.value;
        this.history.push(tok);
        this.produced++;
        this.usage.completion_tokens++;
        if (reasoning) this.usage.reasoning_tokens++;
        const text = decoder.push(tok);
        if (text) yield parser.push(text);
        if (reasoning && !parser.inReasoning) {
          reasoning = false;
          startAnswer();
        } else if (
          reasoning &&
          this.usage.reasoning_tokens >= this.budget &&
          this.produced < this.maxTokens
        ) {
          // Budget forcing: close the reasoning block ourselves; the answer follows.
          const closing = `${decoder.flush()}</think>`;
          const forced = model.tokenize(THINK_CLOSE, true);
          inject = [tok, ...forced];
          this.history.push(...forced);
          yield parser.push(closing);
          reasoning = false;
          startAnswer();
        }
        if (this.produced >= this.maxTokens) {
          outcome = 'length';
          break;
        }
      }
      const tail = decoder.flush();
      if (tail) yield parser.push(tail);
      return outcome;
    } finally {
      this.grammarState = undefined;
      await it.return();
    }
  }
}

type Outcome = 'eog' | 'length' | 'cancelled' | 'stop';

/**
 * Token ids -> text, holding back tokens that end inside a UTF-8 character. Control tokens (`<s>`,
 * `<|im_start|>` ...) have no text; user-defined ones (`<think>`, `<tool_call>`) keep theirs, as in
 * llama.cpp's server.
 */
class Detokenizer {
  private pending: Token[] = [];
  private context: Token[] = [];

  constructor(private readonly model: LlamaModel) {}

  push(tok: Token): string {
    this.pending.push(tok);
    const text = this.model.detokenize(this.pending, false, this.context);
    if (text.endsWith('\uFFFD') && this.pending.length < 4) return '';
    return this.take(text);
  }

  flush(): string {
    if (!this.pending.length) return '';
    return this.take(this.model.detokenize(this.pending, false, this.context));
  }

  private take(text: string): string {
    this.context = [...this.context, ...this.pending].slice(-8);
    this.pending = [];
    return text;
  }
}

/** The context's sequences, handed out one request at a time; waiters queue in order. */
class SequencePool {
  private readonly free: LlamaContextSequence[];
  private readonly waiters: Array<(s: LlamaContextSequence | null) => void> = [];

  constructor(sequences: LlamaContextSequence[]) {
    this.free = [...sequences];
  }

  acquire(signal: AbortSignal): Promise<LlamaContextSequence | null> {
    if (signal.aborted) return Promise.resolve(null);
    const s = this.free.shift();
    if (s) return Promise.resolve(s);
    return new Promise((resolve) => {
      const onAbort = () => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        resolve(null);
      };
      const waiter = (seq: LlamaContextSequence | null) => {
        signal.removeEventListener('abort', onAbort);
        resolve(seq);
      };
      this.waiters.push(waiter);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  release(seq: LlamaContextSequence): void {
    const next = this.waiters.shift();
    if (next) next(seq);
    else this.free.push(seq);
  }

  close(): void {
    for (const w of this.waiters.splice(0)) w(null);
  }
}

const grammarCache = new WeakMap<Llama, Map<string, Promise<LlamaGrammar>>>();
/** Parsed grammars, cached per runtime by their text (a bad grammar is an internal error). */
function grammar(llama: Llama, src: string): Promise<LlamaGrammar> {
  let m = grammarCache.get(llama);
  if (!m) {
    m = new Map();
    grammarCache.set(llama, m);
  }
  let g = m.get(src);
  if (!g) {
    g = llama.createGrammar({ grammar: src });
    g.catch(() => m?.delete(src));
    m.set(src, g);
    if (m.size > 128) m.delete(m.keys().next().value as string);
  }
  return g;
}

export const llamaCppEngineFactory: EngineFactory = {
  type: 'llama-cpp',
  create(settings, { model, log }) {
    const s = parseEngineSettings(LlamaCppEngineSchema, settings, model);
    if (model.capabilities.vision || model.capabilities.audio_input) {
      log.warn(
        { vision: model.capabilities.vision, audio_input: model.capabilities.audio_input },
        'the catalog gives this model image/audio input, which the embedded llama.cpp engine cannot take: such parts get a 400',
      );
    }
    const engine = new LlamaCppEngine(s, model, log);
    log.info({ gguf: s.gguf, threads: engine.threads, parallel: s.parallel }, 'llama-cpp engine ready');
    return engine;
  },
};
