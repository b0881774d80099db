import type {
  ResponseCustomToolCallItem,
  ResponseFunctionCallItem,
  ResponseMessageItem,
  ResponseObject,
  ResponseOutputItem,
  ResponseReasoningItem,
  ResponseUsage,
  ResponseWebSearchCallItem,
} from '@infer/contracts';
import type { ChoiceDelta } from '../chat/generation.js';
import { randomId } from '../chat/generation.js';
import type { OfferedTool } from './responses-request.js';

/** One event of a streamed /v1/responses call (OpenAI's shapes), numbered in order. */
export type ResponseStreamEvent = { type: string; sequence_number: number } & Record<string, unknown>;

/** The fields of the response object that do not depend on the generation. */
export type ResponseHead = Omit<ResponseObject, 'status' | 'output' | 'usage' | 'incomplete_details'>;

type Open =
  | { kind: 'reasoning'; index: number; item: ResponseReasoningItem }
  | { kind: 'message'; index: number; item: ResponseMessageItem };

/**
 * A tool call of the current round by the engine's call index: its output index and item. A custom
 * tool's call gathers the engine's JSON arguments (`{"input": ...}`) in `args` and gets its `input`
 * when it closes; a hosted web search gathers `{"query": ...}` and becomes a `web_search_call` item.
 */
type OpenCall =
  | { index: number; item: ResponseFunctionCallItem; args?: undefined }
  | { index: number; item: ResponseCustomToolCallItem; args: string }
  | WebSearchCall;

/** A hosted web search the model asked for in this round (`callId`: the engine's call id). */
export interface WebSearchCall {
  index: number;
  item: ResponseWebSearchCallItem;
  args: string;
  callId: string;
}

/**
 * Builds the Responses API output from a choice's deltas, and (when given `emit`) streams it as the
 * Responses event sequence, as OpenAI does:
 *
 *   response.created, response.in_progress (status in_progress, no output yet), then per output item
 *   response.output_item.added, for reasoning and message items response.content_part.added, the
 *   deltas (response.reasoning_text.delta, response.output_text.delta,
 *   response.function_call_arguments.delta), their .done events, response.content_part.done,
 *   response.output_item.done; last response.completed carrying the whole response (also when the
 *   cap cut it: status `incomplete`, see docs/api-decisions.md).
 *
 * Every event has a `sequence_number` from 0. An item is opened by its first delta; a delta of
 * another kind closes the open reasoning or message item (function calls stay open until the end,
 * since parallel calls interleave). On models that reason the reasoning item comes first even when
 * empty; a response without text and without calls still gets one (empty) message item. The unary
 * reply is built by the same code without emitting, so both carry the same output.
 */
export class ResponseAssembler {
  private seq = 0;
  private readonly output: ResponseOutputItem[] = [];
  private open: Open | null = null;
  /**
   * Tool calls by the engine's call index: their output index and item. A custom tool's call gathers
   * the engine's JSON arguments (`{"input": ...}`) in `args` and gets its `input` when it closes.
   */
  private readonly calls = new Map<number, OpenCall>();

  /**
   * `offered` maps engine function names back to Responses tools (namespaced functions, custom
   * tools); `seal` (with `include: ["reasoning.encrypted_content"]`) seals each reasoning item's text
   * into its `encrypted_content`.
   */
  constructor(
    private readonly head: ResponseHead,
    private readonly emit: ((e: ResponseStreamEvent) => void) | null,
    private readonly offered: ReadonlyMap<string, OfferedTool> = new Map(),
    private readonly seal: ((reasoning: string) => string) | null = null,
  ) {}

  private send(type: string, fields: Record<string, unknown>): void {
    if (!this.emit) return;
    this.emit({ type, sequence_number: this.seq++, ...fields });
  }

  /** response.created and response.in_progress; opens the reasoning item on models that reason. */
  start(reasons: boolean): void {
    const snapshot = {
      ...this.head,
      status: 'in_progress',
      output: [],
      usage: null,
      incomplete_details: null,
    };
    this.send('response.created', { response: snapshot });
    this.send('response.in_progress', { response: snapshot });
    if (reasons) this.openReasoning();
  }

