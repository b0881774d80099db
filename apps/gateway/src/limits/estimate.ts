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

/** Outputs a replica keeps per model to learn what its requests typically produce. */
export const TYPICAL_SAMPLES = 64;
/** Settled requests of a model before its typical output is used (until then: the whole cap). */
export const TYPICAL_MIN_SAMPLES = 8;
/** The quantile of the recent outputs taken as "typical": most requests produce no more. */
export const TYPICAL_QUANTILE = 0.9;

/**
 * What requests of each model typically use beyond their prompt estimate (the real total minus the
 * estimate: their output, plus the estimate's own error, which may make it negative when the estimate
 * counts more prompt tokens than the model's tokenizer does): the TYPICAL_QUANTILE of the last TYPICAL_SAMPLES requests settled on this replica that set
 * no output cap of their own. An estimate, like the prompt estimate, kept per replica: each replica
 * learns it from its own traffic (the counts themselves are all in Redis). Recomputed when a request
 * settles, read as a number when one is admitted.
 */
export class TypicalOutput {
  private readonly models = new Map<string, { ring: Float64Array; n: number; next: number; q: number }>();

  /** The typical output of a model, or undefined until TYPICAL_MIN_SAMPLES requests have settled. */
  of(model: string): number | undefined {
    const m = this.models.get(model);
    return m && m.n >= TYPICAL_MIN_SAMPLES ? m.q : undefined;
  }

  observe(model: string, tokens: number): void {
    let m = this.models.get(model);
    if (!m) {
      m = { ring: new Float64Array(TYPICAL_SAMPLES), n: 0, next: 0, q: 0 };
      this.models.set(model, m);
    }
    m.ring[m.next] = tokens;
    m.next = (m.next + 1) % TYPICAL_SAMPLES;
    if (m.n < TYPICAL_SAMPLES) m.n++;
    if (m.n < TYPICAL_MIN_SAMPLES) return;
    const sorted = m.ring.slice(0, m.n).sort();
    m.q = sorted[Math.min(m.n - 1, Math.ceil(TYPICAL_QUANTILE * m.n) - 1)]!;
  }
}

/** What admission reserves for a generation request's output (see outputReservation). */
export interface OutputReservation {
  /**
   * Tokens taken on every token limit besides the prompt estimate, until the request settles (negative
   * when the model's requests typically use fewer tokens in all than their prompt estimate).
   */
  hold: number;
  /** Tokens besides the prompt estimate that must fit under a token limit for the request to be admitted. */
  need: number;
  /** The request sets no output cap of its own (its real output teaches the model's typical output). */
  learns: boolean;
}

const NO_OUTPUT: OutputReservation = { hold: 0, need: 0, learns: false };

/**
 * The reservation rule for a generation request's output on the token limits (tokens per minute, the
 * rolling budget, the allowance); docs/api-decisions.md "Token limits: what a request reserves":
 *   - the cap = estimateOutputTokens (the request's max_tokens, else the model's default cap, else what
 *     its context window leaves);
 *   - once the model's typical output is known (TypicalOutput): hold = need = min(cap, typical x n), so a
 *     request is admitted while the limit has room for its prompt and what such a request typically
 *     produces, and the requests in flight hold what they typically produce;
 *   - before that (a replica's first requests of a model): hold = the cap, need = 0 (admitted while the
 *     prompt fits; the limit is passed by at most the one request admitted last).
 * 0 for models that do not generate text.
 */
export function outputReservation(
  body: unknown,
  model: Pick<CatalogEntry, 'kind' | 'default_max_output_tokens' | 'context_window'>,
  prompt: number,
  typical: number | undefined,
): OutputReservation {
  if (model.kind !== 'chat') return NO_OUTPUT;
  const cap = estimateOutputTokens(body, model, prompt);
  const b = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
  const n = typeof b.n === 'number' && b.n > 1 ? b.n : 1;
  const asked = [b.max_completion_tokens, b.max_tokens, b.max_output_tokens].some(
    (v) => typeof v === 'number' && v > 0,
  );
  const learns = !asked && n === 1;
  if (typical === undefined) return { hold: cap, need: 0, learns };
  // Never less than one token in all (the estimate's error can make `typical` negative).
  const hold = Math.max(1 - prompt, Math.min(cap, typical > 0 ? Math.ceil(typical) * n : Math.ceil(typical)));
  return { hold, need: hold, learns };
}
