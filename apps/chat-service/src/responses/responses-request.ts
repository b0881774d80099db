import {
  ApiError,
  type CatalogEntry,
  type ContentPart,
  type ResponseCustomTool,
  type ResponseFormat,
  type ResponseFunctionTool,
  type ResponseInputItem,
  type ResponseInputMessage,
  type ResponseRequest,
  type ResponseTextFormat,
  type ResponseTool,
  type ResponseToolChoice,
  type Tool,
  type ToolCall,
  type ToolChoice,
} from '@infer/contracts';
import type { EngineMessage, EngineReasoning } from '../engines/engine.js';
import { schemaProblem } from '../structured/json-schema.js';

/**
 * `reasoning.effort` onto the model's reasoning mode (OpenAI's efforts, wider than the engines'):
 * - `effort` models: minimal/low -> low, medium -> medium, high/xhigh/max -> high; `none` -> low (the
 *   least they do);
 * - models with an on/off switch: `none` switches reasoning off, any other effort on;
 * - models that always reason: any effort is accepted and changes nothing (as chat-B's reasoning_effort);
 * - models without reasoning: `none` (asks for nothing) is accepted, any other effort is a 400 naming
 *   `reasoning.effort`, as OpenAI answers for its non-reasoning models.
 * No effort: the model's default.
 */
export function responsesReasoning(
  model: Pick<CatalogEntry, 'id' | 'capabilities'>,
  effort: string | null,
): EngineReasoning | null {
  const mode = model.capabilities.reasoning;
  switch (mode) {
    case 'effort':
      return {
        effort:
          effort === null || effort === 'medium'
            ? 'medium'
            : effort === 'high' || effort === 'xhigh' || effort === 'max'
              ? 'high'
              : 'low',
      };
    case 'always':
    case 'fixed_on':
      return { effort: null };
    case 'default_on':
      return effort === 'none' ? null : { effort: null };
    case 'default_off':
      return effort === null || effort === 'none' ? null : { effort: null };
    default:
      if (effort !== null && effort !== 'none') {
        throw ApiError.invalid(
          `The model '${model.id}' does not reason: reasoning.effort '${effort}' is not supported (leave it out, or 'none').`,
          'reasoning.effort',
        );
      }
      return null;
  }
}

/**
 * The Responses API's request fields mapped onto the chat engine's input, with the same rules (and the
 * same 400s) as /v1/chat/completions, each naming the Responses field:
 * - `input` items: messages, `function_call` (a call the model made, replayed) and
 *   `function_call_output` (its result; must answer an earlier call), `reasoning` (folded into the
 *   next assistant turn as its reasoning);
 * - `tools` (flat function tools) and `tool_choice`, on models whose capabilities list `tools`;
 * - `text.format` (`json_object`, `json_schema`), on models whose capabilities list `response_format`.
 */
/** What an engine function name stands for in the Responses API (the way back out). */
export type OfferedTool =
  | { kind: 'function'; name: string; namespace?: string }
  | { kind: 'custom'; name: string; namespace?: string }
  | { kind: 'web_search' };

/** Engine name of a function inside a `namespace` tool: `<namespace>__<name>`. */
export const qualifiedName = (namespace: string, name: string) => `${namespace}__${name}`;

/** The one function the model calls for a hosted `web_search` tool. */
export const WEB_SEARCH_FUNCTION = 'web_search';

export interface ResponsesEngineFields {
  messages: EngineMessage[];
  /** For each engine message, the index of its `input` item (-1: instructions or a string input). */
  inputIndex: number[];
  tools: Tool[];
  /** Engine function name -> what it is in the Responses API. */
  offered: Map<string, OfferedTool>;
  /** The hosted web_search tool was offered. */
  webSearch: boolean;
  tool_choice: ToolChoice;
  parallel_tool_calls: boolean;
  response_format: ResponseFormat | null;
  /** What the response object echoes. */
  echo: { tool_choice: ResponseToolChoice; text: { format: ResponseTextFormat } };
}