  delta(d: ChoiceDelta): void {
    if (d.reasoning_content) {
      const r = this.open?.kind === 'reasoning' ? this.open : this.openReasoning();
      const part = r.item.content[0];
      if (part) part.text += d.reasoning_content;
      this.send('response.reasoning_text.delta', {
        item_id: r.item.id,
        output_index: r.index,
        content_index: 0,
        delta: d.reasoning_content,
      });
    }
    if (d.content) {
      const m = this.open?.kind === 'message' ? this.open : this.openMessage();
      const part = m.item.content[0];
      if (part) part.text += d.content;
      this.send('response.output_text.delta', {
        item_id: m.item.id,
        output_index: m.index,
        content_index: 0,
        delta: d.content,
        logprobs: [],
      });
    }
    for (const tc of d.tool_calls ?? []) {
      let call = this.calls.get(tc.index);
      if (!call) {
        this.closeOpen('completed');
        const engineName = tc.function.name ?? '';
        const what = this.offered.get(engineName);
        const callId = tc.id ?? `call_${randomId()}`;
        if (what?.kind === 'web_search') {
          const item: ResponseWebSearchCallItem = {
            id: `ws_${randomId()}`,
            type: 'web_search_call',
            status: 'in_progress',
            action: { type: 'search', query: '' },
          };
          call = { index: this.output.length, item, args: '', callId };
          this.calls.set(tc.index, call);
          this.output.push(item);
          this.send('response.output_item.added', { output_index: call.index, item: structuredClone(item) });
          this.send('response.web_search_call.in_progress', { item_id: item.id, output_index: call.index });
        } else if (what?.kind === 'custom') {
          const item: ResponseCustomToolCallItem = {
            id: `ctc_${randomId()}`,
            type: 'custom_tool_call',
            call_id: callId,
            name: what.name,
            input: '',
            status: 'in_progress',
            ...(what.namespace ? { namespace: what.namespace } : {}),
          };
          call = { index: this.output.length, item, args: '' };
        } else {
          const item: ResponseFunctionCallItem = {
            id: `fc_${randomId()}`,
            type: 'function_call',
            call_id: callId,
            name: what?.kind === 'function' ? what.name : engineName,
            arguments: '',
            status: 'in_progress',
            ...(what?.kind === 'function' && what.namespace ? { namespace: what.namespace } : {}),
          };
          call = { index: this.output.length, item };
        }
        if (call.item.type !== 'web_search_call') {
          this.calls.set(tc.index, call);
          this.output.push(call.item);
          this.send('response.output_item.added', { output_index: call.index, item: { ...call.item } });
        }
      } else if (tc.function.name && call.item.type !== 'web_search_call') {
        call.item.name += tc.function.name;
      }
      const args = tc.function.arguments;
      if (!args) continue;
      if (call.args !== undefined) {
        call.args += args;
        continue;
      }
      if (call.item.type !== 'function_call') continue;
      call.item.arguments += args;
      this.send('response.function_call_arguments.delta', {
        item_id: call.item.id,
        output_index: call.index,
        delta: args,
      });
    }
  }

  /** The hosted web searches the model asked for in this round, in order. */
  roundSearches(): WebSearchCall[] {
    return [...this.calls.values()]
      .filter((c): c is WebSearchCall => c.item.type === 'web_search_call')
      .sort((a, b) => a.index - b.index);
  }

  /** Whether this round has calls the client runs (function and custom tools). */
  roundHasClientCalls(): boolean {
    return [...this.calls.values()].some((c) => c.item.type !== 'web_search_call');
  }

  /** A search of this round starts: its query is set and `response.web_search_call.searching` sent. */
  searching(call: WebSearchCall, query: string): void {
    this.closeOpen('completed');
    call.item.action.query = query;
    call.item.status = 'searching';
    this.send('response.web_search_call.searching', { item_id: call.item.id, output_index: call.index });
  }

  /** A search of this round ended: completed (with its sources when asked for) or failed. */
  searched(call: WebSearchCall, ok: boolean, sources: string[] | null): void {
    call.item.status = ok ? 'completed' : 'failed';
    if (ok && sources) call.item.action.sources = sources.map((url) => ({ type: 'url' as const, url }));
    if (ok) {
      this.send('response.web_search_call.completed', { item_id: call.item.id, output_index: call.index });
    }
    this.send('response.output_item.done', { output_index: call.index, item: structuredClone(call.item) });
  }

  /** The round's searches ran and the model goes on: the next round's calls are numbered afresh. */
  nextRound(): void {
    this.closeOpen('completed');
    this.calls.clear();
  }

