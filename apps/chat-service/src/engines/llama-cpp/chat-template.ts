import { Template } from '@huggingface/jinja';
import type { Tool } from '@infer/contracts';
import type { EngineMessage } from '../engine.js';

/**
 * Renders a model's own Jinja chat template (the GGUF's `tokenizer.chat_template`, as llama.cpp's
 * server and vLLM do) with the variables templates expect: `messages`, `tools` (OpenAI tool objects),
 * `add_generation_prompt`, `enable_thinking`, `reasoning_effort`, `bos_token`, `eos_token` (the
 * Jinja runtime adds `raise_exception` and `strftime_now`). Tool call arguments are passed as objects when they parse
 * (templates `tojson` them), else as the string.
 *
 * A template that does not mention `tools` gets the tool list as Hermes-style instructions in the
 * system message instead. A model without a template gets plain ChatML.
 */
export const CHATML_TEMPLATE = `{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + (message.content or '') + '<|im_end|>\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}`;

export interface RenderOptions {
  messages: EngineMessage[];
  tools: Tool[];
  /** true/false: the request reasons or not. */
  thinking: boolean;
  effort: string | null;
}

export class ChatTemplate {
  private readonly template: Template;
  private readonly knowsTools: boolean;

  constructor(
    readonly source: string,
    private readonly bosToken: string,
    private readonly eosToken: string,
  ) {
    this.template = new Template(source);
    this.knowsTools = /\btools\b/.test(source);
  }

  render(opts: RenderOptions): string {
    let messages = opts.messages.map(toTemplateMessage);
    const offerTools = opts.tools.length > 0;
    if (offerTools && !this.knowsTools) messages = withToolInstructions(messages, opts.tools);
    return this.template.render({
      messages,
      tools: offerTools && this.knowsTools ? opts.tools : undefined,
      add_generation_prompt: true,
      enable_thinking: opts.thinking,
      reasoning_effort: opts.effort ?? undefined,
      bos_token: this.bosToken,
      eos_token: this.eosToken,
    });
  }
}

type TemplateMessage = Record<string, unknown>;

function toTemplateMessage(m: EngineMessage): TemplateMessage {
  switch (m.role) {
    case 'system':
      return { role: 'system', content: m.content };
    case 'user':
      return {
        role: 'user',
        content:
          typeof m.content === 'string'
            ? m.content
            : m.content.map((p) => (p.type === 'text' ? p.text : '')).join('\n'),
      };
    case 'assistant': {
      const out: TemplateMessage = { role: 'assistant', content: m.content ?? '' };
      if (m.tool_calls?.length) {
        out.tool_calls = m.tool_calls.map((c) => ({
          id: c.id,
          type: 'function',
          function: { name: c.function.name, arguments: parseArgs(c.function.arguments) },
        }));
      }
      if (m.reasoning_content) out.reasoning_content = m.reasoning_content;
      return out;
    }
    case 'tool':
      return { role: 'tool', content: m.content, tool_call_id: m.tool_call_id };
  }
}

function parseArgs(s: string): unknown {
  try {
    const v = JSON.parse(s);
    return v && typeof v === 'object' ? v : s;
  } catch {
    return s;
  }
}

function withToolInstructions(messages: TemplateMessage[], tools: Tool[]): TemplateMessage[] {
  const list = tools.map((t) => JSON.stringify(t)).join('\n');
  const text =
    '# Tools\n\nYou may call one or more functions to assist with the user query.\n\n' +
    `You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n${list}\n</tools>\n\n` +
    'For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n' +
    '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>';
  const first = messages[0];
  if (first?.role === 'system') {
    return [{ ...first, content: `${String(first.content)}\n\n${text}` }, ...messages.slice(1)];
  }
  return [{ role: 'system', content: text }, ...messages];
}
