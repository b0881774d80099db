import { createHash, type Hash } from 'node:crypto';
import type {
  AnthropicContentBlock,
  AnthropicMessage,
  AnthropicStopReason,
  ChatCompletion,
  ChatCompletionChunk,
  FinishReason,
  UsageReport,
} from '@infer/contracts';

/**
 * Our chat results -> Anthropic's Message object and stream events (pure; no I/O).
 *
 * Content order in a message: thinking, then text, then tool_use blocks (a stream keeps the order in
 * which the engine produced them: a new block starts whenever the kind of delta changes).
 * stop_reason: stop -> end_turn, or stop_sequence when the chat choice names the stop string that ended
 * it (`stop_reason`, reported by the engine: the chat-service's own engines cut at stop strings and
 * know which one matched, vLLM and SGLang upstreams say so); length -> max_tokens; tool_calls (or any
 * tool call) -> tool_use. `stop_sequence` is the matched string, else null.
 * A thinking block's `signature` is a SHA-256 digest of its text (base64): Anthropic's clients require
 * one and send it back; nothing here verifies it.
 */

export function stopReason(
  finish: FinishReason | null,
  calledTools: boolean,
  stopSequence: string | null = null,
): AnthropicStopReason {
  if (finish === 'tool_calls' || calledTools) return 'tool_use';
  if (finish === 'length') return 'max_tokens';
  if (stopSequence !== null) return 'stop_sequence';
  return 'end_turn';
}

/** `msg_` + the chat id's own random part. */
export function messageId(chatId: string): string {
  return `msg_${chatId.startsWith('chatcmpl-') ? chatId.slice(9) : chatId}`;
}

export function signatureOf(thinking: string): string {
  return createHash('sha256').update(thinking).digest('base64');
}

