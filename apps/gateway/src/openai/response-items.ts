import { ApiError, type ResponseObject, type ResponseOutputItem } from '@infer/contracts';
import type { Redis } from 'ioredis';

/** How long output items stay referable (`item_reference`), in seconds. */
export const RESPONSE_ITEM_TTL_S = 3600;

/**
 * The output items of /v1/responses answers, kept in Redis for an hour per member, so that a later
 * request may name them with `{type: 'item_reference', id}` instead of sending them again: what the
 * Vercel AI SDK's Responses provider does by default (its `store` is true) for the reasoning and the
 * text of earlier steps. Only items are kept, never whole responses (no GET /v1/responses/{id}), and
 * only when the request did not say `store: false`. A member can only reference its own items.
 *
 * Redis, not the chat-service's memory: the next request may reach another chat-service replica or
 * gateway. One key per item, `<prefix>{<member>}:<item id>`, JSON, expiring after RESPONSE_ITEM_TTL_S.
 */
export class ResponseItemStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix = 'resp-item:',
    private readonly ttlS = RESPONSE_ITEM_TTL_S,
  ) {}

  private key(memberId: string, id: string): string {
    // The member as a hash tag: one member's items share a Redis Cluster slot (one MGET, one MULTI).
    return `${this.prefix}{${memberId}}:${id}`;
  }

  /** Keeps the output items of a finished response (when its request did not opt out). */
  async keep(memberId: string, response: Pick<ResponseObject, 'output' | 'store'>): Promise<void> {
    if (response.store === false || !response.output?.length) return;
    const tx = this.redis.multi();
    for (const item of response.output)
      tx.set(this.key(memberId, item.id), JSON.stringify(item), 'EX', this.ttlS);
    await tx.exec();
  }

  /**
   * The body with every `item_reference` of `input` replaced by the item it names, as an input item
   * (a message item becomes an assistant message with its text; function calls and reasoning as they
   * were). An unknown or expired id is a 400 naming `input[i].id`. Bodies without references are
   * returned as they are, without a Redis round trip.
   */
  async resolve(memberId: string, body: unknown): Promise<unknown> {
    const input = (body as { input?: unknown } | null)?.input;
    if (!Array.isArray(input)) return body;
    const refs: Array<{ index: number; id: string }> = [];
    for (const [index, item] of input.entries()) {
      const it = item as { type?: unknown; id?: unknown } | null;
      if (it?.type === 'item_reference' && typeof it.id === 'string' && it.id)
        refs.push({ index, id: it.id });
    }
    if (!refs.length) return body;
    let found: Array<string | null>;
    try {
      found = await this.redis.mget(...refs.map((r) => this.key(memberId, r.id)));
    } catch {
      throw new ApiError(
        503,
        'Referenced items cannot be read right now (the item store is unavailable); retry.',
        {
          type: 'server_error',
          code: 'service_unavailable',
        },
      );
    }
    const out = [...input];
    for (const [n, ref] of refs.entries()) {
      const json = found[n];
      if (!json) {
        throw ApiError.invalid(
          `Item '${ref.id}' not found: output items can be referenced for ${this.ttlS / 3600} hour(s) after their response, by the same member, unless it was made with store: false. Send the item itself instead.`,
          `input[${ref.index}].id`,
        );
      }
      out[ref.index] = asInputItem(JSON.parse(json) as ResponseOutputItem);
    }
    return { ...(body as object), input: out };
  }
}

/** An output item as the input item that replays it. */
function asInputItem(item: ResponseOutputItem): unknown {
  switch (item.type) {
    case 'message':
      return {
        type: 'message',
        role: 'assistant',
        content: item.content.map((c) => ({ type: 'output_text', text: c.text })),
      };
    case 'function_call':
      return {
        type: 'function_call',
        call_id: item.call_id,
        name: item.name,
        arguments: item.arguments,
      };
    case 'reasoning':
      return { type: 'reasoning', summary: item.summary, content: item.content };
  }
}
