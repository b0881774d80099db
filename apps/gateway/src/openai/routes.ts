import { ChatCompletionRequestSchema, type ModelKind, Subjects, type Tier } from '@infer/contracts';
import type { z } from 'zod';

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
}

export const Routes = {
  chatCompletions: {
    endpoint: '/v1/chat/completions',
    subject: Subjects.chatCompletions,
    schema: ChatCompletionRequestSchema,
    kinds: ['chat'],
    streamable: true,
  },
} satisfies Record<string, ModelRoute>;
