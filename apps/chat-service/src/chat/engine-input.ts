import {
  ApiError,
  type CatalogEntry,
  type ChatCompletionRequest,
  type Message,
  SAMPLING_DEFAULTS,
  type ToolChoice,
} from '@infer/contracts';
import type { EngineInput, EngineMessage, EngineReasoning } from '../engines/engine.js';
import { schemaProblem } from '../structured/json-schema.js';

/**
 * Whether the model reasons for this request, from its catalog mode and the request's switches:
 * - effort (chat-A): on; effort = `reasoning_effort` ?? 'medium'
 * - always (chat-B): on, and both switches are ignored (the spec says so)
 * - fixed_on (chat-C, chat-D, chat-G): on, no switch
 * - default_on (chat-E): `chat_template_kwargs.enable_thinking` ?? true
 * - default_off (chat-F): `chat_template_kwargs.enable_thinking` ?? false
 * - none: off, no switch
 * A switch the model does not have is a 400 naming it when it asks for something the model cannot
 * do: `reasoning_effort` anywhere but on `effort` models (and chat-B); `enable_thinking` on a model
 * without that switch unless it asks for what happens anyway (`false` on a model that does not
 * reason, `true` on one that always does).
 */
export function decideReasoning(
  model: Pick<CatalogEntry, 'id' | 'capabilities'>,
  body: Pick<ChatCompletionRequest, 'reasoning_effort' | 'chat_template_kwargs'>,
): EngineReasoning | null {
  const thinking = body.chat_template_kwargs?.enable_thinking;
  const mode = model.capabilities.reasoning;
  if (mode === 'always') return { effort: null };
  if (mode !== 'effort' && body.reasoning_effort) {
    throw ApiError.invalid(
      `The model '${model.id}' does not support reasoning_effort${mode === 'none' ? '' : ': its reasoning is not adjustable'}.`,
      'reasoning_effort',
    );
  }
  if (thinking !== undefined && mode !== 'default_on' && mode !== 'default_off') {
    const reasons = mode !== 'none';
    if (thinking !== reasons) {
      throw ApiError.invalid(
        reasons
          ? `The model '${model.id}' always reasons: its reasoning cannot be switched off with chat_template_kwargs.enable_thinking.`
          : `The model '${model.id}' does not support reasoning.`,
        'chat_template_kwargs.enable_thinking',
      );
    }
  }
  switch (mode) {
    case 'effort':
      return { effort: body.reasoning_effort ?? 'medium' };
    case 'fixed_on':
      return { effort: null };
    case 'default_on':
      return (thinking ?? true) ? { effort: null } : null;
    case 'default_off':
      return (thinking ?? false) ? { effort: null } : null;
    default:
      return null;
  }
}

/**
 * The rules of a chat request that depend on the model (its catalog entry) or on more than one field,
 * which the schema cannot see. Each failure is the spec's 400 with `param` naming the field.
 */
export function checkChatRequest(
  body: ChatCompletionRequest,
  model: Pick<CatalogEntry, 'id' | 'capabilities'>,
): void {
  const caps = model.capabilities;
  if (body.stream === true && !caps.streaming) {
    throw ApiError.invalid(`The model '${model.id}' does not support streaming.`, 'stream');
  }
  if (body.tools?.length && !caps.tools) {
    throw ApiError.invalid(`The model '${model.id}' does not support tools.`, 'tools');
  }
  const fmt = body.response_format;
  if (fmt && fmt.type !== 'text' && !caps.response_format) {
    throw ApiError.invalid(
      `The model '${model.id}' does not support response_format '${fmt.type}'; structured output is available on the models whose capabilities list it.`,
      'response_format',
    );
  }
  if (fmt?.type === 'json_schema') {
    const problem = schemaProblem(fmt.json_schema.schema);
    if (problem) {
      throw ApiError.invalid(
        `Invalid JSON schema in response_format: ${problem}.`,
        'response_format.json_schema.schema',
      );
    }
  }
  for (const [i, t] of (body.tools ?? []).entries()) {
    const params = t.function.parameters;
    const problem = params ? schemaProblem(params) : null;
    if (problem) {
      throw ApiError.invalid(
        `Invalid JSON schema in tools[${i}].function.parameters: ${problem}.`,
        `tools[${i}].function.parameters`,
      );
    }
  }
  const names = new Set<string>();
  for (const [i, t] of (body.tools ?? []).entries()) {
    if (names.has(t.function.name)) {
      throw ApiError.invalid(
        `Duplicate function name '${t.function.name}' in tools.`,
        `tools[${i}].function.name`,
      );
    }
    names.add(t.function.name);
  }
  // A tool message answers a call made by an earlier assistant message.
  const calls = new Set<string>();
  for (const [i, m] of body.messages.entries()) {
    if (m.role === 'assistant') for (const c of m.tool_calls ?? []) calls.add(c.id);
    if (m.role === 'tool' && !calls.has(m.tool_call_id)) {
      throw ApiError.invalid(
        `messages[${i}].tool_call_id '${m.tool_call_id}' does not answer a tool call of an earlier assistant message.`,
        `messages[${i}].tool_call_id`,
      );
    }
  }
}

