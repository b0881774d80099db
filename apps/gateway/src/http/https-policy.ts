import { ApiError } from '@infer/contracts';

export interface HttpsPolicyInput {
  /** Fastify's request.protocol: 'https' when the socket is TLS, or when a trusted proxy says so. */
  protocol: string;
  /** The TCP peer (not X-Forwarded-For). */
  remoteAddress: string | undefined;
  allowInsecureLoopback: boolean;
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+)$/;

export function isLoopback(addr: string | undefined): boolean {
  return addr !== undefined && LOOPBACK.test(addr);
}

/**
 * The spec's "requests must use HTTPS; plain HTTP calls fail". Plain HTTP passes only in the
 * documented development mode, and then only from a loopback peer.
 */
export function checkHttps(i: HttpsPolicyInput): ApiError | null {
  if (i.protocol === 'https') return null;
  if (i.allowInsecureLoopback && isLoopback(i.remoteAddress)) return null;
  return new ApiError(403, 'HTTPS is required: plain HTTP requests are refused. Use the https:// base URL.', {
    type: 'invalid_request_error',
    code: 'https_required',
  });
}
