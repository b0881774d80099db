import { z } from 'zod';
import { ModelIdSchema } from './common.js';
import { boundedText, TextLimits } from './text-limits.js';

/**
 * A document to rerank: a string, or `{text}` as Cohere clients send it. Turning objects into strings
 * is the service's job; `rerankDocumentText` does it.
 */
export const RerankDocumentSchema = z.union(
  [boundedText(TextLimits.rerankText), z.object({ text: boundedText(TextLimits.rerankText) })],
  {
    error: (iss) => (iss.input === undefined ? undefined : 'must be a string or an object {text: string}'),
  },
);
export type RerankDocument = z.infer<typeof RerankDocumentSchema>;

export function rerankDocumentText(doc: RerankDocument): string {
  return typeof doc === 'string' ? doc : doc.text;
}

/** Most documents one rerank request may carry (Cohere's documented maximum). */
export const RERANK_MAX_DOCUMENTS = 1000;

// ---- request: POST /v1/rerank and /v2/rerank ----
export const RerankRequestSchema = z
  .object({
    model: ModelIdSchema,
    query: boundedText(TextLimits.rerankText).min(1, 'must not be empty'),
    documents: z
      .array(RerankDocumentSchema)
      .min(1, 'must contain at least one document')
      .max(RERANK_MAX_DOCUMENTS, `at most ${RERANK_MAX_DOCUMENTS} documents per request`),
    /** Return only the best `top_n`; all documents when omitted. */
    top_n: z.number().int().min(1).optional(),
    /** Echo each document back in `results[].document`. */
    return_documents: z.boolean().default(true),
  })
  .meta({ id: 'RerankRequest' });
export type RerankRequest = z.infer<typeof RerankRequestSchema>;
export type RerankRequestInput = z.input<typeof RerankRequestSchema>;

// ---- response ----
export const RerankResultSchema = z.object({
  /** Position of the document in the request `documents`. */
  index: z.number().int().min(0),
  relevance_score: z.number().min(0).max(1),
  /** Absent when the request set `return_documents: false`. */
  document: z.object({ text: z.string() }).optional(),
});
export type RerankResult = z.infer<typeof RerankResultSchema>;

export const RerankResponseSchema = z
  .object({
    id: z.string(),
    /** Sorted by `relevance_score`, highest first. */
    results: z.array(RerankResultSchema),
    meta: z.object({
      billed_units: z.object({ total_tokens: z.number().int() }),
      tokens: z.object({ input_tokens: z.number().int() }),
    }),
  })
  .meta({ id: 'RerankResponse' });
export type RerankResponse = z.infer<typeof RerankResponseSchema>;
