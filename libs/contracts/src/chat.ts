import { z } from 'zod';
import { GenerationFields, MaxTokensSchema, ModelIdSchema, UsageSchema } from './common.js';
import { boundedText, TextLimits } from './text-limits.js';

// ---- content parts ----
export const TextPartSchema = z.object({ type: z.literal('text'), text: boundedText(TextLimits.prompt) });
export const ImageUrlPartSchema = z.object({
  type: z.literal('image_url'),
  image_url: z.object({ url: z.string().min(1), detail: z.enum(['auto', 'low', 'high']).optional() }),
});
/** Inner fields are not shown in the spec; they follow the OpenAI API: base64 data and its format. */
export const InputAudioPartSchema = z.object({
  type: z.literal('input_audio'),
  input_audio: z.object({ data: z.string().min(1), format: z.enum(['wav', 'mp3']) }),
});
export const ContentPartSchema = z.discriminatedUnion('type', [
  TextPartSchema,
  ImageUrlPartSchema,
  InputAudioPartSchema,
]);
export type ContentPart = z.infer<typeof ContentPartSchema>;

// ---- tools ----
export const FUNCTION_NAME_RE = /^[A-Za-z0-9_-]{1,64}$/;
export const FunctionNameSchema = z
  .string()
  .regex(FUNCTION_NAME_RE, 'function name must be 1-64 letters, digits, underscores or dashes');

export const ToolSchema = z
  .object({
    type: z.literal('function'),
    function: z.object({
      name: FunctionNameSchema,
      description: boundedText(TextLimits.description).optional(),
      parameters: z.record(z.string(), z.unknown()).optional(),
      strict: z.boolean().nullable().optional(),
    }),
  })
  .meta({ id: 'Tool' });
export type Tool = z.infer<typeof ToolSchema>;

export const ToolChoiceSchema = z
  .union([
    z.enum(['auto', 'none', 'required']),
    z.object({ type: z.literal('function'), function: z.object({ name: FunctionNameSchema }) }),
  ])
  .meta({ id: 'ToolChoice' });
export type ToolChoice = z.infer<typeof ToolChoiceSchema>;

export const ToolCallSchema = z
  .object({
    id: boundedText(TextLimits.toolCallId),
    type: z.literal('function'),
    function: z.object({ name: boundedText(TextLimits.name), arguments: boundedText(TextLimits.prompt) }),
  })
  .meta({ id: 'ToolCall' });
export type ToolCall = z.infer<typeof ToolCallSchema>;

// ---- messages ----
const TextContent = z.union([boundedText(TextLimits.prompt), z.array(TextPartSchema).min(1)]);
const name = boundedText(TextLimits.name).optional();

export const SystemMessageSchema = z.object({
  role: z.enum(['system', 'developer']),
  content: TextContent,
  name,
});
export const UserMessageSchema = z.object({
  role: z.literal('user'),
  content: z.union([boundedText(TextLimits.prompt), z.array(ContentPartSchema).min(1)]),
  name,
});
export const AssistantMessageSchema = z
  .object({
    role: z.literal('assistant'),
    content: TextContent.nullable().optional(),
    name,
    tool_calls: z.array(ToolCallSchema).optional(),
    reasoning_content: boundedText(TextLimits.prompt).nullable().optional(),
  })
  .refine((m) => m.content != null || (m.tool_calls?.length ?? 0) > 0, {
    message: 'an assistant message needs content unless it carries tool_calls',
    path: ['content'],
  });
export const ToolMessageSchema = z.object({
  role: z.literal('tool'),
  content: TextContent,
  tool_call_id: boundedText(TextLimits.toolCallId).min(1),
});

export const MessageSchema = z
  .discriminatedUnion('role', [
    SystemMessageSchema,
    UserMessageSchema,
    AssistantMessageSchema,
    ToolMessageSchema,
  ])
  .meta({ id: 'Message' });
export type Message = z.infer<typeof MessageSchema>;

// ---- response format ----
export const ResponseFormatSchema = z
  .discriminatedUnion('type', [
    z.object({ type: z.literal('text') }),
    z.object({ type: z.literal('json_object') }),
    z.object({
      type: z.literal('json_schema'),
      json_schema: z.object({
        name: z.string().min(1).max(64),
        description: boundedText(TextLimits.description).optional(),
        strict: z.boolean().nullable().optional(),
        schema: z.record(z.string(), z.unknown()),
      }),
    }),
  ])
  .meta({ id: 'ResponseFormat' });
export type ResponseFormat = z.infer<typeof ResponseFormatSchema>;

export const ReasoningEffortSchema = z.enum(['low', 'medium', 'high']);

// ---- request ----
/** A field whose only accepted values ask for nothing (`ok`); any other is a 400 naming it with `why`. */
function onlyNothingChat(ok: (v: unknown) => boolean, why: string) {
  return z.unknown().refine((v) => v === undefined || ok(v), why);
}

export const NO_LOGPROBS =
  'log-probabilities are not available on this platform; leave logprobs out (or false)';

