import { ApiError } from '@infer/contracts';
import type { HandlerContext } from '@infer/rpc';

/**
 * Most bytes of JSON in one data frame. A NATS message holds 1 MiB by default; replies are cut well
 * under it, because the sizes are estimates.
 */
export const FRAME_BUDGET_BYTES = 256 * 1024;

/**
 * Sends a long list as data frames, each a JSON array of consecutive items of at most `budget` bytes
 * (estimated by `size`; an item larger than the budget goes alone). The gateway joins the frames, in
 * order, into the list field of the reply (apps/gateway/src/openai/collect.ts): this is how replies
 * larger than one NATS message (2048 vectors of 4096 floats) travel.
 */
export function emitInFrames<T>(
  ctx: HandlerContext,
  items: readonly T[],
  size: (item: T) => number,
  budget = FRAME_BUDGET_BYTES,
): number {
  let frame: T[] = [];
  let bytes = 2;
  let frames = 0;
  for (const item of items) {
    const n = size(item) + 1;
    if (frame.length > 0 && bytes + n > budget) {
      ctx.emit(frame);
      frames++;
      frame = [];
      bytes = 2;
    }
    frame.push(item);
    bytes += n;
  }
  if (frame.length > 0) {
    ctx.emit(frame);
    frames++;
  }
  return frames;
}

/**
 * The error to answer when work stopped because the request's signal aborted: a deadline (ApiError 524)
 * as it is; anything else (a service shutdown, or a client cancel, whose answer nobody reads) as a
 * retryable 503. Errors of work that was not aborted pass unchanged.
 */
export function abortedError(signal: AbortSignal, e: unknown): unknown {
  if (!signal.aborted) return e;
  const reason: unknown = signal.reason;
  if (reason instanceof ApiError) return reason;
  return new ApiError(503, 'The model service stopped before the answer was finished; retry the request.', {
    type: 'server_error',
    code: 'service_unavailable',
  });
}
