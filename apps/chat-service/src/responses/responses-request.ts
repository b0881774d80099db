import {
  ApiError,
  type CatalogEntry,
  type ContentPart,
  type ResponseFormat,
  type ResponseInputItem,
  type ResponseInputMessage,
  type ResponseRequest,
  type ResponseTextFormat,
  type ResponseToolChoice,
  type Tool,
  type ToolCall,
  type ToolChoice,
} from '@infer/contracts';
import type { EngineMessage } from '../engines/engine.js';
import { schemaProblem } from '../structured/json-schema.js';

/**
 * The Responses API's request fields mapped onto the chat engine's input, with the same rules (and the
 * same 400s) as /v1/chat/completions, each naming the Responses field:
 * - `input` items: messages, `function_call` (a call the model made, replayed) and
 *   `function_call_output` (its result; must answer an earlier call), `reasoning` (folded into the
 *   next assistant turn as its reasoning);
 * - `tools` (flat function tools) and `tool_choice`, on models whose capabilities list `tools`;
 * - `text.format` (`json_object`, `json_schema`), on models whose capabilities list `response_format`.
 */
export interface ResponsesEngineFields {
  messages: EngineMessage[];
  /** For each engine message, the index of its `input` item (-1: instructions or a string input). */
  inputIndex: number[];
  tools: Tool[];
  tool_choice: ToolChoice;
  parallel_tool_calls: boolean;
  response_format: ResponseFormat | null;
  /** What the response object echoes. */
  echo: { tool_choice: ResponseToolChoice; text: { format: ResponseTextFormat } };
}

export function responsesEngineFields(
  body: ResponseRequest,
  model: Pick<CatalogEntry, 'id' | 'capabilities'>,
): ResponsesEngineFields {
  const caps = model.capabilities;
  if (body.stream === true && !caps.streaming) {
    throw ApiError.invalid(`The model '${model.id}' does not support streaming.`, 'stream');
  }
  const rtools = body.tools ?? [];
  if (rtools.length && !caps.tools) {
    throw ApiError.invalid(`The model '${model.id}' does not support tools.`, 'tools');
  }
  const names = new Set<string>();
  for (const [i, t] of rtools.entries()) {
    const problem = t.parameters ? schemaProblem(t.parameters) : null;
    if (problem) {
      throw ApiError.invalid(
        `Invalid JSON schema in tools[${i}].parameters: ${problem}.`,
        `tools[${i}].parameters`,
      );
    }
    if (names.has(t.name)) {
      throw ApiError.invalid(`Duplicate function name '${t.name}' in tools.`, `tools[${i}].name`);
    }
    names.add(t.name);
  }
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
  const tools: Tool[] = rtools.map((t) => ({
    type: 'function',
    function: {
      name: t.name,
      ...(t.description != null ? { description: t.description } : {}),
      ...(t.parameters != null ? { parameters: t.parameters } : {}),
      ...(t.strict != null ? { strict: t.strict } : {}),
    },
  }));
  const choice = body.tool_choice;
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
    if (typeof choice === 'object' && !names.has(choice.name)) {
      throw ApiError.invalid(
        `tool_choice names the function '${choice.name}', which is not among tools.`,
        'tool_choice',
      );
    }
    toolChoice = typeof choice === 'object' ? { type: 'function', function: { name: choice.name } } : choice;
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
  const { messages, inputIndex } = toEngineMessages(body);
  return {
    messages,
    inputIndex,
    tools,
    tool_choice: toolChoice,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    response_format,
    echo: { tool_choice: choice ?? (tools.length ? 'auto' : 'none'), text: { format } },
  };
}

/** `instructions` as a system message, then the input items as engine messages. */
export function toEngineMessages(body: ResponseRequest): { messages: EngineMessage[]; inputIndex: number[] } {
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
      reasoning += [...(it.content ?? []), ...(it.summary ?? [])].map((p) => p.text).join('\n');
      continue;
    }
    if ('type' in it && it.type === 'function_call') {
      const call: ToolCall = {
        id: it.call_id,
        type: 'function',
        function: { name: it.name, arguments: it.arguments },
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
    if ('type' in it && it.type === 'function_call_output') {
      if (!calls.has(it.call_id)) {
        throw ApiError.invalid(
          `input[${i}].call_id '${it.call_id}' does not answer a function_call item earlier in input.`,
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
