import { z } from 'zod';
import { SelfUsageSchema } from './account.js';
import {
  AnthropicCountTokensRequestSchema,
  AnthropicCountTokensResponseSchema,
  AnthropicErrorBodySchema,
  AnthropicMessageSchema,
  AnthropicMessagesRequestSchema,
  AnthropicStreamEventSchema,
} from './anthropic.js';
import {
  AUDIO_CONTENT_TYPES,
  SpeechRequestSchema,
  TranscriptionRequestSchema,
  TranscriptionResponseSchema,
} from './audio.js';
import {
  BatchCreateRequestSchema,
  BatchListSchema,
  BatchObjectSchema,
  FileDeletedSchema,
  FileListSchema,
  FileObjectSchema,
} from './batch.js';
import {
  ChatCompletionChunkSchema,
  ChatCompletionRequestSchema,
  ChatCompletionSchema,
  ToolSchema,
} from './chat.js';
import { ModelListSchema, ModelSchema } from './common.js';
import { CompletionChunkSchema, CompletionRequestSchema, CompletionSchema } from './completions.js';
import { EmbeddingListSchema, EmbeddingRequestSchema } from './embeddings.js';
import { ErrorBodySchema } from './errors.js';
import { ImageEditRequestSchema, ImageGenerationRequestSchema, ImageResponseSchema } from './images.js';
import { JsonRpcMessageSchema, JsonRpcResponseSchema } from './mcp.js';
import { ADMIN_SECURITY_SCHEMES, addAdminPaths } from './openapi-admin.js';
import { RerankRequestSchema, RerankResponseSchema } from './rerank.js';
import {
  ResponseDeletedSchema,
  ResponseInputItemListSchema,
  ResponseObjectSchema,
  ResponseRequestSchema,
  ResponseStreamEventSchema,
} from './responses.js';
import { SearchRequestSchema, SearchResponseSchema } from './search.js';

export const OPENAPI_VERSION = '3.1.0';
export const API_VERSION = '1.0.0';
export const API_TITLE = 'Inference API';

type Json = Record<string, unknown>;
type Io = 'input' | 'output';

export interface OpenApiOptions {
  /** Host root of the service (the paths carry /v1 themselves, /mcp sits at the root). */
  serverUrl?: string;
}

const COMPONENT_PREFIX = '#/components/schemas/';
const DEFS_PREFIX = '#/$defs/';

/**
 * Collects component schemas. Each zod schema is converted on its own with z.toJSONSchema; sub-schemas
 * that carry a `.meta({id})` come out in `$defs` and are hoisted into `components.schemas`, with every
 * `$ref` rewritten to point there. A request (input side) and a response (output side) that share an
 * id but convert differently get two components, the second one suffixed `Input` / `Output`.
 */
class Components {
  readonly schemas: Record<string, Json> = {};

  ref(schema: z.ZodType, io: Io): Json {
    const json = z.toJSONSchema(schema, {
      target: 'draft-2020-12',
      io,
      // Responses may gain fields over time (the spec adds capabilities without breaking fields): an
      // output object is therefore left open instead of zod's `additionalProperties: false`.
      override: ({ jsonSchema }) => {
        if (io === 'output' && jsonSchema.additionalProperties === false)
          delete jsonSchema.additionalProperties;
      },
    }) as Json;
    const { $schema: _schema, $defs, ...root } = json;
    const defs = ($defs ?? {}) as Record<string, Json>;

    // Name each def: its id, unless that name holds a different schema already.
    const names = new Map<string, string>(Object.keys(defs).map((k) => [k, k]));
    for (let changed = true; changed; ) {
      changed = false;
      for (const [id, def] of Object.entries(defs)) {
        const name = names.get(id) as string;
        const existing = this.schemas[name];
        if (existing && !sameJson(existing, rewriteRefs(def, names))) {
          const alt = `${id}${io === 'input' ? 'Input' : 'Output'}`;
          if (name === alt) throw new Error(`OpenAPI: two different schemas both named ${alt}`);
          names.set(id, alt);
          changed = true;
        }
      }
    }
    for (const [id, def] of Object.entries(defs)) {
      this.schemas[names.get(id) as string] = rewriteRefs(def, names);
    }
    return rewriteRefs(root, names);
  }
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function rewriteRefs(node: Json, names: Map<string, string>): Json {
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (v === null || typeof v !== 'object') return v;
    const out: Json = {};
    for (const [k, val] of Object.entries(v)) {
      if (k === '$ref' && typeof val === 'string' && val.startsWith(DEFS_PREFIX)) {
        const id = decodeURIComponent(val.slice(DEFS_PREFIX.length)).replace(/~1/g, '/').replace(/~0/g, '~');
        out[k] = COMPONENT_PREFIX + (names.get(id) ?? id);
      } else {
        out[k] = walk(val);
      }
    }
    return out;
  };
  return walk(node) as Json;
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Invalid or malformed parameter (`param` names it), or content blocked by the safety filter.',
  401: "Missing or invalid API key, or the key's tier does not reach the model.",
  402: "The model's token allowance is spent until its quota period resets (not retryable).",
  403: 'The key tier cannot use this endpoint (`tier_restricted`).',
  404: 'The model does not exist (`model_not_found`).',
  429: 'Rate limit, concurrency limit or quota exceeded.',
  410: 'The signed URL has expired (images are kept about 60 minutes).',
  503: 'Web search is temporarily unavailable.',
  524: 'Timeout (typical for long audio: split it into segments of 2 minutes or less).',
};

