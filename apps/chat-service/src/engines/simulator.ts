import { setImmediate as nextTurn } from 'node:timers/promises';
import { SimulatorEngineSchema, type Tool } from '@infer/contracts';
import { parseEngineSettings } from '@infer/runtime';
import { countPromptTokens, countTokens, splitTokens } from '../tokens.js';
import { type ChatEngine, type EngineDelta, type EngineInput, type EngineMessage, sleep } from './engine.js';
import type { EngineFactory } from './registry.js';
import { Prng, prose, sampleJson, seedFrom, words } from './simulator-text.js';
import { StopSequenceFilter } from './stop-sequences.js';

export type SimulatorSettings = ReturnType<typeof SimulatorEngineSchema.parse>;

/**
 * SIMULATOR ENGINE: A TEST DOUBLE, not a model. It imitates a chat engine for tests and load tests of
 * everything in front of the model (in the manner of llm-d-inference-sim): text is deterministic
 * nonsense, latency is modelled, token counts are exact. It is never the only way chat works: real
 * engines (OpenAI-compatible upstream, embedded llama.cpp) implement the same ChatEngine interface.
 *
 * Behaviour, for one choice:
 * - Text: a PRNG seeded with SHA-256 of (messages, `seed`, choice index) drives prose over a fixed word
 *   list (`simulator-text.ts`). Same input, same output; other sampling parameters do not matter.
 * - Tokens: one emitted piece = one token, and pieces are the tokens of the shared approximation
 *   (`src/tokens.ts`), so `countTokens(text)` equals the count reported. Prompt tokens use
 *   `countPromptTokens` from the same file.
 * - Timing: the first token (of any kind) is due `ttft_ms` after the call, each next one `itl_ms` after
 *   the previous (timer lateness is caught up, so waits do not drift). Every wait ends at once when the
 *   signal aborts.
 * - Reasoning: when the request reasons, `reasoning_tokens` reasoning deltas come first.
 * - Length: `max_tokens` caps all generated tokens, reasoning included; when set, plain prose runs until
 *   the cap (finish 'length'), so load tests choose the output length with it. Without it (or with a
 *   default cap, `max_tokens_default`) the answer is `default_output_tokens` tokens (finish 'stop').
 * - Stop sequences: the content is cut before the first match (finish 'stop'); the token that
 *   completed the match is counted, as vLLM does. They apply to content, not to reasoning.
 * - Tool calls (finish 'tool_calls', content null): when tools are offered and tool_choice is
 *   * a forced function: that function;
 *   * 'required': the tools whose names appear in the last user message, else the first tool;
 *   * 'auto': only when the LAST message is a user message that names tools literally (case-sensitive,
 *     as a whole word), those tools;
 *   * 'none': never.
 *   With `parallel_tool_calls: false` only the first. Arguments are JSON built from the tool's
 *   parameters schema, streamed a token at a time; the call's name costs one token.
 * - Legacy completions (`input.prompt`): the prompt seeds the text and counts as `countTokens(prompt)`.
 * - response_format json_object: `{"answer": "..."}`; json_schema: a value sampled from the schema.
 *   Both end with finish 'stop' unless max_tokens cuts them (then the JSON is incomplete).
 */
export class SimulatorEngine implements ChatEngine {
  readonly type = 'simulator';

  constructor(readonly settings: SimulatorSettings) {}

