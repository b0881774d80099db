import {
  ANTHROPIC_UNSUPPORTED_FIELDS,
  type AnthropicContentBlockParam,
  type AnthropicCountTokensRequest,
  type AnthropicMessagesRequest,
  type AnthropicThinkingConfig,
  ApiError,
  type CatalogEntry,
  type ChatCompletionRequest,
  type ContentPart,
  type Message,
  type ToolCall,
  type ToolChoice,
} from '@infer/contracts';

/**
 * Anthropic Messages request -> our chat completion body (pure; no I/O). The model's catalog entry is
 * needed for one thing only: which reasoning switch `thinking` and `output_config.effort` map to.
 *
 * - `system` (string or text blocks) -> one system message (blocks joined by newlines); a `system`
 *   turn inside `messages` -> a system message at its place.
 * - user blocks: text, image (base64 -> `data:` URI, URL -> the URL, which the chat-service fetches
 *   behind its SSRF guard as it does for chat), plain-text documents -> text parts; `tool_result`
 *   blocks -> `tool` messages, placed before the rest of that user turn (their images follow as a
 *   user message: tool messages carry text only); `is_error` prefixes the result with "Error: ".
 * - assistant blocks: text -> content, `tool_use` -> tool_calls (input as JSON arguments),
 *   `thinking` -> reasoning_content; `redacted_thinking` is dropped (opaque data of another model).
 * - tools -> functions; tool_choice auto / any / tool / none -> auto / required / that function / none;
 *   `disable_parallel_tool_use` -> parallel_tool_calls false.
 * - thinking: see reasoningSwitch; `output_config.format` -> response_format json_schema.
 * - stop_sequences -> stop; temperature, top_p, top_k, max_tokens as they are.
 */