  /**
   * Closes every item and returns the whole response; with `emit`, sends the closing events and
   * response.completed. `cut`: the output cap ended the answer (status incomplete).
   */
  finish(cut: boolean, usage: ResponseUsage): ResponseObject {
    const itemStatus = cut ? 'incomplete' : 'completed';
    // Without text and without calls, the answer is still one (empty) message item.
    if (this.calls.size === 0 && !this.output.some((o) => o.type === 'message')) this.openMessage();
    this.closeOpen(itemStatus);
    for (const call of [...this.calls.values()].sort((a, b) => a.index - b.index)) {
      const { index, item } = call;
      if (item.type === 'web_search_call') {
        // Asked for beside client calls, or when the output cap cut the round: never run.
        item.status = 'failed';
        this.send('response.output_item.done', { output_index: index, item: structuredClone(item) });
        continue;
      }
      item.status = itemStatus;
      if (item.type === 'custom_tool_call') {
        item.input = customInput(call.args ?? '');
        const at = { item_id: item.id, output_index: index };
        if (item.input) this.send('response.custom_tool_call_input.delta', { ...at, delta: item.input });
        this.send('response.custom_tool_call_input.done', { ...at, input: item.input });
      } else {
        this.send('response.function_call_arguments.done', {
          item_id: item.id,
          output_index: index,
          name: item.name,
          arguments: item.arguments,
        });
      }
      this.send('response.output_item.done', { output_index: index, item: { ...item } });
    }
    const response: ResponseObject = {
      ...this.head,
      status: cut ? 'incomplete' : 'completed',
      output: this.output,
      usage,
      incomplete_details: cut ? { reason: 'max_output_tokens' } : null,
    };
    this.send('response.completed', { response });
    return response;
  }

  private openReasoning(): Extract<Open, { kind: 'reasoning' }> {
    this.closeOpen('completed');
    const item: ResponseReasoningItem = {
      id: `rs_${randomId()}`,
      type: 'reasoning',
      summary: [],
      content: [{ type: 'reasoning_text', text: '' }],
    };
    const open = { kind: 'reasoning' as const, index: this.output.length, item };
    this.output.push(item);
    this.open = open;
    this.send('response.output_item.added', { output_index: open.index, item: { ...item, content: [] } });
    this.send('response.content_part.added', {
      item_id: item.id,
      output_index: open.index,
      content_index: 0,
      part: { type: 'reasoning_text', text: '' },
    });
    return open;
  }

  private openMessage(): Extract<Open, { kind: 'message' }> {
    this.closeOpen('completed');
    const item: ResponseMessageItem = {
      id: `msg_${randomId()}`,
      type: 'message',
      role: 'assistant',
      status: 'in_progress',
      content: [{ type: 'output_text', text: '', annotations: [] }],
    };
    const open = { kind: 'message' as const, index: this.output.length, item };
    this.output.push(item);
    this.open = open;
    this.send('response.output_item.added', { output_index: open.index, item: { ...item, content: [] } });
    this.send('response.content_part.added', {
      item_id: item.id,
      output_index: open.index,
      content_index: 0,
      part: { type: 'output_text', text: '', annotations: [] },
    });
    return open;
  }

  private closeOpen(status: 'completed' | 'incomplete'): void {
    const open = this.open;
    if (!open) return;
    this.open = null;
    const at = { item_id: open.item.id, output_index: open.index, content_index: 0 };
    if (open.kind === 'reasoning') {
      const part = open.item.content[0] ?? { type: 'reasoning_text' as const, text: '' };
      if (this.seal) open.item.encrypted_content = this.seal(part.text);
      this.send('response.reasoning_text.done', { ...at, text: part.text });
      this.send('response.content_part.done', { ...at, part: { ...part } });
    } else {
      open.item.status = status;
      const part = open.item.content[0] ?? { type: 'output_text' as const, text: '', annotations: [] };
      this.send('response.output_text.done', { ...at, text: part.text, logprobs: [] });
      this.send('response.content_part.done', { ...at, part: { ...part } });
    }
    this.send('response.output_item.done', {
      output_index: open.index,
      item: structuredClone(open.item),
    });
  }
}

/**
 * The free-form input of a custom tool call from the engine's arguments: the `input` string of the
 * JSON object the model was asked for, or the raw text when the model answered something else.
 */
export function customInput(args: string): string {
  try {
    const v: unknown = JSON.parse(args);
    if (v && typeof v === 'object' && typeof (v as { input?: unknown }).input === 'string') {
      return (v as { input: string }).input;
    }
    return typeof v === 'string' ? v : args;
  } catch {
    return args;
  }
}
