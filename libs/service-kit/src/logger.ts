import { type Logger, pino } from 'pino';

export type { Logger };

/**
 * Structured JSON logs. Anything that could hold a secret is redacted by path, whatever the caller
 * logs.
 */
export function createLogger(name: string, level = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino({
    name,
    level,
    base: { app: name },
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
  });
}
