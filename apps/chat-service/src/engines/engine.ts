import type {
  ContentPart,
  FinishReason,
  PriorityClass,
  ResponseFormat,
  Tool,
  ToolCall,
  ToolChoice,
} from '@infer/contracts';

/**
 * The ONE chat engine interface (docs/architecture.md, rule 3: engines are adapters).
 *
 * An engine turns one normalized request into ONE choice: an async stream of deltas that ends with
 * exactly one `finish` delta. The chat handler fans out `n` choices by calling `generate` n times
 * (with `choice` 0..n-1), turns deltas into ChatCompletionChunks as they arrive (no buffering) and sums
 * the usage. Engines know nothing about NATS, chunks, ids or the wire format.
 *
 * Implementations: an OpenAI-compatible upstream over HTTP (`openai-upstream.ts`: vLLM, SGLang,
 * llama.cpp server, TGI, Ollama ...), embedded llama.cpp (`llama-cpp/`), and the simulator (a test
 * double, `simulator.ts`). Tests that need exact replies (tool calls, reasoning, text, turn by turn)
 * use the SCRIPTED ENGINE, also a test double: test/support/scripted-upstream.ts, an OpenAI-compatible
 * server whose turns a test scripts, served through the `openai` upstream engine.
 *
 * Cancellation contract: when `signal` aborts, the engine stops generating at once (no further waits,
 * no upstream work) and ends the stream with one last `{type: 'finish', reason: 'cancelled', usage}`
 * that counts the tokens produced so far, so the usage of cancelled work is still recorded. Engines
 * that cannot count (or simply throw/return on abort) are tolerated: the handler then estimates the
 * usage with the shared tokenizer approximation (`src/tokens.ts`).
 */
export interface ChatEngine {
  /** Engine type as in the catalog (`model.engine.type`), for logs. */
  readonly type: string;
  /**
   * Which non-text content parts the engine can take (default: both). Images reach engines as
   * `data:` URIs (the service fetches URLs itself, behind its SSRF guard), audio as base64. A part the
   * engine cannot take is a 400 naming it, even when the catalog says the model has the capability.
   */
  readonly media?: { images: boolean; audio: boolean };
  /**
   * Exact prompt size and context limit, for engines that tokenize themselves (embedded llama.cpp).
   * Without it the service uses the shared approximation (`src/tokens.ts`) and the catalog's
   * `context_window` alone.
   */
  measure?(input: EngineInput, signal: AbortSignal): Promise<EngineMeasure>;
  generate(input: EngineInput, signal: AbortSignal): AsyncIterable<EngineDelta>;
  /**
   * Releases what the engine holds (connections, loaded weights). Called when the service stops and
   * when a catalog change replaces the engine; generations still running may be ended as 'cancelled'.
   */
  close?(): Promise<void>;
}

export interface EngineMeasure {
  prompt_tokens: number;
  /** Tokens the engine can hold (prompt + output), or null when only the catalog knows. */
  context_tokens: number | null;
}

export type ReasoningEffort = 'low' | 'medium' | 'high';

/** Messages as engines see them: `developer` folded into `system`, text-only part arrays joined. */
export type EngineMessage =
  | { role: 'system'; content: string; name?: string }
  /** A string, or content parts when the message carries images or audio. */
  | { role: 'user'; content: string | ContentPart[]; name?: string }
  | {
      role: 'assistant';
      content: string | null;
      name?: string;
      tool_calls?: ToolCall[];
      reasoning_content?: string;
    }
  | { role: 'tool'; content: string; tool_call_id: string };

export interface EngineSampling {
  /** Spec default 0.6 applied. */
  temperature: number;
  /** Spec default 0.95 applied. */
  top_p: number;
  seed: number | null;
  presence_penalty: number | null;
  frequency_penalty: number | null;
  /** Top-k sampling (0 or null = off): upstream engines and llama.cpp apply it; the simulator has none. */
  top_k?: number | null;
}

/** How to reason; `null` on EngineInput means do not reason. */
export interface EngineReasoning {
  /** Set only for models whose reasoning is steered by effort (capabilities.reasoning 'effort'). */
  effort: ReasoningEffort | null;
}

export interface EngineInput {
  /** Catalog id of the model (an upstream engine maps it to its own name). */
  model: string;
  messages: EngineMessage[];
  sampling: EngineSampling;
  /**
   * Cap on generated tokens, reasoning included (as vLLM and OpenAI count it); null = the engine's
   * default. `max_completion_tokens` is folded in here.
   */
  max_tokens: number | null;
  /**
   * True when `max_tokens` is a default cap the service applied (the Responses API's default
   * max_output_tokens), not one the client asked for. Engines that imitate output lengths (the
   * simulator) then answer at their natural length; real engines simply respect the cap.
   */
  max_tokens_default?: boolean;
  /** Stop sequences (possibly empty). The engine cuts the content before the first match. */
  stop: string[];
  /** Tools offered to the model (possibly empty). */
  tools: Tool[];
  /** Normalized: 'none' when there are no tools; a forced function is known to be among `tools`. */
  tool_choice: ToolChoice;
  parallel_tool_calls: boolean;
  response_format: ResponseFormat | null;
  reasoning: EngineReasoning | null;
  /**
   * Index of the choice this call produces (0..n-1). Deterministic engines mix it into their seed so
   * that the n choices of one request differ.
   */
  choice: number;
  /**
   * Legacy completions (`/v1/completions`): raw text to continue, with no chat template. `messages`
   * is then empty, and there are no tools, response format or reasoning.
   */
  prompt?: string;
  /**
   * Who asks and until when (from the service envelope), for engines that route and queue requests
   * (the upstream engine's pool): the caller's class orders the pool's wait queue and may become vLLM's
   * `priority`; members of one class take turns; nothing waits past the deadline (epoch ms).
   */
  route?: { cls?: PriorityClass | undefined; member?: string | undefined; deadline?: number | undefined };
}

export interface EngineUsage {
  prompt_tokens: number;
  /** Every generated token: reasoning, content and tool calls. */
  completion_tokens: number;
  /** The part of completion_tokens spent reasoning. */
  reasoning_tokens: number;
}

export type EngineFinishReason = FinishReason | 'cancelled';

export type EngineDelta =
  /** Answer text to append. */
  | { type: 'content'; text: string }
  /** Reasoning trace to append (`reasoning_content`). */
  | { type: 'reasoning'; text: string }
  /**
   * A piece of tool call number `index`: the first piece of a call carries `name` (and `id` if the
   * engine has one; otherwise the handler makes one), later pieces carry `arguments` text to append.
   */
  | { type: 'tool_call'; index: number; id?: string; name?: string; arguments?: string }
  /**
   * The last delta: why generation ended and the exact usage of this choice. `stop_sequence` is the
   * request's stop string that ended it (reason 'stop'), when one did: engines that cut the text
   * themselves know it, an upstream reports it (vLLM's `stop_reason`, SGLang's `matched_stop`).
   */
  | { type: 'finish'; reason: EngineFinishReason; usage: EngineUsage; stop_sequence?: string };

export type EngineFinish = Extract<EngineDelta, { type: 'finish' }>;

/** Resolves after `ms`, or at once when `signal` aborts (check `signal.aborted` afterwards). */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted || ms <= 0) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
