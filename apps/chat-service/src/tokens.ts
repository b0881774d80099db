import type { Tool } from '@infer/contracts';
import type { EngineMessage } from './engines/engine.js';

/**
 * The chat service's deterministic tokenizer APPROXIMATION: the one place where text becomes a token
 * count when no real tokenizer is at hand (the simulator engine, and the fallback estimate of cancelled
 * work for engines that cannot count). It is not any model's tokenizer; it is stable, cheap and close
 * enough in magnitude for English text (about 1.3 pieces per word).
 *
 * A token ("piece") is, scanning left to right and skipping whitespace:
 *   - one Han / Hiragana / Katakana character, or
 *   - a run of 1 to 8 other letters, combining marks or digits (longer runs split every 8), or
 *   - one other character (punctuation, symbol, emoji).
 * So `Hello, world!` is 4 tokens, `internationalization` (20 letters) is 3.
 *
 * Prompt tokens of a chat request (OpenAI cookbook style accounting for chat templates):
 *   3 per message + the pieces of its text (content, text parts, tool call names and arguments)
 *   + 1 + pieces of `name` when a message has one
 *   + 85 per image part, 100 per audio part (fixed, size-independent)
 *   + 3 to prime the assistant's reply
 *   + the pieces of the tool definitions (JSON of each function) when tools are offered.
 */
const CJK = '\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}';
const PIECE_SRC = `[${CJK}]|(?:(?![${CJK}])[\\p{L}\\p{M}\\p{N}]){1,8}|[^\\s\\p{L}\\p{M}\\p{N}]`;
const PIECE = new RegExp(PIECE_SRC, 'gu');
/** A piece with the whitespace before it, so that splitting loses no text (except trailing spaces). */
const PIECE_WITH_SPACE = new RegExp(`\\s*(?:${PIECE_SRC})`, 'gu');

export const MESSAGE_OVERHEAD_TOKENS = 3;
export const NAME_OVERHEAD_TOKENS = 1;
export const REPLY_PRIMING_TOKENS = 3;
export const IMAGE_PART_TOKENS = 85;
export const AUDIO_PART_TOKENS = 100;

export function countTokens(text: string): number {
  let n = 0;
  PIECE.lastIndex = 0;
  while (PIECE.exec(text)) n++;
  return n;
}

/**
 * Splits text into its tokens, each with the whitespace before it: `pieces.join('')` is `text` minus
 * trailing whitespace, and `countTokens(text) === pieces.length`. Engines that emit one token per delta
 * (the simulator) use it so that their token counts and their text agree exactly.
 */
export function splitTokens(text: string): string[] {
  return text.match(PIECE_WITH_SPACE) ?? [];
}

export function countPromptTokens(messages: readonly EngineMessage[], tools: readonly Tool[] = []): number {
  let n = REPLY_PRIMING_TOKENS;
  for (const m of messages) {
    n += MESSAGE_OVERHEAD_TOKENS;
    if ('name' in m && m.name) n += NAME_OVERHEAD_TOKENS + countTokens(m.name);
    if (typeof m.content === 'string') n += countTokens(m.content);
    else if (Array.isArray(m.content)) {
      for (const part of m.content) {
        if (part.type === 'text') n += countTokens(part.text);
        else if (part.type === 'image_url') n += IMAGE_PART_TOKENS;
        else n += AUDIO_PART_TOKENS;
      }
    }
    if (m.role === 'assistant' && m.tool_calls) {
      for (const c of m.tool_calls) n += countTokens(c.function.name) + countTokens(c.function.arguments);
    }
  }
  for (const t of tools) n += countTokens(JSON.stringify(t.function));
  return n;
}