/**
 * What every model endpoint may answer besides 200: a bad parameter (400), a missing or invalid key or a
 * tier that does not reach the model (401), a spent allowance (402), an unknown model (404
 * model_not_found), a rate, concurrency or quota limit (429 with Retry-After).
 */
const MODEL_ERRORS = [400, 401, 402, 404, 429];

const binary = (contentMediaType = 'application/octet-stream'): Json => ({
  type: 'string',
  format: 'binary',
  contentMediaType,
});

const jsonContent = (schema: Json): Json => ({ 'application/json': { schema } });

interface OperationSpec {
  id: string;
  summary: string;
  tag: string;
  method?: 'get' | 'post' | 'delete';
  requestBody?: Json;
  ok: Json;
  errors: number[];
  /** Whether its 429 carries Retry-After (default: yes, every limit refusal does). */
  retryAfter?: boolean;
  parameters?: Json[];
  /** Overrides the document's bearer-key security (e.g. `[]` for a public, signed route). */
  security?: Json[];
  /** Descriptions of this operation's error statuses where they differ from STATUS_TEXT. */
  errorText?: Record<number, string>;
  /** The error body of this operation when it is not the spec's Error (Anthropic's, on /v1/messages). */
  errorBody?: Json;
}

/**
 * The OpenAPI 3.1 description of the public API, generated from the contracts' zod schemas (requests
 * on their input side, responses on their output side). Pure: builds a fresh object on every call.
 */
