// What one refusal's ApiError costs: construction time and the heap it holds, with and without a
// captured stack trace (ApiError builds answers without one since perf-err; `withStack` is the old way).
//
//   node --conditions=source --import ./tools/ts-register.js --expose-gc bench/api-error.ts
//
// The error is built 12 frames deep (about the depth of the 429 path under Nest and Fastify), like the
// limits store's refusal: status, message, type, code, a Retry-After header. Numbers, not pass/fail.
import { ApiError, ErrorCode, ErrorType } from '@infer/contracts';

const N = 200_000;

function refusal(): ApiError {
  return new ApiError(429, 'Rate limit reached for requests per minute (1). Retry after 7 s.', {
    type: ErrorType.rateLimit,
    code: ErrorCode.rateLimit,
    headers: { 'retry-after': '7' },
  });
}

/** The same, with a stack captured as every ApiError had before: Error.captureStackTrace at the same depth. */
function withStack(): ApiError {
  const e = refusal();
  Error.captureStackTrace(e, withStack);
  return e;
}

function deep(n: number, make: () => ApiError): ApiError {
  return n === 0 ? make() : deep(n - 1, make);
}

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');

function measure(label: string, make: () => ApiError): Record<string, string> {
  // Time: built and dropped (young garbage), best of 5 runs.
  let best = Number.POSITIVE_INFINITY;
  for (let r = 0; r < 5; r++) {
    const t0 = performance.now();
    for (let i = 0; i < N; i++) deep(10, make);
    best = Math.min(best, performance.now() - t0);
  }
  // Heap: N of them kept alive (what a refusal holds while it is in flight or waiting for a collection).
  gc?.();
  const before = process.memoryUsage().heapUsed;
  const kept: ApiError[] = new Array(N);
  for (let i = 0; i < N; i++) kept[i] = deep(10, make);
  gc?.();
  const bytes = (process.memoryUsage().heapUsed - before) / N;
  if (kept.length !== N) throw new Error('unreachable');
  return { error: label, 'ns each': ((best * 1e6) / N).toFixed(0), 'bytes held each': bytes.toFixed(0) };
}

console.table([measure('ApiError 429 (no stack)', refusal), measure('with a stack (before)', withStack)]);
