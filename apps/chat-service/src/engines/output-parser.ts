/**
 * Splits a model's raw output text, as it streams in, into reasoning, answer text and tool calls, for
 * engines whose model writes them inline (in the manner of vLLM's reasoning and tool parsers):
 *
 * - reasoning: a `<think>...</think>` block at the start of the output (after optional whitespace), or,
 *   when the chat template opened the block itself (`startInThink`), everything up to `</think>`. The
 *   whitespace after `</think>` is dropped.
 * - tool calls, `hermes` format (Qwen, Hermes, many others): `<tool_call>{"name": ..., "arguments":
 *   {...}}</tool_call>`, any number of them; `mistral` format: `[TOOL_CALLS]` followed by a JSON array
 *   of `{name, arguments}` up to the end of the output. A call whose JSON does not parse, or has no
 *   name, is kept as answer text (clients see what the model wrote instead of losing it).
 *
 * Text that could still be the start of a tag is held back until the next push decides it, so a tag
 * split across chunks is never emitted as text. Engine-neutral: used by the OpenAI-compatible upstream
 * engine (when the server does not parse itself) and by embedded llama.cpp.
 */
export type ParsedPiece =
  | { type: 'content'; text: string }
  | { type: 'reasoning'; text: string }
  | { type: 'tool_call'; name: string; arguments: string };

export type ToolCallFormat = 'hermes' | 'mistral';

export interface OutputParserOptions {
  /** Parse a `<think>` block at the start. */
  think: boolean;
  /** The output starts inside the reasoning block (the template opened `<think>`). */
  startInThink?: boolean;
  /** Tool call format to parse (only when tools were offered), or null. */
  tools: ToolCallFormat | null;
}

const THINK_OPEN = '<think>';
const THINK_CLOSE = '</think>';
const TOOL_OPEN = '<tool_call>';
const TOOL_CLOSE = '</tool_call>';
const MISTRAL_TOOLS = '[TOOL_CALLS]';

type Mode = 'start' | 'think' | 'after_think' | 'content' | 'tool' | 'mistral';

export class OutputParser {
  private mode: Mode;
  private buf = '';
  private calls = 0;
  private afterCall = false;

  constructor(private readonly opts: OutputParserOptions) {
    this.mode = opts.startInThink ? 'think' : opts.think ? 'start' : 'content';
  }

  /** Number of tool calls parsed so far. */
  get toolCalls(): number {
    return this.calls;
  }

  /** True while the output is inside the reasoning block. */
  get inReasoning(): boolean {
    return this.mode === 'think';
  }

  push(text: string): ParsedPiece[] {
    this.buf += text;
    const out: ParsedPiece[] = [];
    this.drain(out, false);
    return out;
  }

  /** At the end of the output: whatever is held, decided for good. */
  end(): ParsedPiece[] {
    const out: ParsedPiece[] = [];
    this.drain(out, true);
    const rest = this.buf;
    this.buf = '';
    switch (this.mode) {
      case 'start':
      case 'content':
        this.content(out, rest);
        break;
      case 'think':
        if (rest) out.push({ type: 'reasoning', text: rest });
        break;
      case 'tool': {
        // Some models stop right after the JSON without the closing tag.
        const call = parseCall(rest);
        if (call) this.call(out, call);
        else this.content(out, TOOL_OPEN + rest);
        break;
      }
      case 'mistral': {
        const calls = parseMistral(rest);
        if (calls) for (const c of calls) this.call(out, c);
        else this.content(out, MISTRAL_TOOLS + rest);
        break;
      }
      case 'after_think':
        break;
    }
    return out;
  }

  private content(out: ParsedPiece[], text: string): void {
    let t = text;
    if (this.afterCall) {
      t = t.replace(/^\s+/, '');
      if (!t) return;
      this.afterCall = false;
    }
    if (t) out.push({ type: 'content', text: t });
  }

  private call(out: ParsedPiece[], c: { name: string; arguments: string }): void {
    this.calls++;
    this.afterCall = true;
    out.push({ type: 'tool_call', ...c });
  }

