import {
  type MemberRefusals,
  parseOrThrow,
  type RequestLogDetail,
  type RequestLogEntry,
  type RequestLogList,
  RequestLogQuerySchema,
} from '@infer/contracts';
import { MembersRepository, RequestLogRepository, type RequestLogRow } from '@infer/persistence/lazy';
import { Inject, Injectable } from '@nestjs/common';
import { GATEWAY_CONFIG, type GatewayConfig } from '../../config.js';
import { notFound } from '../user-error.js';

/** TRACE_URL_TEMPLATE with the trace id in place of `{trace_id}`. */
export function traceUrl(template: string | undefined, traceId: string | null): string | null {
  return template && traceId ? template.replaceAll('{trace_id}', encodeURIComponent(traceId)) : null;
}

function entryView(r: RequestLogRow, template: string | undefined): RequestLogEntry {
  return {
    at: r.time.getTime(),
    request_id: r.requestId,
    member_id: r.memberId,
    key_id: r.keyId,
    model: r.model,
    endpoint: r.endpoint,
    status: r.status,
    error_code: r.errorCode,
    limit: r.limitName,
    refused: r.refused,
    batch: r.batch,
    prompt_tokens: r.promptTokens,
    completion_tokens: r.completionTokens,
    total_tokens: r.totalTokens,
    latency_ms: r.latencyMs,
    first_token_ms: r.firstTokenMs,
    trace_id: r.traceId,
    trace_url: traceUrl(template, r.traceId),
    cost: r.cost,
    engine_endpoint: r.engineEndpoint,
  };
}

/** Keyset cursor: `<ms>.<base64url(request id)>` (request ids may carry any character a client sent). */
const cursorOf = (r: RequestLogRow) =>
  `${r.time.getTime()}.${Buffer.from(r.requestId, 'utf8').toString('base64url')}`;
function parseCursor(c: string): { time: Date; requestId: string } {
  const dot = c.indexOf('.');
  return {
    time: new Date(Number(c.slice(0, dot))),
    requestId: Buffer.from(c.slice(dot + 1), 'base64url').toString('utf8'),
  };
}

/** The request log (written by the ledger writer from the usage events; docs/adr/0110-request-log.md). */
@Injectable()
export class LogsService {
  constructor(
    @Inject(RequestLogRepository) private readonly log: RequestLogRepository,
    @Inject(MembersRepository) private readonly members: MembersRepository,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  async list(query: unknown): Promise<RequestLogList> {
    const q = parseOrThrow(RequestLogQuerySchema, query ?? {});
    const rows = await this.log.list({
      ...(q.member ? { memberId: q.member } : {}),
      ...(q.key ? { keyId: q.key } : {}),
      ...(q.model ? { model: q.model } : {}),
      ...(q.status ? { statusClass: q.status } : {}),
      ...(q.code ? { errorCode: q.code } : {}),
      ...(q.trace_id ? { traceId: q.trace_id } : {}),
      ...(q.from ? { from: q.from } : {}),
      ...(q.to ? { to: q.to } : {}),
      ...(q.before ? { before: parseCursor(q.before) } : {}),
      // One more than asked: whether there is a next page, without a count.
      limit: q.limit + 1,
    });
    const page = rows.slice(0, q.limit);
    const last = page.at(-1);
    return {
      object: 'list',
      data: page.map((r) => entryView(r, this.config.TRACE_URL_TEMPLATE)),
      next_before: rows.length > q.limit && last ? cursorOf(last) : null,
    };
  }

  /**
   * One request by its id (`x-request-id`, the error body's request id): the newest if reused, with
   * its bodies when they were logged (and are within their retention). Operators only: the members'
   * own API never reads request_log_body.
   */
  async get(requestId: string): Promise<RequestLogDetail> {
    const [row] = await this.log.byRequestId(requestId);
    if (!row) throw notFound('request', requestId, 'request_id');
    const b = await this.log.bodiesOf(row.requestId, row.time);
    return {
      ...entryView(row, this.config.TRACE_URL_TEMPLATE),
      bodies: b
        ? {
            request: b.requestBody,
            response: b.responseBody,
            request_truncated: b.requestTruncated,
            response_truncated: b.responseTruncated,
          }
        : null,
    };
  }

  /** Why a member is refused: per limit, how often in the last hour and day, and the last time. */
  async refusals(memberId: string): Promise<MemberRefusals> {
    const m = await this.members.get(memberId).catch(() => null);
    if (!m) throw notFound('member', memberId, 'id');
    const rows = await this.log.refusals(memberId);
    return {
      object: 'list',
      member_id: memberId,
      data: rows.map((r) => ({
        limit: r.limitName,
        error_code: r.errorCode,
        last_hour: r.lastHour,
        last_day: r.lastDay,
        last_at: r.last.getTime(),
        last_key_id: r.lastKeyId,
      })),
    };
  }
}
