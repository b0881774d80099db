import { z } from 'zod';

/**
 * NATS subjects between the gateway and the services. Services subscribe in a queue group named after
 * the service, so replicas share the load; the cancel subject is subscribed without a queue group so
 * that whichever replica holds the request hears it.
 */
export const Subjects = {
  chatCompletions: 'infer.chat.completions',
  completions: 'infer.chat.legacy-completions',
  responses: 'infer.chat.responses',
  /** The prompt tokens of a chat body, counted by the model's engine (Anthropic's count_tokens). */
  chatCountTokens: 'infer.chat.count-tokens',
  embeddings: 'infer.embedding.embeddings',
  rerank: 'infer.embedding.rerank',
  speech: 'infer.audio.speech',
  transcriptions: 'infer.audio.transcriptions',
  imageGenerations: 'infer.image.generations',
  imageEdits: 'infer.image.edits',
  search: 'infer.search.query',
  /** Payload: the request id to abort. */
  cancel: 'infer.cancel',
} as const;
export type Subject = (typeof Subjects)[keyof typeof Subjects];

export const QueueGroups = {
  chat: 'chat-service',
  embedding: 'embedding-service',
  audio: 'audio-service',
  image: 'image-service',
  search: 'search-service',
} as const;

/**
 * Core NATS subjects between gateway replicas (no queue group, no JetStream: every gateway hears
 * every message, and a message nobody hears is fine because cache TTLs are the fallback).
 */
export const GatewaySubjects = {
  /** Payload: an `AdminInvalidation` (JSON). Published after an admin change is committed. */
  invalidate: 'infer.gateway.invalidate',
} as const;

/**
 * Core NATS subjects between the replicas of a service that runs engine pools (no queue group: every
 * replica hears every message; one lost costs a cache miss, nothing else).
 */
export const EnginePoolSubjects = {
  /**
   * Payload (JSON): `{ origin, model, key, url }`: a pool placed a conversation's first turn off its
   * ring endpoint (ADR 0062), so the other replicas send its later turns there too.
   */
  moves: 'infer.engine-pool.moves',
} as const;

/**
 * What an admin change makes stale on every gateway: `keys` = cached key lookups (they carry the
 * member's tier, billing anchor, suspension and the key's limit overrides), `catalog` = the model
 * catalog. Unknown scopes from a newer gateway are dropped, not refused.
 */
export const AdminInvalidationSchema = z.object({
  scopes: z
    .array(z.string())
    .transform((xs) => xs.filter((x): x is InvalidationScope => x === 'keys' || x === 'catalog')),
  /** The publishing gateway's instance id (it has applied the change itself already). */
  origin: z.string().max(100),
  /**
   * The `keys` scope narrowed to what the change touched: the keys (ids) and members (ids, all their
   * keys) whose cached lookups are dropped, with every cached miss (a new or unsuspended key may be
   * cached as unknown). Neither list: every cached key lookup is dropped.
   */
  key_ids: z.array(z.string().max(100)).max(1000).optional(),
  member_ids: z.array(z.string().max(100)).max(1000).optional(),
});
export type InvalidationScope = 'keys' | 'catalog';
/** What a `keys` change touched (AdminInvalidation key_ids / member_ids); empty: everything. */
export interface InvalidationTarget {
  keyIds?: readonly string[];
  memberIds?: readonly string[];
}
export type AdminInvalidation = z.infer<typeof AdminInvalidationSchema>;

/** The bytes published on GatewaySubjects.invalidate (the gateways and the admin CLI both send them). */
export function encodeAdminInvalidation(msg: AdminInvalidation): string {
  return JSON.stringify({
    scopes: msg.scopes,
    origin: msg.origin,
    ...(msg.key_ids?.length ? { key_ids: msg.key_ids } : {}),
    ...(msg.member_ids?.length ? { member_ids: msg.member_ids } : {}),
  });
}