/**
 * The engine-neutral form of a validated request for one choice: spec defaults applied, messages
 * normalized, tool_choice checked against the tools. Throws the spec's 400 for combinations the schema
 * cannot see.
 */
export function toEngineInput(
  body: ChatCompletionRequest,
  model: Pick<CatalogEntry, 'id' | 'capabilities'>,
  choice = 0,
): EngineInput {
  const tools = body.tools ?? [];
  return {
    model: model.id,
    messages: body.messages.map(normalizeMessage),
    sampling: {
      temperature: body.temperature ?? SAMPLING_DEFAULTS.temperature,
      top_p: body.top_p ?? SAMPLING_DEFAULTS.top_p,
      seed: body.seed ?? null,
      presence_penalty: body.presence_penalty ?? null,
      frequency_penalty: body.frequency_penalty ?? null,
      top_k: body.top_k ?? null,
    },
    max_tokens: body.max_completion_tokens ?? body.max_tokens ?? null,
    stop: (typeof body.stop === 'string' ? [body.stop] : (body.stop ?? [])).filter((s) => s.length > 0),
    tools,
    tool_choice: normalizeToolChoice(
      body.tool_choice ?? undefined,
      tools.map((t) => t.function.name),
    ),
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    response_format:
      body.response_format && body.response_format.type !== 'text' ? body.response_format : null,
    reasoning: decideReasoning(model, body),
    choice,
  };
}

function normalizeToolChoice(choice: ToolChoice | undefined, names: string[]): ToolChoice {
  if (choice === undefined) return names.length ? 'auto' : 'none';
  if (choice === 'none' || choice === 'auto') return names.length ? choice : 'none';
  if (!names.length) {
    throw ApiError.invalid(
      'tool_choice requires tools: pass the functions the model may call in tools.',
      'tool_choice',
    );
  }
  if (typeof choice === 'object' && !names.includes(choice.function.name)) {
    throw ApiError.invalid(
      `tool_choice names the function '${choice.function.name}', which is not among tools.`,
      'tool_choice',
    );
  }
  return choice;
}

const joinText = (c: string | { text: string }[]): string =>
  typeof c === 'string' ? c : c.map((p) => p.text).join('\n');

/** `developer` -> `system`; text-only part arrays -> one string (parts joined by newlines). */
export function normalizeMessage(m: Message): EngineMessage {
  switch (m.role) {
    case 'system':
    case 'developer':
      return withName({ role: 'system', content: joinText(m.content) }, m.name);
    case 'user': {
      const c = m.content;
      const content =
        typeof c === 'string' || !c.every((p) => p.type === 'text') ? c : joinText(c as { text: string }[]);
      return withName({ role: 'user', content }, m.name);
    }
    case 'assistant': {
      const out: EngineMessage = {
        role: 'assistant',
        content: m.content == null ? null : joinText(m.content),
      };
      if (m.tool_calls?.length) out.tool_calls = m.tool_calls;
      if (m.reasoning_content) out.reasoning_content = m.reasoning_content;
      return withName(out, m.name);
    }
    case 'tool':
      return { role: 'tool', content: joinText(m.content), tool_call_id: m.tool_call_id };
  }
}

function withName<M extends EngineMessage>(m: M, name: string | undefined): M {
  if (name && m.role !== 'tool') (m as { name?: string }).name = name;
  return m;
}
