import type { FastifyCorsOptions } from '@fastify/cors';

/**
 * CORS for browser clients (the OpenAI SDK with `dangerouslyAllowBrowser`, the AI SDK in a page,
 * MCP Inspector's web UI), done by `@fastify/cors` (through Nest's `enableCors`):
 * - origins: `CORS_ORIGINS` (default `*`: any origin). With a list, only those exact origins get
 *   `Access-Control-Allow-Origin` (echoed, with `Vary: Origin`); others get no CORS headers, so the
 *   browser blocks the read. An empty list turns CORS off.
 * - preflights (`OPTIONS` with `Access-Control-Request-Method`) are answered 204 in an onRequest hook,
 *   before auth: a preflight never carries the key.
 * - request headers: whatever the preflight asks for is allowed (the SDKs send `x-stainless-*`,
 *   `openai-*`, `mcp-*` headers); no credentials (keys are bearer tokens in `Authorization`).
 * - exposed: the headers a client reads (request and trace ids, rate limits, Retry-After, MCP session and auth).
 */
export const CORS_EXPOSED_HEADERS = [
  'x-request-id',
  'x-trace-id',
  'openai-model',
  'openai-processing-ms',
  'retry-after',
  'x-ratelimit-limit-requests',
  'x-ratelimit-remaining-requests',
  'x-ratelimit-reset-requests',
  'x-ratelimit-limit-tokens',
  'x-ratelimit-remaining-tokens',
  'x-ratelimit-reset-tokens',
  'x-ratelimit-limit-concurrent-requests',
  'x-ratelimit-remaining-concurrent-requests',
  'x-ratelimit-reset-concurrent-requests',
  'mcp-session-id',
  'mcp-protocol-version',
  'www-authenticate',
];

/** The CORS options for `CORS_ORIGINS`, or null when CORS is off (an empty list). */
export function corsOptions(origins: string[]): FastifyCorsOptions | null {
  if (!origins.length) return null;
  const any = origins.includes('*');
  return {
    origin: any ? '*' : origins,
    // Joined once here: @fastify/cors joins an array again for every answer (the same header value).
    methods: 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS',
    credentials: false,
    exposedHeaders: CORS_EXPOSED_HEADERS.join(', '),
    maxAge: 600,
    // Answered with 204 before any route, guard or body parser runs.
    preflight: true,
    // An OPTIONS without the preflight headers gets the same 204, never a plain-text 400 outside the
    // error envelope (what strict preflight checking answers).
    strictPreflight: false,
    hook: 'onRequest',
  };
}
