import { type DestinationStream, type Logger, pino } from 'pino';
import { currentTraceId } from './propagation.js';

export type { Logger };

/**
 * Structured JSON logs. Anything that could hold a secret is redacted by path, whatever the caller
 * logs.
 */
export function createLogger(
  name: string,
  level = process.env.LOG_LEVEL ?? 'info',
  destination?: DestinationStream,
): Logger {
  const opts: pino.LoggerOptions = {
    name,
    level,
    base: { app: name },
    // The trace id of the request being served, in every line logged inside its trace (tracing on).
    mixin: () => {
      const traceId = currentTraceId();
      // A fresh object each time: pino merges the line's own fields into it.
      return traceId ? { trace_id: traceId } : {};
    },
    redact: {
      paths: [
        'req.headers.authorization',
        'headers.authorization',
        'authorization',
        'apiKey',
        'key',
        '*.apiKey',
        '*.authorization',
      ],
      censor: '[redacted]',
    },
  };
  return destination ? pino(opts, destination) : pino(opts);
}
