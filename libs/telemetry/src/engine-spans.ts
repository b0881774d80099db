import { type Context, context, type Span, SpanKind, trace } from '@opentelemetry/api';
import { GEN_AI_OPERATION, GenAI } from './genai.js';
import { failSpan } from './propagation.js';
import { activeTracer } from './sdk.js';

/**
 * The engine methods to trace and the gen_ai.operation.name of their calls: a name, or a function of
 * the call's first argument (an image engine's `generate` serves generations and edits).
 */
export type EngineSpanMethods = Readonly<Record<string, string | ((input: never) => string)>>;

const TRACED = Symbol('infer.engine-traced');

type AnyFn = (...args: unknown[]) => unknown;

/**
 * Gives every call of the named methods of one engine instance, inside a sampled trace, an INTERNAL
 * span `{gen_ai.operation.name} {model}` (the GenAI semantic conventions' inference span) with
 * `gen_ai.operation.name`, `gen_ai.request.model`, `gen_ai.provider.name` (the engine type),
 * `infer.engine.type`, `infer.engine.method`, the tokens the result reports
 * (`gen_ai.usage.input_tokens` / `output_tokens`) and, for a stream, the time to its first item.
 * The call runs in the span's context, so an upstream engine's HTTP client span is its child.
 *
 * One place for every engine (EngineRegistry calls it when it builds an engine; the search service,
 * which has no registry, calls it on its engine): engines know nothing of tracing. Tracing off when
 * the engine is built: the engine is returned untouched (nothing on its path). On: the methods are
 * replaced once, on the instance; a call outside a sampled trace costs one check and goes straight
 * through.
 */
export function traceEngine<E extends object>(
  engine: E,
  info: { type: string; model: string },
  methods: EngineSpanMethods,
): E {
  if (!activeTracer) return engine;
  const e = engine as E & { [TRACED]?: true } & Record<string, unknown>;
  if (e[TRACED]) return engine;
  try {
    for (const [method, operation] of Object.entries(methods)) {
      const original = e[method];
      if (typeof original !== 'function') continue;
      Object.defineProperty(e, method, {
        value: tracedMethod(original as AnyFn, method, operation, info),
        configurable: true,
        writable: true,
      });
    }
    Object.defineProperty(e, TRACED, { value: true });
  } catch {
    // A frozen engine object: it goes untraced rather than failing.
  }
  return engine;
}

function tracedMethod(
  original: AnyFn,
  method: string,
  operation: string | ((input: never) => string),
  info: { type: string; model: string },
): AnyFn {
  return function traced(this: unknown, ...args: unknown[]): unknown {
    const tracer = activeTracer;
    const parent = context.active();
    if (!tracer || !trace.getSpan(parent)?.isRecording()) return original.apply(this, args);
    const op =
      typeof operation === 'function'
        ? operation(args[0] as never)
        : ((parent.getValue(GEN_AI_OPERATION) as string | undefined) ?? operation);
    const span = tracer.startSpan(
      `${op} ${info.model}`,
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          [GenAI.operationName]: op,
          [GenAI.requestModel]: info.model,
          [GenAI.system]: info.type,
          'infer.engine.type': info.type,
          'infer.engine.method': method,
        },
      },
      parent,
    );
    const ctx = trace.setSpan(parent, span);
    const started = performance.now();
    let out: unknown;
    try {
      out = context.with(ctx, original, this, ...args);
    } catch (err) {
      failSpan(span, err);
      span.end();
      throw err;
    }
    if (isPromiseLike(out)) {
      return out.then(
        (r) => {
          setResultUsage(span, r);
          span.end();
          return r;
        },
        (err: unknown) => {
          failSpan(span, err);
          span.end();
          throw err;
        },
      );
    }
    if (isAsyncIterable(out)) return new TracedStream(out[Symbol.asyncIterator](), span, ctx, started);
    span.end();
    return out;
  };
}

function isPromiseLike(v: unknown): v is Promise<unknown> {
  return typeof (v as { then?: unknown } | null)?.then === 'function';
}

function isAsyncIterable(v: unknown): v is AsyncIterable<unknown> {
  return typeof (v as { [Symbol.asyncIterator]?: unknown } | null)?.[Symbol.asyncIterator] === 'function';
}

/** Tokens a result reports: `usage` (chat), `tokens` as a count (rerank) or per input (embeddings). */
function setResultUsage(span: Span, r: unknown): void {
  if (!r || typeof r !== 'object') return;
  const o = r as { usage?: { prompt_tokens?: unknown; completion_tokens?: unknown }; tokens?: unknown };
  if (o.usage && typeof o.usage === 'object') {
    if (typeof o.usage.prompt_tokens === 'number')
      span.setAttribute(GenAI.inputTokens, o.usage.prompt_tokens);
    if (typeof o.usage.completion_tokens === 'number')
      span.setAttribute(GenAI.outputTokens, o.usage.completion_tokens);
  } else if (typeof o.tokens === 'number') {
    span.setAttribute(GenAI.inputTokens, o.tokens);
  } else if (Array.isArray(o.tokens)) {
    let n = 0;
    for (const t of o.tokens) if (typeof t === 'number') n += t;
    span.setAttribute(GenAI.inputTokens, n);
  }
}

/**
 * An engine's stream (a chat engine's deltas) seen through its span: each step runs in the span's
 * context (the engine's body runs when it is pulled), the first item sets the time to first chunk,
 * a `finish` item its usage and reason; the end, an error or the consumer's early return ends the span.
 */
class TracedStream implements AsyncIterableIterator<unknown> {
  private first = true;
  private open = true;

  constructor(
    private readonly it: AsyncIterator<unknown>,
    private readonly span: Span,
    private readonly ctx: Context,
    private readonly started: number,
  ) {}

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<unknown>> {
    return context.with(this.ctx, this.it.next, this.it).then(
      (r) => {
        if (r.done) this.end();
        else this.seen(r.value);
        return r;
      },
      (err: unknown) => {
        if (this.open) failSpan(this.span, err);
        this.end();
        throw err;
      },
    );
  }

  return(value?: unknown): Promise<IteratorResult<unknown>> {
    this.end();
    if (!this.it.return) return Promise.resolve({ done: true, value });
    return context.with(this.ctx, this.it.return, this.it, value);
  }

  throw(err?: unknown): Promise<IteratorResult<unknown>> {
    if (this.open) failSpan(this.span, err);
    this.end();
    if (!this.it.throw) return Promise.reject(err);
    return context.with(this.ctx, this.it.throw, this.it, err);
  }

  private seen(v: unknown): void {
    if (this.first) {
      this.first = false;
      this.span.setAttribute(GenAI.timeToFirstChunk, (performance.now() - this.started) / 1000);
    }
    const d = v as { type?: unknown; reason?: unknown; usage?: unknown } | null;
    if (d?.type === 'finish') {
      setResultUsage(this.span, d);
      if (typeof d.reason === 'string') this.span.setAttribute('gen_ai.response.finish_reasons', [d.reason]);
    }
  }

  private end(): void {
    if (!this.open) return;
    this.open = false;
    this.span.end();
  }
}