export interface ResponsesFieldOptions {
  /** Hosted web_search can run (a search client is configured); otherwise the tool is a 400. */
  hostedSearch?: boolean;
  /** Opens a sealed reasoning blob (`encrypted_content`); throws the 400 naming `param`. */
  openSealed?: (blob: string, param: string) => string;
}

const customParameters = (format: ResponseCustomTool['format']) => ({
  type: 'object',
  properties: {
    input: {
      type: 'string',
      description:
        format?.type === 'grammar'
          ? `Free-form input matching this ${format.syntax} grammar:\n${format.definition}`
          : 'Free-form input.',
    },
  },
  required: ['input'],
});

/** The Responses tools as engine functions, and the map back. Each failure names its field. */
function offerTools(
  rtools: ResponseTool[],
  opts: ResponsesFieldOptions,
): { tools: Tool[]; offered: Map<string, OfferedTool>; webSearch: boolean } {
  const tools: Tool[] = [];
  const offered = new Map<string, OfferedTool>();
  let webSearch = false;
  const add = (name: string, param: string, tool: Tool, what: OfferedTool) => {
    if (name.length > 64) {
      throw ApiError.invalid(
        `The qualified function name '${name}' is over 64 characters; shorten the namespace or the function name.`,
        param,
      );
    }
    if (offered.has(name)) throw ApiError.invalid(`Duplicate function name '${name}' in tools.`, param);
    tools.push(tool);
    offered.set(name, what);
  };
  const fn = (t: ResponseFunctionTool, param: string, namespace?: string) => {
    const problem = t.parameters ? schemaProblem(t.parameters) : null;
    if (problem)
      throw ApiError.invalid(
        `Invalid JSON schema in ${param}.parameters: ${problem}.`,
        `${param}.parameters`,
      );
    const name = namespace ? qualifiedName(namespace, t.name) : t.name;
    add(
      name,
      `${param}.name`,
      {
        type: 'function',
        function: {
          name,
          ...(t.description != null ? { description: t.description } : {}),
          ...(t.parameters != null ? { parameters: t.parameters } : {}),
          ...(t.strict != null ? { strict: t.strict } : {}),
        },
      },
      namespace ? { kind: 'function', name: t.name, namespace } : { kind: 'function', name: t.name },
    );
  };
  const custom = (t: ResponseCustomTool, param: string, namespace?: string) => {
    const name = namespace ? qualifiedName(namespace, t.name) : t.name;
    add(
      name,
      `${param}.name`,
      {
        type: 'function',
        function: {
          name,
          ...(t.description != null ? { description: t.description } : {}),
          parameters: customParameters(t.format),
        },
      },
      namespace ? { kind: 'custom', name: t.name, namespace } : { kind: 'custom', name: t.name },
    );
  };
  for (const [i, t] of rtools.entries()) {
    const param = `tools[${i}]`;
    switch (t.type) {
      case 'function':
        fn(t, param);
        break;
      case 'custom':
        custom(t, param);
        break;
      case 'namespace':
        for (const [j, inner] of t.tools.entries()) {
          if (inner.type === 'function') fn(inner, `${param}.tools[${j}]`, t.name);
          else custom(inner, `${param}.tools[${j}]`, t.name);
        }
        break;
      default: {
        if (!opts.hostedSearch) {
          throw ApiError.invalid(
            `The hosted '${t.type}' tool is not available on this deployment (no search service).`,
            `${param}.type`,
          );
        }
        if (webSearch) throw ApiError.invalid('Only one web_search tool may be offered.', `${param}.type`);
        webSearch = true;
        add(
          WEB_SEARCH_FUNCTION,
          `${param}.type`,
          {
            type: 'function',
            function: {
              name: WEB_SEARCH_FUNCTION,
              description: 'Search the web. Returns titles, URLs and snippets of the best results.',
              parameters: {
                type: 'object',
                properties: { query: { type: 'string', description: 'What to search the web for.' } },
                required: ['query'],
              },
            },
          },
          { kind: 'web_search' },
        );
      }
    }
  }
  return { tools, offered, webSearch };
}

