import {
  ApiError,
  type CatalogEntry,
  type ChatCompletionRequest,
  type Message,
  SAMPLING_DEFAULTS,
  type ToolChoice,
} from '@infer/contracts';
import type { EngineInput, EngineMessage, EngineReasoning } from '../engines/engine.js';

/**
 * Whether the model reasons for this request, from its catalog mode and the request's switches:
 * - effort: on; effort = `reasoning_effort` ?? 'medium'
 * - always: on whatever the switches say (chat-B)
 * - fixed_on: on (chat-C, chat-D: reason by default with no switch)
 * - default_on: `chat_template_kwargs.enable_thinking` ?? true (chat-E)
 * - default_off: `chat_template_kwargs.enable_thinking` ?? false (chat-F)
 * - none: off; asking it to reason (`reasoning_effort`, or `enable_thinking: true`) is a 400, as the
 *   catalog contract says. `enable_thinking: false` is accepted: it asks for what happens anyway.
 * Switches a reasoning model does not use (e.g. `reasoning_effort` on chat-E) are ignored.
 */
export function decideReasoning(
  model: Pick<CatalogEntry, 'id' | 'capabilities'>,
  body: Pick<ChatCompletionRequest, 'reasoning_effort' | 'chat_template_kwargs'>,
): EngineReasoning | null {
  const thinking = body.chat_template_kwargs?.enable_thinking;
  switch (model.capabilities.reasoning) {
    case 'effort':
      return { effort: body.reasoning_effort ?? 'medium' };
    case 'always':
    case 'fixed_on':
      return { effort: null };
    case 'default_on':
      return (thinking ?? true) ? { effort: null } : null;
    case 'default_off':
      return (thinking ?? false) ? { effort: null } : null;
    default:
      if (body.reasoning_effort) {
        throw ApiError.invalid(
          `The model '${model.id}' does not support reasoning_effort.`,
          'reasoning_effort',
        );
      }
      if (thinking === true) {
        throw ApiError.invalid(
          `The model '${model.id}' does not support reasoning.`,
          'chat_template_kwargs.enable_thinking',
        );
      }
      return null;
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
    },
    max_tokens: body.max_completion_tokens ?? body.max_tokens ?? null,
    stop: (typeof body.stop === 'string' ? [body.stop] : (body.stop ?? [])).filter((s) => s.length > 0),
    tools,
    tool_choice: normalizeToolChoice(
      body.tool_choice,
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
