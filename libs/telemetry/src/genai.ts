import { createContextKey } from '@opentelemetry/api';

/** OpenTelemetry GenAI semantic-convention attribute names we set. */
export const GenAI = {
  operationName: 'gen_ai.operation.name',
  requestModel: 'gen_ai.request.model',
  system: 'gen_ai.provider.name',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  /** Seconds from the start of the model work to its first streamed chunk (no semconv attribute yet). */
  timeToFirstChunk: 'gen_ai.response.time_to_first_chunk',
} as const;

/**
 * gen_ai.operation.name for a NATS subject (its last two segments, with any test prefix). The
 * convention's well-known values where one fits (chat, text_completion, embeddings); otherwise ours.
 */
export function genAiOperation(subject: string): string {
  if (subject.endsWith('chat.completions') || subject.endsWith('chat.responses')) return 'chat';
  if (subject.endsWith('legacy-completions')) return 'text_completion';
  if (subject.endsWith('embedding.embeddings')) return 'embeddings';
  if (subject.endsWith('embedding.rerank')) return 'rerank';
  if (subject.endsWith('audio.transcriptions')) return 'transcription';
  if (subject.endsWith('audio.speech')) return 'speech';
  if (subject.endsWith('image.generations')) return 'image_generation';
  if (subject.endsWith('image.edits')) return 'image_edit';
  if (subject.endsWith('search.query')) return 'search';
  return 'execute';
}
/**
 * gen_ai.operation.name of the request being served, put in the context by the service's handler span
 * (traceRpcHandler): an engine shared by several operations (the chat engines serve chat and
 * text_completion) names the one it works for.
 */
export const GEN_AI_OPERATION = createContextKey('infer.gen_ai.operation');