export function responsesEngineFields(
  body: ResponseRequest,
  model: Pick<CatalogEntry, 'id' | 'capabilities'>,
  opts: ResponsesFieldOptions = {},
): ResponsesEngineFields {
  const caps = model.capabilities;
  if (body.stream === true && !caps.streaming) {
    throw ApiError.invalid(`The model '${model.id}' does not support streaming.`, 'stream');
  }
  if (body.previous_response_id) {
    // The gateway replaces a stored response's id with its items; one that got here is unknown.
    throw new ApiError(404, `Previous response with id '${body.previous_response_id}' not found.`, {
      type: 'invalid_request_error',
      param: 'previous_response_id',
      code: 'not_found',
    });
  }
  const rtools = body.tools ?? [];
  if (rtools.length && !caps.tools) {
    throw ApiError.invalid(`The model '${model.id}' does not support tools.`, 'tools');
  }
  const { tools, offered, webSearch } = offerTools(rtools, opts);
  const format = body.text?.format ?? { type: 'text' as const };
  if (format.type !== 'text' && !caps.response_format) {
    throw ApiError.invalid(
      `The model '${model.id}' does not support text.format '${format.type}'; structured output is available on the models whose capabilities list it.`,
      'text.format',
    );
  }
  if (format.type === 'json_schema') {
    const problem = schemaProblem(format.schema);
    if (problem)
      throw ApiError.invalid(`Invalid JSON schema in text.format: ${problem}.`, 'text.format.schema');
  }
  const choice = body.tool_choice ?? undefined;
  let toolChoice: ToolChoice;
  if (choice === undefined) toolChoice = tools.length ? 'auto' : 'none';
  else if (choice === 'none' || choice === 'auto') toolChoice = tools.length ? choice : 'none';
  else {
    if (!tools.length) {
      throw ApiError.invalid(
        'tool_choice requires tools: pass the functions the model may call in tools.',
        'tool_choice',
      );
    }
    const forced =
      typeof choice === 'object'
        ? choice.type === 'function' && choice.namespace
          ? qualifiedName(choice.namespace, choice.name)
          : choice.name
        : null;
    if (forced !== null && offered.get(forced)?.kind !== (choice as { type: string }).type) {
      throw ApiError.invalid(
        `tool_choice names the ${(choice as { type: string }).type} tool '${forced}', which is not among tools.`,
        'tool_choice',
      );
    }
    toolChoice = forced !== null ? { type: 'function', function: { name: forced } } : (choice as 'required');
  }
  const response_format: ResponseFormat | null =
    format.type === 'json_object'
      ? { type: 'json_object' }
      : format.type === 'json_schema'
        ? {
            type: 'json_schema',
            json_schema: {
              name: format.name,
              schema: format.schema,
              ...(format.description !== undefined ? { description: format.description } : {}),
              ...(format.strict != null ? { strict: format.strict } : {}),
            },
          }
        : null;
  const { messages, inputIndex } = toEngineMessages(body, opts.openSealed);
  return {
    messages,
    inputIndex,
    tools,
    offered,
    webSearch,
    tool_choice: toolChoice,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    response_format,
    echo: { tool_choice: choice ?? (tools.length ? 'auto' : 'none'), text: { format } },
  };
}

/**
 * `instructions` as a system message, then the input items as engine messages (namespaced calls under
 * their qualified names); `openSealed` opens replayed `encrypted_content`.
 */