  private drain(out: ParsedPiece[], final: boolean): void {
    for (;;) {
      switch (this.mode) {
        case 'start': {
          const t = this.buf.trimStart();
          if (t.startsWith(THINK_OPEN)) {
            this.buf = t.slice(THINK_OPEN.length);
            this.mode = 'think';
            continue;
          }
          if (!final && THINK_OPEN.startsWith(t)) return; // maybe the start of <think>
          this.mode = 'content';
          continue;
        }
        case 'think': {
          const i = this.buf.indexOf(THINK_CLOSE);
          if (i >= 0) {
            if (i > 0) out.push({ type: 'reasoning', text: this.buf.slice(0, i) });
            this.buf = this.buf.slice(i + THINK_CLOSE.length);
            this.mode = 'after_think';
            continue;
          }
          const hold = heldPrefix(this.buf, THINK_CLOSE);
          const emit = this.buf.slice(0, this.buf.length - hold);
          if (emit) out.push({ type: 'reasoning', text: emit });
          this.buf = this.buf.slice(emit.length);
          return;
        }
        case 'after_think': {
          const t = this.buf.replace(/^\s+/, '');
          this.buf = t;
          if (!t) return;
          this.mode = 'content';
          continue;
        }
        case 'content': {
          const tag =
            this.opts.tools === 'hermes' ? TOOL_OPEN : this.opts.tools === 'mistral' ? MISTRAL_TOOLS : '';
          if (!tag) {
            this.content(out, this.buf);
            this.buf = '';
            return;
          }
          const i = this.buf.indexOf(tag);
          if (i >= 0) {
            this.content(out, this.buf.slice(0, i));
            this.buf = this.buf.slice(i + tag.length);
            this.mode = tag === TOOL_OPEN ? 'tool' : 'mistral';
            continue;
          }
          const hold = final ? 0 : heldPrefix(this.buf, tag);
          const emit = this.buf.slice(0, this.buf.length - hold);
          // After a tool call, whitespace alone is held: it is only the separator between calls.
          if (this.afterCall && !final && /^\s*$/.test(emit)) return;
          this.content(out, emit);
          this.buf = this.buf.slice(emit.length);
          return;
        }
        case 'tool': {
          const i = this.buf.indexOf(TOOL_CLOSE);
          if (i < 0) return;
          const inner = this.buf.slice(0, i);
          this.buf = this.buf.slice(i + TOOL_CLOSE.length);
          const call = parseCall(inner);
          if (call) this.call(out, call);
          else this.content(out, TOOL_OPEN + inner + TOOL_CLOSE);
          this.mode = 'content';
          continue;
        }
        case 'mistral':
          return; // everything up to the end is the call list
      }
    }
  }
}

/** Length of the longest proper prefix of `tag` that `text` ends with. */
export function heldPrefix(text: string, tag: string): number {
  for (let k = Math.min(tag.length - 1, text.length); k > 0; k--) {
    if (text.endsWith(tag.slice(0, k))) return k;
  }
  return 0;
}

function toCall(v: unknown): { name: string; arguments: string } | null {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return null;
  const o = v as Record<string, unknown>;
  const fn = o.function && typeof o.function === 'object' ? (o.function as Record<string, unknown>) : o;
  if (typeof fn.name !== 'string' || !fn.name) return null;
  const args = fn.arguments ?? fn.parameters ?? {};
  return { name: fn.name, arguments: typeof args === 'string' ? args : JSON.stringify(args) };
}

function parseCall(text: string): { name: string; arguments: string } | null {
  try {
    return toCall(JSON.parse(text.trim()));
  } catch {
    return null;
  }
}

function parseMistral(text: string): Array<{ name: string; arguments: string }> | null {
  try {
    const v = JSON.parse(text.trim());
    const list = Array.isArray(v) ? v : [v];
    const calls = list.map(toCall);
    return calls.length && calls.every((c) => c !== null)
      ? (calls as Array<{ name: string; arguments: string }>)
      : null;
  } catch {
    return null;
  }
}