  async *generate(input: EngineInput, signal: AbortSignal): AsyncGenerator<EngineDelta> {
    const cfg = this.settings;
    const raw = input.prompt !== undefined;
    const seed = raw
      ? seedFrom(input.prompt, input.sampling.seed, input.choice)
      : seedFrom(input.messages, input.sampling.seed, input.choice);
    const rng = new Prng(seed);
    const promptTokens = raw
      ? countTokens(input.prompt ?? '')
      : countPromptTokens(input.messages, input.tools);
    const budget = input.max_tokens ?? Number.POSITIVE_INFINITY;
    const started = performance.now();
    let produced = 0;
    let reasoningTokens = 0;

    const finish = (
      reason: Extract<EngineDelta, { type: 'finish' }>['reason'],
      stopSequence: string | null = null,
    ): EngineDelta => ({
      type: 'finish',
      reason,
      usage: { prompt_tokens: promptTokens, completion_tokens: produced, reasoning_tokens: reasoningTokens },
      ...(stopSequence !== null ? { stop_sequence: stopSequence } : {}),
    });
    /**
     * Waits until the next token is due; false when the signal aborted. Token 0 is due `ttft_ms` after
     * the call, each next one `itl_ms` after the previous one was due: small timer lateness is caught
     * up (no drift), but after a stall of more than half an `itl_ms` the timeline moves on instead of
     * bursting the missed tokens out at once.
     */
    let nextAt = started + cfg.ttft_ms;
    const due = async (): Promise<boolean> => {
      const wait = nextAt - performance.now();
      if (wait > 0) await sleep(wait, signal);
      else if (produced % 64 === 63) await nextTurn(); // let an abort arrive during long bursts
      nextAt = Math.max(nextAt, performance.now() - cfg.itl_ms / 2) + cfg.itl_ms;
      return !signal.aborted;
    };

    if (signal.aborted) {
      yield finish('cancelled');
      return;
    }

    // 1. Reasoning trace.
    if (input.reasoning && cfg.reasoning_tokens > 0) {
      const thoughts = prose(new Prng(seed ^ 0x5eed));
      for (let i = 0; i < cfg.reasoning_tokens; i++) {
        if (produced >= budget) {
          yield finish('length');
          return;
        }
        if (!(await due())) {
          yield finish('cancelled');
          return;
        }
        produced++;
        reasoningTokens++;
        yield { type: 'reasoning', text: thoughts.next().value };
      }
    }

    // 2a. Tool calls.
    const calls = plannedToolCalls(input);
    if (calls.length) {
      for (const [index, tool] of calls.entries()) {
        const args = JSON.stringify(sampleJson(tool.function.parameters ?? { type: 'object' }, rng));
        const pieces = splitTokens(args);
        for (let p = -1; p < pieces.length; p++) {
          if (produced >= budget) {
            yield finish('length');
            return;
          }
          if (!(await due())) {
            yield finish('cancelled');
            return;
          }
          produced++;
          yield p < 0
            ? { type: 'tool_call', index, id: `call_${rng.hex(24)}`, name: tool.function.name, arguments: '' }
            : { type: 'tool_call', index, arguments: pieces[p] as string };
        }
      }
      yield finish('tool_calls');
      return;
    }

    // 2b. Content.
    const source = contentTokens(input, rng, cfg.default_output_tokens);
    const stops = new StopSequenceFilter(input.stop);
    for (const piece of source) {
      if (produced >= budget) {
        const rest = stops.flush();
        if (rest) yield { type: 'content', text: rest };
        yield finish('length');
        return;
      }
      if (!(await due())) {
        yield finish('cancelled');
        return;
      }
      produced++;
      const text = stops.push(piece);
      if (text) yield { type: 'content', text };
      if (stops.stopped) {
        yield finish('stop', stops.matched);
        return;
      }
    }
    const rest = stops.flush();
    if (rest) yield { type: 'content', text: rest };
    yield finish('stop');
  }
}

/** The answer's tokens: JSON when a response format asks for it, else prose (endless when capped). */
function contentTokens(input: EngineInput, rng: Prng, defaultTokens: number): Iterable<string> {
  const fmt = input.response_format;
  if (fmt?.type === 'json_object') return splitTokens(JSON.stringify({ answer: words(rng, 3 + rng.int(8)) }));
  if (fmt?.type === 'json_schema')
    return splitTokens(JSON.stringify(sampleJson(fmt.json_schema.schema, rng)));
  const text = prose(rng);
  if (input.max_tokens != null && !input.max_tokens_default) return text;
  return (function* () {
    for (let i = 0; i < defaultTokens; i++) yield text.next().value;
  })();
}

function plannedToolCalls(input: EngineInput): Tool[] {
  const { tools, tool_choice: choice } = input;
  if (!tools.length || choice === 'none') return [];
  if (typeof choice === 'object')
    return tools.filter((t) => t.function.name === choice.function.name).slice(0, 1);
  const last = input.messages.at(-1);
  const named = last?.role === 'user' ? tools.filter((t) => mentions(textOf(last), t.function.name)) : [];
  const calls = choice === 'required' && !named.length ? tools.slice(0, 1) : named;
  return input.parallel_tool_calls ? calls : calls.slice(0, 1);
}

function textOf(m: EngineMessage): string {
  if (typeof m.content === 'string') return m.content;
  if (!m.content) return '';
  return m.content.map((p) => (p.type === 'text' ? p.text : '')).join('\n');
}

function mentions(text: string, name: string): boolean {
  let from = 0;
  while (true) {
    const i = text.indexOf(name, from);
    if (i < 0) return false;
    const before = text[i - 1];
    const after = text[i + name.length];
    if (!isNameChar(before) && !isNameChar(after)) return true;
    from = i + 1;
  }
}

const isNameChar = (c: string | undefined) => c !== undefined && /[A-Za-z0-9_-]/.test(c);

export const simulatorEngineFactory: EngineFactory = {
  type: 'simulator',
  create(settings, { model, log }) {
    const s = parseEngineSettings(SimulatorEngineSchema, settings, model);
    log.info(
      { ttft_ms: s.ttft_ms, itl_ms: s.itl_ms },
      'simulator engine ready: a TEST DOUBLE with deterministic text and modelled latency, not a model',
    );
    return new SimulatorEngine(s);
  },
};