export function toEngineMessages(
  body: ResponseRequest,
  openSealed?: (blob: string, param: string) => string,
): { messages: EngineMessage[]; inputIndex: number[] } {
  const messages: EngineMessage[] = [];
  const inputIndex: number[] = [];
  if (body.instructions) {
    messages.push({ role: 'system', content: body.instructions });
    inputIndex.push(-1);
  }
  if (typeof body.input === 'string') {
    messages.push({ role: 'user', content: body.input });
    inputIndex.push(-1);
    return { messages, inputIndex };
  }
  const calls = new Set<string>();
  let reasoning = '';
  /** The assistant turn being built from consecutive function_call items (one message, many calls). */
  let turn: Extract<EngineMessage, { role: 'assistant' }> | null = null;
  for (const [i, item] of body.input.entries()) {
    const it = item as ResponseInputItem;
    if ('type' in it && it.type === 'item_reference') {
      // The gateway replaces references with the items it kept; one that got here is unknown.
      throw ApiError.invalid(`input[${i}] references the unknown item '${it.id}'.`, `input[${i}].id`);
    }
    if ('type' in it && it.type === 'reasoning') {
      if (it.encrypted_content) {
        const param = `input[${i}].encrypted_content`;
        if (!openSealed) {
          throw ApiError.invalid('This reasoning item was not sealed by this platform.', param);
        }
        reasoning += openSealed(it.encrypted_content, param);
        continue;
      }
      reasoning += [...(it.content ?? []), ...(it.summary ?? [])].map((p) => p.text).join('\n');
      continue;
    }
    if ('type' in it && it.type === 'web_search_call') {
      // A hosted search of an earlier turn: its results reached the model then; nothing to replay.
      continue;
    }
    if ('type' in it && (it.type === 'function_call' || it.type === 'custom_tool_call')) {
      const engineName = it.namespace ? qualifiedName(it.namespace, it.name) : it.name;
      const call: ToolCall = {
        id: it.call_id,
        type: 'function',
        function: {
          name: engineName,
          arguments: it.type === 'custom_tool_call' ? JSON.stringify({ input: it.input }) : it.arguments,
        },
      };
      calls.add(it.call_id);
      if (!turn) {
        turn = { role: 'assistant', content: null, tool_calls: [] };
        if (reasoning) turn.reasoning_content = reasoning;
        reasoning = '';
        messages.push(turn);
        inputIndex.push(i);
      }
      turn.tool_calls?.push(call);
      continue;
    }
    turn = null;
    if ('type' in it && (it.type === 'function_call_output' || it.type === 'custom_tool_call_output')) {
      if (!calls.has(it.call_id)) {
        throw ApiError.invalid(
          `input[${i}].call_id '${it.call_id}' does not answer a ${it.type === 'function_call_output' ? 'function_call' : 'custom_tool_call'} item earlier in input.`,
          `input[${i}].call_id`,
        );
      }
      const content = typeof it.output === 'string' ? it.output : it.output.map((p) => p.text).join('\n');
      messages.push({ role: 'tool', content, tool_call_id: it.call_id });
      inputIndex.push(i);
      continue;
    }
    const m = toEngineMessage(it as ResponseInputMessage, i);
    if (m.role === 'assistant') {
      if (reasoning) m.reasoning_content = reasoning;
      reasoning = '';
      // A message then calls of the same turn: the calls join this message.
      turn = m;
    }
    messages.push(m);
    inputIndex.push(i);
  }
  return { messages, inputIndex };
}

/** A Responses-format input message as an engine message; `i` is its index in `input` (for `param`). */
function toEngineMessage(item: ResponseInputMessage, i: number): EngineMessage {
  const parts =
    typeof item.content === 'string' ? [{ type: 'input_text' as const, text: item.content }] : item.content;
  const text = () =>
    parts
      .map((p, j) => {
        if (p.type === 'input_image') {
          throw ApiError.invalid('Images are accepted in user messages only.', `input[${i}].content[${j}]`);
        }
        return p.text;
      })
      .join('\n');
  switch (item.role) {
    case 'system':
    case 'developer':
      return { role: 'system', content: text() };
    case 'assistant':
      return { role: 'assistant', content: text() };
    case 'user': {
      if (parts.every((p) => p.type !== 'input_image')) return { role: 'user', content: text() };
      const content: ContentPart[] = parts.map((p) =>
        p.type === 'input_image'
          ? { type: 'image_url', image_url: { url: p.image_url, ...(p.detail ? { detail: p.detail } : {}) } }
          : { type: 'text', text: p.text },
      );
      return { role: 'user', content };
    }
  }
}
