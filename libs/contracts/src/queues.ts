/**
 * BullMQ queues in Redis: long work that a service hands to its worker role (scaled apart from the
 * NATS-facing role). The gateway's admin API (GET /admin/queues) reads their counts, so the names and
 * the key prefix live here, shared by producers, workers and the gateway.
 */
export const Queues = {
  /** apps/audio-service: transcription jobs (decode, split into <= 2 min segments, transcribe, merge). */
  audioTranscriptions: 'audio-transcriptions',
  /** apps/image-service: image generations and edits (one job per request, n images in it). */
  imageJobs: 'image-jobs',
  /** apps/gateway batch runner role: one job per batch (validate, run its lines, write the output files). */
  batches: 'batches',
} as const;
export type QueueName = (typeof Queues)[keyof typeof Queues];

/**
 * Default BullMQ key prefix (`BULLMQ_PREFIX` overrides it in every app that touches the queues; tests set
 * their own so that concurrent runs do not share jobs).
 */
export const DEFAULT_QUEUE_PREFIX = 'infer:bull';
