import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';

/** The head every Server-Sent Events answer carries (built once). */
const EVENT_STREAM_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
} as const;

/**
 * Takes the response over from Fastify and writes a 200 Server-Sent Events head: what the hooks set
 * (CORS, security headers, x-request-id) goes out with the hijacked head too, then the SSE headers,
 * then `extra` (per-answer headers). Returns the raw response to write events on.
 */
export function hijackEventStream(
  reply: FastifyReply,
  extra?: Record<string, string | number | undefined>,
): ServerResponse {
  const raw = reply.raw;
  reply.hijack();
  raw.writeHead(200, {
    ...(reply.getHeaders() as Record<string, string>),
    ...EVENT_STREAM_HEADERS,
    ...extra,
  });
  return raw;
}
