import { anthropicErrorType, type ChatCompletion, type ChatCompletionChunk } from '@infer/contracts';
import type { WireFormat } from '../call/wire.js';
import { MessagesStream, PING, toAnthropicMessage } from './translate-reply.js';

const utf8 = new TextDecoder();

/**
 * The Messages API's wire shape on the governed call: the unary chat completion as a Message, each
 * chat chunk as Anthropic's events (one MessagesStream per request keeps the block state), its
 * terminal events (message_delta, message_stop) and its error event after the stream started.
 * `model` is the name the request used (an alias stays the alias); `inputEstimate` is message_start's
 * input_tokens until message_delta carries the engine's count. A stream silent for `pingEveryMs` gets a
 * `ping` event (as Anthropic sends them during long pauses; MESSAGES_PING_INTERVAL_MS).
 */
export function messagesWire(model: string, inputEstimate: number, pingEveryMs: number): WireFormat {
  let stream: MessagesStream | null = null;
  const events = () => {
    stream ??= new MessagesStream(model, inputEstimate);
    return stream;
  };
  return {
    present: (data) => toAnthropicMessage(data as ChatCompletion, model),
    chunk: (payload, out) => {
      const text = events().chunk(JSON.parse(utf8.decode(payload)) as ChatCompletionChunk);
      if (text) out.write(text);
    },
    end: (out) => {
      out.write(events().end());
    },
    streamError: (err, out) => {
      out.write(events().fail(anthropicErrorType(err.status), err.message));
    },
    keepAlive: { frame: PING, everyMs: pingEveryMs },
  };
}

/** count_tokens: the service's `{input_tokens}` as it is; never streamed. */
export const COUNT_TOKENS_WIRE: WireFormat = {
  chunk: () => undefined,
  streamError: () => undefined,
};