/** Tool-call arguments as an input object (`{}` when the model wrote no object: the client's tool then reports it). */
export function parseInput(args: string): Record<string, unknown> {
  if (!args) return {};
  try {
    const v: unknown = JSON.parse(args);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** A unary chat completion as a Message; `model` is the name the client asked for. */
export function toAnthropicMessage(c: ChatCompletion, model: string): AnthropicMessage {
  const choice = c.choices[0];
  const m = choice?.message;
  const stopSequence = choice?.stop_reason ?? null;
  const reason = stopReason(choice?.finish_reason ?? null, (m?.tool_calls?.length ?? 0) > 0, stopSequence);
  const content: AnthropicContentBlock[] = [];
  if (m?.reasoning_content) {
    content.push({
      type: 'thinking',
      thinking: m.reasoning_content,
      signature: signatureOf(m.reasoning_content),
    });
  }
  if (m?.content) content.push({ type: 'text', text: m.content });
  for (const call of m?.tool_calls ?? []) {
    content.push({
      type: 'tool_use',
      id: call.id,
      name: call.function.name,
      input: parseInput(call.function.arguments),
    });
  }
  return {
    id: messageId(c.id),
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: reason,
    stop_sequence: reason === 'stop_sequence' ? stopSequence : null,
    usage: {
      input_tokens: c.usage.prompt_tokens,
      output_tokens: c.usage.completion_tokens,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    },
  };
}

type Block = 'text' | 'thinking' | 'tool_use';

const event = (type: string, json: string) => `event: ${type}\ndata: ${json}\n\n`;
/** Anthropic's keep-alive event: one after message_start, more while a stream is silent. */
export const PING = event('ping', '{"type":"ping"}');
const MESSAGE_STOP = event('message_stop', '{"type":"message_stop"}');

/**
 * The Anthropic event stream of one streamed chat answer. Feed it each chat chunk (`chunk`), then call
 * `end` when the stream finished or `fail` when it broke after the start; each returns the SSE text to
 * write (possibly ''). The grammar it keeps: message_start and a ping first; each block opened with
 * content_block_start, filled with deltas, closed with content_block_stop before the next opens;
 * message_delta (stop_reason and usage) and message_stop last. Events are written as template strings
 * with the variable parts JSON-encoded: no object is built per delta.
 */
export class MessagesStream {
  private started = false;
  private index = -1;
  private open: Block | null = null;
  /** Tool call index (chat) -> its block index, for argument pieces. */
  private readonly toolBlocks = new Map<number, number>();
  private thinkingHash: Hash | null = null;
  private finish: FinishReason | null = null;
  private stopSequence: string | null = null;
  private usage: UsageReport | null = null;
  private calledTools = false;

  constructor(
    private readonly model: string,
    /** Shown as message_start's input_tokens until message_delta carries the real count. */
    private readonly inputEstimate: number,
  ) {}

  /** One chat chunk (already parsed). */
  chunk(c: ChatCompletionChunk): string {
    let out = this.started ? '' : this.start(c.id);
    if (c.usage) this.usage = c.usage;
    const choice = c.choices[0];
    if (!choice) return out;
    const d = choice.delta;
    if (d.reasoning_content) {
      if (this.open !== 'thinking') {
        out += this.openBlock('thinking', '{"type":"thinking","thinking":"","signature":""}');
        this.thinkingHash = createHash('sha256');
      }
      this.thinkingHash?.update(d.reasoning_content);
      out += this.delta(`{"type":"thinking_delta","thinking":${JSON.stringify(d.reasoning_content)}}`);
    }
    if (d.content) {
      if (this.open !== 'text') out += this.openBlock('text', '{"type":"text","text":""}');
      out += this.delta(`{"type":"text_delta","text":${JSON.stringify(d.content)}}`);
    }
    for (const tc of d.tool_calls ?? []) {
      if (tc.id !== undefined || !this.toolBlocks.has(tc.index)) {
        this.calledTools = true;
        const id = tc.id ?? `toolu_${tc.index}`;
        out += this.openBlock(
          'tool_use',
          `{"type":"tool_use","id":${JSON.stringify(id)},"name":${JSON.stringify(tc.function?.name ?? '')},"input":{}}`,
        );
        this.toolBlocks.set(tc.index, this.index);
      }
      const args = tc.function?.arguments;
      if (args) {
        const at = this.toolBlocks.get(tc.index) ?? this.index;
        out += event(
          'content_block_delta',
          `{"type":"content_block_delta","index":${at},"delta":{"type":"input_json_delta","partial_json":${JSON.stringify(args)}}}`,
        );
      }
    }
    if (choice.finish_reason) {
      this.finish = choice.finish_reason;
      this.stopSequence = choice.stop_reason ?? null;
      out += this.closeBlock();
    }
    return out;
  }

  /** The end of a stream that finished: close what is open, then message_delta and message_stop. */
  end(usage: UsageReport | null = null): string {
    let out = this.started ? '' : this.start('');
    out += this.closeBlock();
    const u = usage ?? this.usage;
    const reason = stopReason(this.finish, this.calledTools, this.stopSequence);
    const input = u ? `,"input_tokens":${u.prompt_tokens}` : '';
    const sequence = reason === 'stop_sequence' ? JSON.stringify(this.stopSequence) : 'null';
    out += event(
      'message_delta',
      `{"type":"message_delta","delta":{"stop_reason":"${reason}","stop_sequence":${sequence}},"usage":{"output_tokens":${u?.completion_tokens ?? 0}${input}}}`,
    );
    return out + MESSAGE_STOP;
  }

  /** A failure after the stream started: Anthropic's `error` event (the stream then ends). */
  fail(type: string, message: string): string {
    return event(
      'error',
      `{"type":"error","error":{"type":${JSON.stringify(type)},"message":${JSON.stringify(message)}}}`,
    );
  }

  private start(chatId: string): string {
    this.started = true;
    const id = JSON.stringify(messageId(chatId || `chatcmpl-${Date.now().toString(36)}`));
    return (
      event(
        'message_start',
        `{"type":"message_start","message":{"id":${id},"type":"message","role":"assistant","model":${JSON.stringify(this.model)},"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":${this.inputEstimate},"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}}`,
      ) + PING
    );
  }

  private openBlock(kind: Block, block: string): string {
    const out = this.closeBlock();
    this.index++;
    this.open = kind;
    return `${out}${event('content_block_start', `{"type":"content_block_start","index":${this.index},"content_block":${block}}`)}`;
  }

  private delta(delta: string): string {
    return event(
      'content_block_delta',
      `{"type":"content_block_delta","index":${this.index},"delta":${delta}}`,
    );
  }

  private closeBlock(): string {
    if (!this.open) return '';
    let out = '';
    if (this.open === 'thinking' && this.thinkingHash) {
      out += this.delta(`{"type":"signature_delta","signature":"${this.thinkingHash.digest('base64')}"}`);
      this.thinkingHash = null;
    }
    this.open = null;
    return `${out}${event('content_block_stop', `{"type":"content_block_stop","index":${this.index}}`)}`;
  }
}
