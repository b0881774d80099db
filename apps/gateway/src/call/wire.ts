import type { ApiError } from '@infer/contracts';
import type { Call } from './outcome.js';

/** Where a stream's events are written (the hijacked response). */
export type SseSink = NodeJS.WritableStream;

/**
 * A front door's wire shape, handed to GovernedCall.relay: everything that differs between the OpenAI
 * routes and another API served on the same governed call (Anthropic's Messages, say).
 */
export interface WireFormat {
  /** Headers of the answer besides x-request-id and the admission's x-ratelimit-* (OpenAI: openai-model). */
  headers?(call: Call): Record<string, string>;
  /** The unary JSON result -> the reply body (a failure here settles with its own status). */
  present?(data: unknown, call: Call): unknown | Promise<unknown>;
  /**
   * One service chunk -> the front door's SSE events (none, one or several), written to `out`. May
   * return a promise (awaited before the next chunk).
   */
  chunk(payload: Uint8Array, out: SseSink, call: Call): void | Promise<void>;
  /** After the last chunk of a stream that completed (OpenAI chat: `data: [DONE]`; Messages: `message_stop`). */
  end?(out: SseSink, call: Call): void;
  /**
   * A keep-alive event (Anthropic's `ping`) and its interval: written whenever the stream has relayed
   * nothing for a whole interval. Without it a stream says nothing while the model is silent.
   */
  keepAlive?: { frame: string; everyMs: number };
  /** A failure after the stream started (headers are out): the front door's error event. */
  streamError(err: ApiError, out: SseSink, call: Call): void;
  /**
   * The error body of a failure before the stream started (status and headers are the error's). Without
   * it the error is thrown and the gateway's filter answers with the OpenAI error body.
   */
  errorBody?(err: ApiError): unknown;
}

const utf8 = new TextDecoder();
const SSE_HEAD = Buffer.from('data: ');
const SSE_TAIL = Buffer.from('\n\n');
const SSE_DONE = Buffer.from('data: [DONE]\n\n');

function writeData(payload: Uint8Array, out: SseSink): void {
  out.write(Buffer.concat([SSE_HEAD, payload, SSE_TAIL], SSE_HEAD.length + payload.length + SSE_TAIL.length));
}

/** `event: <type>` then the data line, for APIs whose stream items carry a `type` (Responses). */
function writeTyped(payload: Uint8Array, out: SseSink): void {
  const json = utf8.decode(payload);
  const type = (JSON.parse(json) as { type?: unknown }).type;
  out.write(`${typeof type === 'string' ? `event: ${type}\n` : ''}data: ${json}\n\n`);
}

/** OpenAI reports a failure mid-stream as an error event, then ends. */
function openAiStreamError(err: ApiError, out: SseSink): void {
  out.write(`data: ${JSON.stringify(err.toBody())}\n\n`);
}

const openAiHeaders = (call: Call): Record<string, string> =>
  call.fallbackFrom
    ? { 'openai-model': call.model as string, 'x-infer-fallback': call.fallbackFrom }
    : { 'openai-model': call.model as string };

/** Chat and completions: `data: <chunk>` per chunk, `data: [DONE]` at the end. */
export const OPENAI_DATA_WIRE: WireFormat = {
  headers: openAiHeaders,
  chunk: writeData,
  end: (out) => out.write(SSE_DONE),
  streamError: openAiStreamError,
};

/** The Responses API: `event: <type>` + `data: <item>` per item, no [DONE]. */
export const OPENAI_TYPED_WIRE: WireFormat = {
  headers: openAiHeaders,
  chunk: writeTyped,
  streamError: openAiStreamError,
};