export function toChatRequest(
  req: AnthropicMessagesRequest,
  model: Pick<CatalogEntry, 'id' | 'capabilities'>,
  stream: boolean,
): ChatCompletionRequest {
  if (req.thinking?.type === 'enabled' && req.thinking.budget_tokens >= req.max_tokens) {
    throw ApiError.invalid(
      `max_tokens (${req.max_tokens}) must be greater than thinking.budget_tokens (${req.thinking.budget_tokens}).`,
      'thinking.budget_tokens',
    );
  }
  const body: ChatCompletionRequest = {
    model: req.model,
    messages: toChatMessages(req),
    max_tokens: req.max_tokens,
    ...reasoningSwitch(req, model),
  };
  if (req.stop_sequences?.length) body.stop = req.stop_sequences;
  if (req.temperature !== undefined) body.temperature = req.temperature;
  if (req.top_p !== undefined) body.top_p = req.top_p;
  if (req.top_k !== undefined) body.top_k = req.top_k;
  if (req.tools?.length) {
    body.tools = req.tools.map((t) => ({
      type: 'function' as const,
      function: {
        name: t.name,
        ...(t.description !== undefined ? { description: t.description } : {}),
        parameters: t.input_schema,
        ...(t.strict !== undefined ? { strict: t.strict } : {}),
      },
    }));
  }
  const choice = req.tool_choice;
  if (choice) {
    body.tool_choice = toolChoice(choice);
    if ('disable_parallel_tool_use' in choice && choice.disable_parallel_tool_use)
      body.parallel_tool_calls = false;
  }
  const format = req.output_config?.format;
  if (format) {
    body.response_format = {
      type: 'json_schema',
      json_schema: { name: 'output', strict: true, schema: format.schema },
    };
  }
  if (stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  return body;
}

/** count_tokens: the same translation, with one output token (the prompt is what is counted). */
export function toCountRequest(
  req: AnthropicCountTokensRequest,
  model: Pick<CatalogEntry, 'id' | 'capabilities'>,
): ChatCompletionRequest {
  const { thinking: _, ...rest } = req;
  return toChatRequest({ ...rest, max_tokens: 1 }, model, false);
}

/**
 * Fields that ask for what this platform does not deliver: a 400 naming each, checked on the raw body
 * before the schema (whose answer for them would only say the value is invalid).
 */
export function refuseUnsupported(raw: unknown): void {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return;
  const body = raw as Record<string, unknown>;
  for (const [field, why] of Object.entries(ANTHROPIC_UNSUPPORTED_FIELDS)) {
    const v = body[field];
    if (v === undefined || v === null || (field === 'speed' && v === 'standard')) continue;
    throw ApiError.invalid(`'${field}' is not supported: ${why}.`, field);
  }
  const tools = body.tools;
  if (!Array.isArray(tools)) return;
  for (const [i, t] of tools.entries()) {
    const type = (t as { type?: unknown } | null)?.type;
    if (typeof type === 'string' && type !== 'custom') {
      throw ApiError.invalid(
        `tools[${i}]: the server tool '${type}' is not available here; only client tools (with input_schema) are supported.`,
        `tools[${i}].type`,
      );
    }
  }
}

/**
 * `thinking` on the model's reasoning switch:
 * - models steered by effort (capabilities.reasoning `effort`): `enabled` picks reasoning_effort from
 *   budget_tokens (under 4,096 low, under 16,384 medium, else high); `disabled` asks for the least
 *   (low: their reasoning cannot be switched off); `adaptive` leaves the model's default.
 *   `output_config.effort` (low / medium / high; xhigh and max = high) wins over the budget.
 * - models with a switch (`default_on`, `default_off`): enabled / disabled -> enable_thinking
 *   true / false; adaptive -> the model's default.
 * - models that always reason (`always`, `fixed_on`): nothing to switch; they still reason when asked
 *   not to, and their thinking comes back.
 * - models that do not reason (`none`): `enabled` is a 400 naming thinking; adaptive and disabled ask
 *   for what happens anyway.
 */
export function reasoningSwitch(
  req: { thinking?: AnthropicThinkingConfig; output_config?: AnthropicMessagesRequest['output_config'] },
  model: Pick<CatalogEntry, 'id' | 'capabilities'>,
): Pick<ChatCompletionRequest, 'reasoning_effort' | 'chat_template_kwargs'> {
  const t = req.thinking;
  const mode = model.capabilities.reasoning;
  switch (mode) {
    case 'effort': {
      const asked = req.output_config?.effort;
      if (asked) return { reasoning_effort: asked === 'low' || asked === 'medium' ? asked : 'high' };
      if (t?.type === 'enabled') {
        const b = t.budget_tokens;
        return { reasoning_effort: b < 4096 ? 'low' : b < 16_384 ? 'medium' : 'high' };
      }
      return t?.type === 'disabled' ? { reasoning_effort: 'low' } : {};
    }
    case 'default_on':
    case 'default_off':
      if (t?.type === 'enabled') return { chat_template_kwargs: { enable_thinking: true } };
      if (t?.type === 'disabled') return { chat_template_kwargs: { enable_thinking: false } };
      return {};
    case 'none':
      if (t?.type === 'enabled') {
        throw ApiError.invalid(
          `The model '${model.id}' does not support extended thinking: leave thinking out, or set it to {"type": "disabled"}.`,
          'thinking',
        );
      }
      return {};
    default:
      return {};
  }
}

function toolChoice(c: NonNullable<AnthropicMessagesRequest['tool_choice']>): ToolChoice {
  switch (c.type) {
    case 'auto':
      return 'auto';
    case 'any':
      return 'required';
    case 'none':
      return 'none';
    case 'tool':
      return { type: 'function', function: { name: c.name } };
  }
}

const joinTexts = (blocks: readonly { text: string }[]) => blocks.map((b) => b.text).join('\n');

function toChatMessages(req: AnthropicCountTokensRequest): Message[] {
  const out: Message[] = [];
  const system = typeof req.system === 'string' ? req.system : req.system ? joinTexts(req.system) : '';
  if (system) out.push({ role: 'system', content: system });
  for (const [i, m] of req.messages.entries()) {
    if (m.role === 'system') {
      const text = typeof m.content === 'string' ? m.content : joinTexts(m.content);
      if (text) out.push({ role: 'system', content: text });
    } else if (typeof m.content === 'string') {
      out.push(
        m.role === 'user' ? { role: 'user', content: m.content } : { role: 'assistant', content: m.content },
      );
    } else if (m.role === 'user') {
      userTurn(m.content, i, out);
    } else {
      out.push(assistantTurn(m.content, i));
    }
  }
  return out;
}

function imagePart(source: Extract<AnthropicContentBlockParam, { type: 'image' }>['source']): ContentPart {
  const url = source.type === 'base64' ? `data:${source.media_type};base64,${source.data}` : source.url;
  return { type: 'image_url', image_url: { url } };
}

function userTurn(blocks: readonly AnthropicContentBlockParam[], i: number, out: Message[]): void {
  const parts: ContentPart[] = [];
  const afterTools: ContentPart[] = [];
  for (const [j, b] of blocks.entries()) {
    switch (b.type) {
      case 'text':
        parts.push({ type: 'text', text: b.text });
        break;
      case 'image':
        parts.push(imagePart(b.source));
        break;
      case 'document': {
        const s = b.source;
        const text =
          s.type === 'text' ? s.data : typeof s.content === 'string' ? s.content : joinTexts(s.content);
        parts.push({ type: 'text', text: b.title ? `${b.title}\n\n${text}` : text });
        break;
      }
      case 'tool_result': {
        const c = b.content;
        const texts: string[] = [];
        if (typeof c === 'string') texts.push(c);
        else
          for (const r of c ?? []) {
            if (r.type === 'text') texts.push(r.text);
            else afterTools.push(imagePart(r.source));
          }
        const text = texts.join('\n');
        out.push({
          role: 'tool',
          tool_call_id: b.tool_use_id,
          content: b.is_error ? `Error: ${text}` : text,
        });
        break;
      }
      default:
        throw ApiError.invalid(
          `messages[${i}].content[${j}]: a '${b.type}' block can only appear in an assistant message.`,
          `messages[${i}].content[${j}].type`,
        );
    }
  }
  const content = [...afterTools, ...parts];
  if (!content.length) return;
  const only = content[0];
  out.push({
    role: 'user',
    content: content.length === 1 && only?.type === 'text' ? only.text : content,
  });
}

function assistantTurn(blocks: readonly AnthropicContentBlockParam[], i: number): Message {
  const texts: string[] = [];
  const thinking: string[] = [];
  const calls: ToolCall[] = [];
  for (const [j, b] of blocks.entries()) {
    switch (b.type) {
      case 'text':
        texts.push(b.text);
        break;
      case 'thinking':
        thinking.push(b.thinking);
        break;
      case 'redacted_thinking':
        break;
      case 'tool_use':
        calls.push({
          id: b.id,
          type: 'function',
          function: { name: b.name, arguments: JSON.stringify(b.input) },
        });
        break;
      default:
        throw ApiError.invalid(
          `messages[${i}].content[${j}]: a '${b.type}' block can only appear in a user message.`,
          `messages[${i}].content[${j}].type`,
        );
    }
  }
  const m: Message = { role: 'assistant', content: calls.length && !texts.length ? null : texts.join('\n') };
  if (calls.length) m.tool_calls = calls;
  if (thinking.length) m.reasoning_content = thinking.join('\n');
  return m;
}
