import {
  ApiError,
  ChatCompletionRequestSchema,
  ChatServiceBodySchema,
  CompletionRequestSchema,
  EmbeddingRequestSchema,
  type ImageEditServiceBody,
  ImageEditServiceBodySchema,
  ImageGenerationRequestSchema,
  type ModelKind,
  RerankRequestSchema,
  ResponseRequestSchema,
  SpeechRequestSchema,
  Subjects,
  TIERS,
  type Tier,
  TranscriptionServiceBodySchema,
} from '@infer/contracts';
import type { z } from 'zod';
import type { AuthedKey } from '../auth/key-cache.js';
import type { CollectSpec } from '../call/collect.js';

/** How one model endpoint is served: its schema, the models it takes, the service subject. */
export interface ModelRoute {
  /** Public path, used in messages and as the usage `endpoint`. */
  endpoint: string;
  subject: string;
  schema: z.ZodType<{ model?: string; stream?: boolean | null }>;
  kinds: readonly ModelKind[];
  /** Model used when the body names none. */
  defaultModel?: string;
  /** Lowest tier that may call the endpoint at all (403 tier_restricted below it). */
  minTier?: Tier;
  /** Whether `stream: true` is served as SSE. */
  streamable: boolean;
  /**
   * SSE framing: 'data' (default) writes each chunk as `data: <json>` and ends with `data: [DONE]`
   * (chat, completions); 'typed' writes `event: <chunk.type>` + `data: <json>` and no [DONE]
   * (the Responses API).
   */
  sse?: 'data' | 'typed';
  /**
   * A unary JSON reply that may not fit in one NATS message: the service sends the list field as data
   * frames and the gateway joins them (collect.ts). Embeddings and rerank.
   */
  collect?: CollectSpec;
}

export const Routes = {
  chatCompletions: {
    endpoint: '/v1/chat/completions',
    subject: Subjects.chatCompletions,
    schema: ChatCompletionRequestSchema,
    kinds: ['chat'],
    streamable: true,
  },
  /**
   * The Anthropic Messages front door (apps/gateway/src/messages/): its request, translated to the chat
   * body, runs on the chat-service like /v1/chat/completions (same tiers: any tier that reaches the
   * model); the relay writes Anthropic's events and error shape.
   */
  messages: {
    endpoint: '/v1/messages',
    subject: Subjects.chatCompletions,
    schema: ChatServiceBodySchema,
    kinds: ['chat'],
    streamable: true,
  },
  /** Anthropic's count_tokens: the engine counts the translated prompt; nothing is generated or billed. */
  messagesCountTokens: {
    endpoint: '/v1/messages/count_tokens',
    subject: Subjects.chatCountTokens,
    schema: ChatCompletionRequestSchema,
    kinds: ['chat'],
    streamable: false,
  },
  /** Legacy completions; which chat models take it is the catalog's `completions` capability (chat-service). */
  completions: {
    endpoint: '/v1/completions',
    subject: Subjects.completions,
    schema: CompletionRequestSchema,
    kinds: ['chat'],
    streamable: true,
  },
  /** Responses API; streamed as OpenAI's typed event sequence (`responses` capability). */
  responses: {
    endpoint: '/v1/responses',
    subject: Subjects.responses,
    schema: ResponseRequestSchema,
    kinds: ['chat'],
    streamable: true,
    sse: 'typed',
  },
  speech: {
    endpoint: '/v1/audio/speech',
    subject: Subjects.speech,
    schema: SpeechRequestSchema,
    kinds: ['tts'],
    streamable: false,
  },
  /** The body is built by TranscriptionsController from the multipart form and the parked upload. */
  transcriptions: {
    endpoint: '/v1/audio/transcriptions',
    subject: Subjects.transcriptions,
    schema: TranscriptionServiceBodySchema,
    kinds: ['stt'],
    streamable: false,
  },
  embeddings: {
    endpoint: '/v1/embeddings',
    subject: Subjects.embeddings,
    schema: EmbeddingRequestSchema,
    kinds: ['embedding'],
    streamable: false,
    collect: { field: 'data' },
  },
  rerank: {
    endpoint: '/v1/rerank',
    subject: Subjects.rerank,
    schema: RerankRequestSchema,
    kinds: ['rerank'],
    streamable: false,
    collect: { field: 'results' },
  },
  /** The same as rerank under the Cohere v2 path (outside /v1). */
  rerankV2: {
    endpoint: '/v2/rerank',
    subject: Subjects.rerank,
    schema: RerankRequestSchema,
    kinds: ['rerank'],
    streamable: false,
    collect: { field: 'results' },
  },
  /** Images: inference tier and up (community keys get 403 tier_restricted); never streamed. */
  imageGenerations: {
    endpoint: '/v1/images/generations',
    subject: Subjects.imageGenerations,
    schema: ImageGenerationRequestSchema,
    kinds: ['image'],
    defaultModel: 'image-model',
    minTier: 'inference',
    streamable: false,
  },
  /** The body is built by ImagesController from the multipart form and the stored input images. */
  imageEdits: {
    endpoint: '/v1/images/edits',
    subject: Subjects.imageEdits,
    // The form schema types `stream` as unknown (multipart strings); edits are never streamed.
    schema: ImageEditServiceBodySchema as unknown as z.ZodType<Omit<ImageEditServiceBody, 'stream'>>,
    kinds: ['image'],
    defaultModel: 'image-model',
    minTier: 'inference',
    streamable: false,
  },
} satisfies Record<string, ModelRoute>;

/**
 * The caller of `route`, checked against the route's lowest tier: no key -> 401, a tier below it ->
 * 403 tier_restricted. Runs before anything is read or uploaded.
 */
export function routeCaller(route: ModelRoute, req: { auth?: AuthedKey }): AuthedKey {
  const auth = req.auth;
  if (!auth) throw ApiError.invalidKey();
  if (route.minTier && TIERS.indexOf(auth.tier) < TIERS.indexOf(route.minTier)) {
    throw ApiError.tierRestricted(
      `Your tier (${auth.tier}) cannot use ${route.endpoint}: it needs ${route.minTier} membership.`,
    );
  }
  return auth;
}