export function buildOpenApiDocument(opts: OpenApiOptions = {}): Json {
  const c = new Components();
  const req = (s: z.ZodType) => c.ref(s, 'input');
  const res = (s: z.ZodType) => c.ref(s, 'output');
  const errorRef = res(ErrorBodySchema);

  const jsonBody = (s: z.ZodType): Json => ({ required: true, content: jsonContent(req(s)) });
  const formBody = (s: z.ZodType, files: Json, required: string[]): Json => ({
    required: true,
    content: {
      'multipart/form-data': {
        schema: { allOf: [req(s), { type: 'object', properties: files, required }] },
      },
    },
  });
  const ok = (description: string, content: Json): Json => ({ description, content });
  const streamed = (description: string, body: Json, event: Json, framing: string): Json =>
    ok(description, {
      ...jsonContent(body),
      'text/event-stream': { schema: { ...event, description: framing } },
    });

  const ops: Record<string, OperationSpec> = {
    '/v1/models': {
      id: 'listModels',
      summary: 'List the models available to the calling key, most capable first',
      tag: 'Models',
      method: 'get',
      ok: ok('The model list.', jsonContent(res(ModelListSchema))),
      errors: [401],
    },
    '/v1/models/{model}': {
      id: 'retrieveModel',
      summary: 'Retrieve one model available to the calling key',
      tag: 'Models',
      method: 'get',
      parameters: [{ name: 'model', in: 'path', required: true, schema: { type: 'string' } }],
      ok: ok('The model.', jsonContent(res(ModelSchema))),
      errors: [401, 404],
    },
    '/v1/usage': {
      id: 'getUsage',
      summary:
        "The calling key's and its member's usage, limits, remaining allowances and reset times for the current billing period (query parameters are ignored: never another member's data)",
      tag: 'Usage',
      method: 'get',
      ok: ok('The usage of the current period.', jsonContent(res(SelfUsageSchema))),
      errors: [401],
    },
    '/v1/chat/completions': {
      id: 'createChatCompletion',
      summary: 'Create a chat completion',
      tag: 'Chat',
      requestBody: jsonBody(ChatCompletionRequestSchema),
      ok: streamed(
        'A ChatCompletion, or with `stream: true` a stream of chunks.',
        res(ChatCompletionSchema),
        res(ChatCompletionChunkSchema),
        'Each event is a `data:` line with a ChatCompletionChunk and a blank line; the stream ends with `data: [DONE]`.',
      ),
      errors: MODEL_ERRORS,
    },
    '/v1/messages': {
      id: 'createMessage',
      summary:
        "Create a message (Anthropic's Messages API, for Anthropic's SDKs and Claude Code; `?beta=true` too; key as `x-api-key` or Bearer)",
      tag: 'Messages',
      requestBody: jsonBody(AnthropicMessagesRequestSchema),
      ok: streamed(
        'An AnthropicMessage, or with `stream: true` the Messages event stream.',
        res(AnthropicMessageSchema),
        res(AnthropicStreamEventSchema),
        'Typed SSE events (`event: <type>` + `data:`): `message_start`, `ping`, per content block `content_block_start`, `content_block_delta` (`text_delta`, `thinking_delta`, `signature_delta`, `input_json_delta`), `content_block_stop`, then `message_delta` (stop_reason, usage) and `message_stop`; a failure after the start is an `error` event.',
      ),
      errors: [...MODEL_ERRORS, 529],
      errorBody: res(AnthropicErrorBodySchema),
      errorText: { 529: 'No model replica can take the request now (our 503); retry.' },
    },
    '/v1/messages/count_tokens': {
      id: 'countMessageTokens',
      summary:
        "Count the input tokens of a Messages request (Anthropic's API), as the model's engine counts them",
      tag: 'Messages',
      requestBody: jsonBody(AnthropicCountTokensRequestSchema),
      ok: ok('The count.', jsonContent(res(AnthropicCountTokensResponseSchema))),
      errors: [400, 401, 404, 429],
      errorBody: res(AnthropicErrorBodySchema),
    },
    '/v1/completions': {
      id: 'createCompletion',
      summary: 'Create a text completion (legacy)',
      tag: 'Completions',
      requestBody: jsonBody(CompletionRequestSchema),
      ok: streamed(
        'A Completion, or with `stream: true` a stream of chunks.',
        res(CompletionSchema),
        res(CompletionChunkSchema),
        'Each event is a `data:` line with a `text_completion` chunk; the stream ends with `data: [DONE]`.',
      ),
      errors: MODEL_ERRORS,
    },
    '/v1/responses': {
      id: 'createResponse',
      summary: 'Create a model response (Responses format)',
      tag: 'Responses',
      requestBody: jsonBody(ResponseRequestSchema),
      ok: streamed(
        'A ResponseObject, or with `stream: true` the Responses event sequence.',
        res(ResponseObjectSchema),
        res(ResponseStreamEventSchema),
        'Typed SSE events (`event: <type>` + `data:`), no `[DONE]`: `response.created`, `response.in_progress`, output item and content part added/done, `response.reasoning_text.delta`, `response.output_text.delta`, `response.function_call_arguments.delta` and their `.done` events, for the hosted web_search tool `response.web_search_call.in_progress`/`.searching`/`.completed`, each with `sequence_number`; last `response.completed` carrying the whole ResponseObject (a client may read only that one).',
      ),
      errors: MODEL_ERRORS,
    },
    '/v1/responses/{response_id}': {
      id: 'retrieveResponse',
      summary: 'Retrieve a stored response (made with `store` true, the default, by the same member)',
      tag: 'Responses',
      method: 'get',
      parameters: [{ name: 'response_id', in: 'path', required: true, schema: { type: 'string' } }],
      ok: ok('The ResponseObject as it was answered.', jsonContent(res(ResponseObjectSchema))),
      errors: [401, 404],
      errorText: { 404: "No such response (or another member's, deleted, or past its retention)." },
    },
    'delete /v1/responses/{response_id}': {
      id: 'deleteResponse',
      summary: 'Delete a stored response',
      tag: 'Responses',
      method: 'delete',
      parameters: [{ name: 'response_id', in: 'path', required: true, schema: { type: 'string' } }],
      ok: ok('Deleted.', jsonContent(res(ResponseDeletedSchema))),
      errors: [401, 404],
      errorText: { 404: "No such response (or another member's, deleted, or past its retention)." },
    },
    '/v1/responses/{response_id}/input_items': {
      id: 'listResponseInputItems',
      summary: "A page of a stored response's input items (the whole chain the model saw, each with an id)",
      tag: 'Responses',
      method: 'get',
      parameters: [
        { name: 'response_id', in: 'path', required: true, schema: { type: 'string' } },
        { name: 'after', in: 'query', schema: { type: 'string' } },
        { name: 'before', in: 'query', schema: { type: 'string' } },
        { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 } },
        { name: 'order', in: 'query', schema: { type: 'string', enum: ['asc', 'desc'], default: 'desc' } },
      ],
      ok: ok('A page of input items.', jsonContent(res(ResponseInputItemListSchema))),
      errors: [400, 401, 404],
      errorText: { 404: "No such response (or another member's, deleted, or past its retention)." },
    },
    '/v1/embeddings': {
      id: 'createEmbedding',
      summary: 'Create embedding vectors',
      tag: 'Embeddings',
      requestBody: jsonBody(EmbeddingRequestSchema),
      ok: ok('The vectors, in the order of `input`.', jsonContent(res(EmbeddingListSchema))),
      errors: MODEL_ERRORS,
    },
    '/v1/rerank': {
      id: 'rerank',
      summary: 'Rerank documents by relevance to a query',
      tag: 'Rerank',
      requestBody: jsonBody(RerankRequestSchema),
      ok: ok('Results sorted by descending relevance.', jsonContent(res(RerankResponseSchema))),
      errors: MODEL_ERRORS,
    },
    '/v2/rerank': {
      id: 'rerankV2',
      summary: 'Rerank documents (alias of /v1/rerank)',
      tag: 'Rerank',
      requestBody: jsonBody(RerankRequestSchema),
      ok: ok('Results sorted by descending relevance.', jsonContent(res(RerankResponseSchema))),
      errors: MODEL_ERRORS,
    },
    '/v1/audio/speech': {
      id: 'createSpeech',
      summary: 'Synthesize speech from text',
      tag: 'Audio',
      requestBody: jsonBody(SpeechRequestSchema),
      ok: ok(
        'The raw audio file in the requested `response_format`, with no JSON wrapper.',
        Object.fromEntries(Object.values(AUDIO_CONTENT_TYPES).map((ct) => [ct, { schema: binary(ct) }])),
      ),
      errors: MODEL_ERRORS,
    },
    '/v1/audio/transcriptions': {
      id: 'createTranscription',
      summary: 'Transcribe audio to text',
      tag: 'Audio',
      requestBody: formBody(
        TranscriptionRequestSchema,
        { file: { ...binary(), description: 'The audio file, at most 25 MB.' } },
        ['file'],
      ),
      ok: ok('The transcript.', jsonContent(res(TranscriptionResponseSchema))),
      errors: [...MODEL_ERRORS, 524],
    },
    '/v1/images/generations': {
      id: 'createImage',
      summary: 'Generate images from a prompt',
      tag: 'Images',
      requestBody: jsonBody(ImageGenerationRequestSchema),
      ok: ok('The generated images.', jsonContent(res(ImageResponseSchema))),
      errors: [...MODEL_ERRORS, 403],
    },
    '/v1/images/edits': {
      id: 'createImageEdit',
      summary: 'Edit or vary images from a prompt',
      tag: 'Images',
      requestBody: formBody(
        ImageEditRequestSchema,
        {
          image: {
            description:
              'PNG, JPEG or WebP, each under 25 MB; repeat (or send `image[]`) for several, up to 4 used.',
            anyOf: [binary(), { type: 'array', items: binary() }],
          },
        },
        ['image'],
      ),
      ok: ok('The edited images.', jsonContent(res(ImageResponseSchema))),
      errors: [...MODEL_ERRORS, 403],
    },
    '/v1/search': {
      id: 'search',
      summary: 'Search the web',
      tag: 'Search',
      requestBody: jsonBody(SearchRequestSchema),
      ok: ok(
        'Search results (`cached: true` when served from the cache).',
        jsonContent(res(SearchResponseSchema)),
      ),
      errors: [400, 401, 429, 503],
      retryAfter: true,
    },
    '/v1/search/tool': {
      id: 'getWebSearchTool',
      summary: 'The web_search function definition, ready for a chat request `tools` list',
      tag: 'Search',
      method: 'get',
      ok: ok('The function tool (the parameters of POST /v1/search).', jsonContent(res(ToolSchema))),
      errors: [401],
    },
    '/v1/images/files/{file}': {
      id: 'getImageFile',
      summary: 'Download a generated image from the signed URL an images response gave (no API key)',
      tag: 'Images',
      method: 'get',
      security: [],
      parameters: [
        { name: 'file', in: 'path', required: true, schema: { type: 'string' } },
        { name: 'expires', in: 'query', required: true, schema: { type: 'integer' } },
        { name: 'sig', in: 'query', required: true, schema: { type: 'string' } },
      ],
      ok: ok('The image bytes.', { 'image/png': { schema: binary('image/png') } }),
      errors: [404, 410],
    },
    '/v1/files': {
      id: 'createFile',
      summary: 'Upload a JSONL file of batch requests (purpose `batch`; at most 200 MB and 50,000 lines)',
      tag: 'Files',
      requestBody: {
        required: true,
        content: {
          'multipart/form-data': {
            schema: {
              type: 'object',
              properties: {
                file: {
                  ...binary('application/jsonl'),
                  description: 'The JSONL file, one request per line.',
                },
                purpose: { type: 'string', enum: ['batch'] },
              },
              required: ['file', 'purpose'],
            },
          },
        },
      },
      ok: ok(
        'The file object (kept for the retention period: `expires_at`).',
        jsonContent(res(FileObjectSchema)),
      ),
      errors: [400, 401],
    },
    'get /v1/files': {
      id: 'listFiles',
      summary: "List the caller's files, newest first (cursor pagination)",
      tag: 'Files',
      method: 'get',
      parameters: [
        {
          name: 'after',
          in: 'query',
          schema: { type: 'string' },
          description: 'A file id: the page after it.',
        },
        {
          name: 'limit',
          in: 'query',
          schema: { type: 'integer', minimum: 1, maximum: 10000, default: 10000 },
        },
        { name: 'order', in: 'query', schema: { type: 'string', enum: ['asc', 'desc'], default: 'desc' } },
        { name: 'purpose', in: 'query', schema: { type: 'string' } },
      ],
      ok: ok('A page of file objects.', jsonContent(res(FileListSchema))),
      errors: [400, 401],
    },
    '/v1/files/{file_id}': {
      id: 'retrieveFile',
      summary: 'Retrieve a file object',
      tag: 'Files',
      method: 'get',
      parameters: [{ name: 'file_id', in: 'path', required: true, schema: { type: 'string' } }],
      ok: ok('The file object.', jsonContent(res(FileObjectSchema))),
      errors: [401, 404],
      errorText: { 404: "No such file (or another member's, or expired)." },
    },
    'delete /v1/files/{file_id}': {
      id: 'deleteFile',
      summary: 'Delete a file',
      tag: 'Files',
      method: 'delete',
      parameters: [{ name: 'file_id', in: 'path', required: true, schema: { type: 'string' } }],
      ok: ok('Deleted.', jsonContent(res(FileDeletedSchema))),
      errors: [401, 404],
      errorText: { 404: "No such file (or another member's, or expired)." },
    },
    '/v1/files/{file_id}/content': {
      id: 'downloadFile',
      summary:
        'Download the bytes of a file (batch output and error files are JSONL, one line per input line)',
      tag: 'Files',
      method: 'get',
      parameters: [{ name: 'file_id', in: 'path', required: true, schema: { type: 'string' } }],
      ok: ok('The file bytes.', { 'application/jsonl': { schema: binary('application/jsonl') } }),
      errors: [401, 404],
      errorText: { 404: "No such file (or another member's, or expired)." },
    },
    '/v1/batches': {
      id: 'createBatch',
      summary: 'Create a batch from an uploaded JSONL file; it runs in the low-priority lane within 24 h',
      tag: 'Batch',
      requestBody: jsonBody(BatchCreateRequestSchema),
      ok: ok('The batch (status `validating`).', jsonContent(res(BatchObjectSchema))),
      errors: [400, 401],
    },
    'get /v1/batches': {
      id: 'listBatches',
      summary: "List the caller's batches, newest first (cursor pagination)",
      tag: 'Batch',
      method: 'get',
      parameters: [
        {
          name: 'after',
          in: 'query',
          schema: { type: 'string' },
          description: 'A batch id: the page after it.',
        },
        { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 } },
      ],
      ok: ok('A page of batches.', jsonContent(res(BatchListSchema))),
      errors: [400, 401],
    },
    '/v1/batches/{batch_id}': {
      id: 'retrieveBatch',
      summary: 'Retrieve a batch (status, request_counts, output and error file ids)',
      tag: 'Batch',
      method: 'get',
      parameters: [{ name: 'batch_id', in: 'path', required: true, schema: { type: 'string' } }],
      ok: ok('The batch.', jsonContent(res(BatchObjectSchema))),
      errors: [401, 404],
      errorText: { 404: "No such batch (or another member's)." },
    },
    '/v1/batches/{batch_id}/cancel': {
      id: 'cancelBatch',
      summary:
        'Cancel a batch: no new line starts within a second; it finalizes as `cancelled` with what completed',
      tag: 'Batch',
      parameters: [{ name: 'batch_id', in: 'path', required: true, schema: { type: 'string' } }],
      ok: ok('The batch (status `cancelling`).', jsonContent(res(BatchObjectSchema))),
      errors: [401, 404, 409],
      errorText: { 404: "No such batch (or another member's).", 409: 'The batch has already finished.' },
    },
    '/mcp': {
      id: 'mcp',
      summary: 'Remote tool server (MCP, stateless streamable HTTP, JSON-RPC 2.0)',
      tag: 'MCP',
      requestBody: jsonBody(JsonRpcMessageSchema),
      ok: ok(
        'A JSON-RPC response; protocol-level failures are in its `error` member.',
        jsonContent(res(JsonRpcResponseSchema)),
      ),
      errors: [401, 429],
      retryAfter: true,
    },
  };

  const paths: Record<string, Json> = {};
  for (const [key, op] of Object.entries(ops)) {
    // A key is the path, or `<method> <path>` for a second operation on a path.
    const path = key.includes(' ') ? key.slice(key.indexOf(' ') + 1) : key;
    const responses: Json = { 200: op.ok };
    if (path === '/mcp') responses[202] = { description: 'A notification was accepted (no body).' };
    for (const status of op.errors) {
      const r: Json = {
        description: op.errorText?.[status] ?? STATUS_TEXT[status],
        content: jsonContent(op.errorBody ?? errorRef),
      };
      if (status === 429 && (op.retryAfter ?? true)) {
        r.headers = {
          'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } },
        };
      }
      responses[status] = r;
    }
    const operation: Json = { operationId: op.id, summary: op.summary, tags: [op.tag] };
    if (op.parameters) operation.parameters = op.parameters;
    if (op.security) operation.security = op.security;
    if (op.requestBody) operation.requestBody = op.requestBody;
    operation.responses = responses;
    paths[path] = { ...paths[path], [op.method ?? 'post']: operation };
  }
  // The operator console's API (/admin), with its own credentials (openapi-admin.ts).
  addAdminPaths(paths, req, res, errorRef);

  return {
    openapi: OPENAPI_VERSION,
    info: {
      title: API_TITLE,
      version: API_VERSION,
      description:
        'OpenAI-compatible inference API: chat, completions, responses, embeddings, rerank, speech, transcription, images, web search, files and batches, and a remote tool (MCP) endpoint.',
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    servers: [{ url: opts.serverUrl ?? '/' }],
    security: [{ bearerAuth: [] }],
    tags: [...new Set([...Object.values(ops).map((o) => o.tag), 'Admin'])].map((name) => ({ name })),
    paths,
    components: {
      schemas: c.schemas,
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <API_KEY>' },
        ...ADMIN_SECURITY_SCHEMES,
      },
    },
  };
}
