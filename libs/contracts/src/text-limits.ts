import { z } from 'zod';
import { formatCount } from './format.js';

/**
 * Largest lengths of the free-text fields of every request, in characters (UTF-16 code units, as
 * JavaScript and the OpenAI API count them). The gateway checks them with the request schemas before
 * anything goes over NATS: a longer value is a 400 whose `param` names the field. The whole request
 * must also fit one NATS message (1 MiB by default), else 413 `request_too_large`; the body limit
 * (BODY_LIMIT_BYTES, 32 MiB) bounds everything else. docs/api-decisions.md lists them and says why.
 */
export const TextLimits = {
  /** `model` (any endpoint). */
  model: 256,
  /** Chat message text (strings and text parts), `reasoning_content`, tool-call `arguments`, the
   * completions `prompt`, the Responses `input` text and `instructions`: the OpenAI API's 10 Mi. */
  prompt: 10 * 1024 * 1024,
  /** A message's `name`, as the OpenAI API (a-z, A-Z, 0-9, _ and -, up to 64). */
  name: 64,
  /** `tool_calls[].id`, `tool_call_id`. */
  toolCallId: 256,
  /** A tool's or a JSON schema's `description`. */
  description: 8192,
  /** Each `stop` sequence (at most 4 of them). */
  stop: 256,
  /** `user`: an end-user id, as the OpenAI API. */
  user: 256,
  /** Each embeddings input (models read at most 8192 tokens of it; the service counts them). */
  embeddingInput: 100_000,
  /** The rerank `query` and each document (the service checks tokens against the model). */
  rerankText: 100_000,
  /** `/v1/search` `query` (and the web_search tool's): as the Brave Search API, 400. */
  searchQuery: 400,
  /** Image `prompt` (generations and edits): as gpt-image-1, 32,000. */
  imagePrompt: 32_000,
  /** Speech `input` (the spec's 4096, kept in SPEECH_MAX_INPUT_CHARS). */
  speechInput: 4096,
  /** Speech `voice`. */
  voice: 64,
  /** Transcription `prompt` (the OpenAI API reads its last 224 tokens). */
  transcriptionPrompt: 4096,
} as const;

/** A string of at most `max` characters, with a message that states the maximum. */
export function boundedText(max: number): z.ZodString {
  return z.string().max(max, `must be at most ${formatCount(max)} characters`);
}
