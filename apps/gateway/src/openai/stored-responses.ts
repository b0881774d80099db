import { randomBytes } from 'node:crypto';
import { ApiError, type ResponseObject, type ResponseRequest } from '@infer/contracts';
import { type SqlRunner, type StoredResponse, StoredResponsesRepository } from '@infer/persistence/lazy';

/** The 404 for an id the member has no (unexpired) stored response under, naming `param`. */
export const responseNotFound = (id: string, param: string) =>
  new ApiError(404, `No response with id '${id}' found (it may have expired or been deleted).`, {
    type: 'invalid_request_error',
    code: 'not_found',
    param,
  });

type Item = Record<string, unknown>;

/** Response ids this platform makes (`resp_` + base64url); anything else is not found without a query (a NUL would fail in PostgreSQL). */
const RESPONSE_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** An output item of a response as the input item that replays it (ids kept, statuses dropped where the input shape has none). */
function outputAsInput(o: Item): Item {
  return { ...o };
}

/**
 * Stored responses (`store`, default true) in PostgreSQL for `previous_response_id`, GET/DELETE
 * /v1/responses/{id} and its input items, per member, for RESPONSES_RETENTION_DAYS.
 */
export class StoredResponses {
  readonly repo: StoredResponsesRepository;

  constructor(
    pg: SqlRunner,
    private readonly retentionDays: number,
  ) {
    this.repo = new StoredResponsesRepository(pg);
  }

  /**
   * The request body with `previous_response_id` replaced by the stored response's input items and
   * output, before the new input; the items (each with an id) are returned to be stored with the answer.
   * A body without it passes unchanged. Unknown, expired or another member's id: 404 naming the field.
   * `body` is the validated request (ResponseRequestSchema): nothing unvalidated is read here.
   */
  async continue(
    memberId: string,
    body: ResponseRequest,
  ): Promise<{ body: ResponseRequest; items: Item[] | null; previous: string | null }> {
    const input = body.input;
    const own: Item[] =
      typeof input === 'string'
        ? [{ type: 'message', role: 'user', content: input }]
        : (input as unknown as Item[]);
    const prevId = body.previous_response_id;
    if (typeof prevId !== 'string' || !prevId) return { body, items: withIds(own), previous: null };
    const stored = RESPONSE_ID.test(prevId) ? await this.repo.find(memberId, prevId) : null;
    if (!stored) throw responseNotFound(prevId, 'previous_response_id');
    const output = Array.isArray(stored.response.output) ? (stored.response.output as Item[]) : [];
    const items = withIds([...stored.inputItems, ...output.map(outputAsInput), ...own]);
    const { previous_response_id: _, ...rest } = body;
    return { body: { ...rest, input: items as ResponseRequest['input'] }, items, previous: prevId };
  }

  async keep(
    memberId: string,
    response: ResponseObject,
    items: Item[],
    previous: string | null,
  ): Promise<void> {
    if (response.store === false) return;
    await this.repo.save({
      id: response.id,
      memberId,
      model: response.model,
      expiresAt: new Date(Date.now() + this.retentionDays * 86_400_000),
      previousResponseId: previous,
      response: { ...response, previous_response_id: previous } as Record<string, unknown>,
      inputItems: items,
    });
  }

  async get(memberId: string, id: string): Promise<StoredResponse> {
    const r = RESPONSE_ID.test(id) ? await this.repo.find(memberId, id) : null;
    if (!r) throw responseNotFound(id, 'response_id');
    return r;
  }
}

function withIds(items: Item[]): Item[] {
  return items.map((it) =>
    typeof it.id === 'string' && it.id
      ? it
      : {
          ...it,
          id: `${it.type === 'function_call_output' ? 'fco' : 'msg'}_${randomBytes(12).toString('base64url')}`,
        },
  );
}

/** OpenAI's cursor paging over a response's input items: `after`/`before` item ids, `limit` 1-100 (20), `order` asc|desc (desc). */
export function pageItems(
  items: Item[],
  q: { after?: unknown; before?: unknown; limit?: unknown; order?: unknown },
): { object: 'list'; data: Item[]; first_id: string | null; last_id: string | null; has_more: boolean } {
  const limitRaw = q.limit === undefined ? 20 : Number(q.limit);
  if (!Number.isInteger(limitRaw) || limitRaw < 1 || limitRaw > 100) {
    throw ApiError.invalid('limit must be an integer from 1 to 100.', 'limit');
  }
  const order = q.order ?? 'desc';
  if (order !== 'asc' && order !== 'desc') throw ApiError.invalid("order must be 'asc' or 'desc'.", 'order');
  let list = order === 'desc' ? [...items].reverse() : items;
  for (const [name, v] of [
    ['after', q.after],
    ['before', q.before],
  ] as const) {
    if (v === undefined) continue;
    const at = typeof v === 'string' ? list.findIndex((i) => i.id === v) : -1;
    if (at < 0) throw ApiError.invalid(`${name} names no input item of this response.`, name);
    list = name === 'after' ? list.slice(at + 1) : list.slice(0, at);
  }
  const data = list.slice(0, limitRaw);
  return {
    object: 'list',
    data,
    first_id: (data[0]?.id as string | undefined) ?? null,
    last_id: (data.at(-1)?.id as string | undefined) ?? null,
    has_more: list.length > data.length,
  };
}

/**
 * The retention job: deletes expired stored responses in batches, at most one gateway at a time (a
 * transaction-level PostgreSQL advisory lock taken by the same statement that deletes).
 */
export async function deleteExpiredResponses(pg: SqlRunner, now = new Date(), batch = 1000): Promise<number> {
  let total = 0;
  for (;;) {
    const { rows } = await pg.query<{ n: string | number }>(
      `WITH lock AS (SELECT pg_try_advisory_xact_lock(7463012) AS got),
       gone AS (DELETE FROM "StoredResponse" WHERE (SELECT got FROM lock) AND "id" IN (
         SELECT "id" FROM "StoredResponse" WHERE "expiresAt" <= $1 ORDER BY "expiresAt" LIMIT $2) RETURNING 1)
       SELECT count(*) AS "n" FROM gone`,
      [now, batch],
    );
    const n = Number(rows[0]?.n ?? 0);
    total += n;
    if (n < batch) return total;
  }
}
