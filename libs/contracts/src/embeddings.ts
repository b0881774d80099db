import { z } from 'zod';
import { ModelIdSchema } from './common.js';
import { boundedText, TextLimits } from './text-limits.js';

/** Most inputs one embeddings request may carry (as the OpenAI API). */
export const EMBEDDINGS_MAX_INPUTS = 2048;

const NonEmptyText = boundedText(TextLimits.embeddingInput).min(1, 'must not be an empty string');

const TokenId = z.number().int().min(0, 'token ids are integers >= 0');
/** Token ids (in the model's own tokenizer, see apps/embedding-service/README.md). */
const TokenIds = z.array(TokenId).min(1, 'must not be an empty array');

const kindOf = (v: unknown) => (typeof v === 'string' ? 'string' : typeof v === 'number' ? 'id' : 'ids');

/**
 * A string, an array of strings, or token ids as OpenAI accepts them: one array of integers, or an
 * array of integer arrays (Python LangChain sends these by default). An array must be all of one kind.
 */
export const EmbeddingInputSchema = z.union(
  [
    NonEmptyText,
    z
      .array(z.union([NonEmptyText, TokenId, TokenIds]))
      .min(1, 'must not be an empty array')
      .max(EMBEDDINGS_MAX_INPUTS, `must have at most ${EMBEDDINGS_MAX_INPUTS} items`)
      .superRefine((items, ctx) => {
        const first = kindOf(items[0]);
        const i = items.findIndex((v) => kindOf(v) !== first);
        if (i >= 0) {
          ctx.addIssue({
            code: 'custom',
            path: [i],
            message: 'mixes kinds: use only strings, only token ids, or only arrays of token ids',
          });
        }
      }),
  ],
  {
    error: (iss) =>
      Array.isArray(iss.input) && iss.input.length > EMBEDDINGS_MAX_INPUTS
        ? `must have at most ${EMBEDDINGS_MAX_INPUTS} items, got ${iss.input.length}`
        : 'must be a string, an array of strings, an array of token ids or an array of token id arrays',
  },
);

export const EncodingFormatSchema = z.enum(['float', 'base64']);
export type EncodingFormat = z.infer<typeof EncodingFormatSchema>;

// ---- request: POST /v1/embeddings ----
export const EmbeddingRequestSchema = z
  .object({
    model: ModelIdSchema,
    input: EmbeddingInputSchema,
    encoding_format: EncodingFormatSchema.default('float'),
    /** Truncate vectors to this many dimensions (the model's size when omitted). */
    dimensions: z.number().int().min(1).optional(),
    user: boundedText(TextLimits.user).optional(),
  })
  .meta({ id: 'EmbeddingRequest' });
export type EmbeddingRequest = z.infer<typeof EmbeddingRequestSchema>;
export type EmbeddingRequestInput = z.input<typeof EmbeddingRequestSchema>;

// ---- response ----
export const EmbeddingSchema = z
  .object({
    object: z.literal('embedding'),
    /** Position in the request `input`. */
    index: z.number().int(),
    /** Numbers, or with `encoding_format: 'base64'` the little-endian float32 bytes in base64. */
    embedding: z.union([z.array(z.number()), z.string()]),
  })
  .meta({ id: 'Embedding' });
export type Embedding = z.infer<typeof EmbeddingSchema>;

export const EmbeddingListSchema = z
  .object({
    object: z.literal('list'),
    model: z.string(),
    /** In the order of the request `input`. */
    data: z.array(EmbeddingSchema),
    usage: z.object({ prompt_tokens: z.number().int(), total_tokens: z.number().int() }),
  })
  .meta({ id: 'EmbeddingList' });
export type EmbeddingList = z.infer<typeof EmbeddingListSchema>;

// ---- base64 vectors ----
// btoa/atob exist in Node >= 16 and in browsers, so this file stays free of Node-only APIs.
const CHUNK = 0x8000;

/** A vector as base64 of its little-endian float32 bytes: what the OpenAI SDKs decode. */
export function encodeEmbeddingBase64(vec: readonly number[]): string {
  const bytes = new Uint8Array(vec.length * 4);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < vec.length; i++) view.setFloat32(i * 4, vec[i] as number, true);
  let bin = '';
  for (let i = 0; i < bytes.length; i += CHUNK) {
    bin += String.fromCharCode(...bytes.subarray(i, i + CHUNK));
  }
  return btoa(bin);
}

/** Inverse of `encodeEmbeddingBase64`. Throws on text that is not base64 of whole float32 values. */
export function decodeEmbeddingBase64(b64: string): number[] {
  const bin = atob(b64);
  if (bin.length % 4 !== 0) throw new Error('base64 embedding is not a whole number of float32 values');
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  const view = new DataView(bytes.buffer);
  const out = new Array<number>(bin.length / 4);
  for (let i = 0; i < out.length; i++) out[i] = view.getFloat32(i * 4, true);
  return out;
}