export const ChatCompletionRequestSchema = z
  .object({
    model: ModelIdSchema,
    messages: z.array(MessageSchema).min(1, 'messages must contain at least one message'),
    ...GenerationFields,
    /** Newer OpenAI SDKs send this name; it means the same as max_tokens. */
    max_completion_tokens: MaxTokensSchema.nullable().optional(),
    tools: z.array(ToolSchema).max(128).optional(),
    tool_choice: ToolChoiceSchema.nullable().optional(),
    parallel_tool_calls: z.boolean().nullable().optional(),
    response_format: ResponseFormatSchema.nullable().optional(),
    /** null asks for the model's default, as leaving it out. */
    reasoning_effort: ReasoningEffortSchema.nullable().optional(),
    chat_template_kwargs: z.object({ enable_thinking: z.boolean().optional() }).optional(),
    presence_penalty: z.number().min(-2).max(2).nullable().optional(),
    /** Extension (as vLLM's): sample from the k most likely tokens; 0 = off. Engines without it ignore it. */
    top_k: z.number().int().min(0).nullable().optional(),
    frequency_penalty: z.number().min(-2).max(2).nullable().optional(),
    /** No engine here reports log-probabilities: `true` is a 400 naming it rather than `logprobs: null`. */
    logprobs: z
      .boolean()
      .nullable()
      .optional()
      .refine((v) => v !== true, NO_LOGPROBS),
    top_logprobs: z
      .number()
      .int()
      .min(0)
      .max(20)
      .nullable()
      .optional()
      .refine((v) => !v, NO_LOGPROBS),
    // Unknown fields are ignored (hints such as prompt_cache_key, safety_identifier, service_tier,
    // verbosity, store, metadata pass); these would ask for behaviour no engine here delivers, so only
    // their "nothing" values pass (docs/api-decisions.md).
    modalities: onlyNothingChat(
      (v) => v == null || (Array.isArray(v) && v.every((m) => m === 'text')),
      "only the 'text' output modality is available",
    ).optional(),
    audio: onlyNothingChat(
      (v) => v == null,
      'audio output is not available; use /v1/audio/speech',
    ).optional(),
    functions: onlyNothingChat(
      (v) => v == null || (Array.isArray(v) && v.length === 0),
      'the deprecated functions parameter is not supported; pass tools',
    ).optional(),
    function_call: onlyNothingChat(
      (v) => v == null || v === 'none' || v === 'auto',
      'the deprecated function_call parameter is not supported; pass tool_choice',
    ).optional(),
    logit_bias: onlyNothingChat(
      (v) => v == null || (typeof v === 'object' && Object.keys(v as object).length === 0),
      'logit_bias is not supported by the engines here',
    ).optional(),
    prediction: onlyNothingChat((v) => v == null, 'predicted outputs are not supported').optional(),
    web_search_options: onlyNothingChat(
      (v) => v == null,
      'web search in chat completions is not supported; use /v1/search or the web_search tool of /v1/responses',
    ).optional(),
    moderation: onlyNothingChat((v) => v == null, 'moderation is not supported').optional(),
  })
  .meta({ id: 'ChatCompletionRequest' });
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequestSchema>;

/**
 * The chat body as a front door hands it to the chat-service: the public request plus fields that no
 * public route accepts (the /v1/chat/completions route validates with ChatCompletionRequestSchema,
 * which drops them).
 */
export const ChatServiceBodySchema = ChatCompletionRequestSchema.extend({
  /**
   * Set by the Anthropic Messages front door: `max_tokens` is an upper bound that is lowered to what
   * the context window leaves after the prompt (Anthropic's rule for its required max_tokens), not a
   * 400 when prompt + max_tokens exceed the window.
   */
  fit_max_tokens: z.literal(true).optional(),
});
export type ChatServiceBody = z.infer<typeof ChatServiceBodySchema>;

// ---- responses ----
export const FinishReasonSchema = z.enum(['stop', 'length', 'tool_calls']);
export type FinishReason = z.infer<typeof FinishReasonSchema>;

export const AssistantOutputMessageSchema = z.object({
  role: z.literal('assistant'),
  content: z.string().nullable(),
  /** Always null: the models never answer with a refusal part (OpenAI's types declare the field). */
  refusal: z.null().optional(),
  reasoning_content: z.string().optional(),
  tool_calls: z.array(ToolCallSchema).optional(),
});

export const ChatCompletionSchema = z
  .object({
    id: z.string(),
    object: z.literal('chat.completion'),
    created: z.number().int(),
    model: z.string(),
    choices: z.array(
      z.object({
        index: z.number().int(),
        finish_reason: FinishReasonSchema,
        /** vLLM's extension: the request's stop string that ended the choice; absent when none did. */
        stop_reason: z.string().optional(),
        message: AssistantOutputMessageSchema,
        logprobs: z.null().optional(),
      }),
    ),
    usage: UsageSchema,
  })
  .meta({ id: 'ChatCompletion' });
export type ChatCompletion = z.infer<typeof ChatCompletionSchema>;

export const ToolCallDeltaSchema = z.object({
  index: z.number().int(),
  id: z.string().optional(),
  type: z.literal('function').optional(),
  function: z.object({ name: z.string().optional(), arguments: z.string().optional() }).optional(),
});

export const ChatCompletionChunkSchema = z
  .object({
    id: z.string(),
    object: z.literal('chat.completion.chunk'),
    created: z.number().int(),
    model: z.string(),
    choices: z.array(
      z.object({
        index: z.number().int(),
        delta: z.object({
          role: z.literal('assistant').optional(),
          content: z.string().nullable().optional(),
          reasoning_content: z.string().optional(),
          tool_calls: z.array(ToolCallDeltaSchema).optional(),
        }),
        finish_reason: FinishReasonSchema.nullable(),
        /** On the finish chunk: the request's stop string that ended the choice (vLLM's extension). */
        stop_reason: z.string().optional(),
        logprobs: z.null().optional(),
      }),
    ),
    usage: UsageSchema.nullable().optional(),
  })
  .meta({ id: 'ChatCompletionChunk' });
export type ChatCompletionChunk = z.infer<typeof ChatCompletionChunkSchema>;
