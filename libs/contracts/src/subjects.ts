/**
 * NATS subjects between the gateway and the services. Services subscribe in a queue group named after
 * the service, so replicas share the load; the cancel subject is subscribed without a queue group so
 * that whichever replica holds the request hears it.
 */
export const Subjects = {
  chatCompletions: 'infer.chat.completions',
  completions: 'infer.chat.legacy-completions',
  responses: 'infer.chat.responses',
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
