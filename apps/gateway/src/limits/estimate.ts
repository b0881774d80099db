import type { CatalogEntry } from '@infer/contracts';
/**
 * The gateway's cheap estimate of a request's prompt tokens, used before the request runs: to refuse
 * up front a request whose prompt alone cannot fit in a token budget, and as the amount reserved
 * against the budgets until the service reports the real usage (which then replaces it).
 *
 * It is NOT a tokenizer. It reads the validated body once, without regexes:
 *   - every character of the prompt text counts 1/4 token (OpenAI's rule of thumb for English),
 *     summed over `messages` (content, name, tool calls), `prompt`, `input`, `instructions`,
 *     `tools`, `query` and `documents`, rounded up;
 *   - plus 4 tokens per message (role and template markers) and 3 to prime the reply;
 *   - an image part counts 85 tokens and an audio part 100, whatever their size (their base64
 *     payload is not text); token ids (embeddings token input) count one token each;
 *   - never less than 1.
 */
export const CHARS_PER_TOKEN = 4;
export const MESSAGE_TOKENS = 4;
export const PRIMING_TOKENS = 3;
export const IMAGE_TOKENS = 85;
export const AUDIO_TOKENS = 100;

const PROMPT_FIELDS = ['messages', 'prompt', 'input', 'instructions', 'tools', 'query', 'documents'] as const;
/** Keys whose values are markers, ids or binary payloads, not prompt text. */
const SKIP_KEYS = new Set(['type', 'role', 'id', 'tool_call_id', 'url', 'detail', 'format']);
const IMAGE_TYPES = new Set(['image_url', 'input_image', 'image']);
const AUDIO_TYPES = new Set(['input_audio', 'audio']);

export function estimatePromptTokens(body: unknown): number {
  if (!body || typeof body !== 'object') return 1;
  const acc = { chars: 0, fixed: PRIMING_TOKENS };
  const b = body as Record<string, unknown>;
  for (const field of PROMPT_FIELDS) {
    const v = b[field];
    if (v === undefined || v === null) continue;
    if (field === 'messages' && Array.isArray(v)) acc.fixed += MESSAGE_TOKENS * v.length;
    if (field === 'input' && Array.isArray(v)) {
      // Responses input items that are messages carry a role.
      for (const item of v)
        if (item && typeof item === 'object' && 'role' in item) acc.fixed += MESSAGE_TOKENS;
    }
    walk(v, acc, 0);
  }
  return Math.max(1, Math.ceil(acc.chars / CHARS_PER_TOKEN) + acc.fixed);
}

function walk(v: unknown, acc: { chars: number; fixed: number }, depth: number): void {
  if (depth > 32) return;
  if (typeof v === 'string') {
    acc.chars += v.length;
    return;
  }
  if (Array.isArray(v)) {
    // A number in an array is a token id (embeddings token input): one token each.
    for (const x of v) {
      if (typeof x === 'number') acc.fixed += 1;
      else walk(x, acc, depth + 1);
    }
    return;
  }
  if (!v || typeof v !== 'object') return;
  const o = v as Record<string, unknown>;
  const type = typeof o.type === 'string' ? o.type : undefined;
  if (type && IMAGE_TYPES.has(type)) {
    acc.fixed += IMAGE_TOKENS;
    return;
  }
  if (type && AUDIO_TYPES.has(type)) {
    acc.fixed += AUDIO_TOKENS;
    return;
  }
  // Object.keys, not Object.entries: the same keys in the same order, without a [key, value] array per key.
  for (const k of Object.keys(o)) if (!SKIP_KEYS.has(k)) walk(o[k], acc, depth + 1);
}

/** Held when neither the request nor the catalog bounds the output (and the context window is unknown). */
export const DEFAULT_OUTPUT_HOLD = 4_096;

/**
 * The most output tokens a generation request may produce, held on the token budgets from admission
 * to settle: `max_completion_tokens`, `max_tokens` or `max_output_tokens` when the request sets one,
 * else the model's default output cap (`default_max_output_tokens`), else what its context window
 * leaves after the prompt, else DEFAULT_OUTPUT_HOLD; times `n`. 0 for models that do not generate
 * text (embeddings, rerank, audio, images).
 */
export function estimateOutputTokens(
  body: unknown,
  model: Pick<CatalogEntry, 'kind' | 'default_max_output_tokens' | 'context_window'>,
  prompt: number,
): number {
  if (model.kind !== 'chat') return 0;
  const b = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
  const asked = [b.max_completion_tokens, b.max_tokens, b.max_output_tokens].find(
    (v): v is number => typeof v === 'number' && v > 0,
  );
  const cap =
    asked ??
    model.default_max_output_tokens ??
    (model.context_window ? Math.max(1, model.context_window - prompt) : DEFAULT_OUTPUT_HOLD);
  const n = typeof b.n === 'number' && b.n > 1 ? b.n : 1;
  return Math.ceil(cap) * n;
}
