import type { Logger } from '@infer/telemetry';
import type { FastifyBaseLogger } from 'fastify';

type LogFn = (...args: unknown[]) => void;
const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const;

/**
 * Fastify's per-request logger (`req.log`), made only when the request logs something. Fastify builds
 * a pino child per request (`logger.child({ reqId })`), which runs the redaction over the bindings and
 * serialises them: work on every request for a logger that a successful request never uses (ADR 0014:
 * the success path writes no log line). This stands in for that child: each method checks the level on the parent first, and the
 * real child (same bindings, same options) is made on the first line actually written.
 */
export class LazyChildLogger {
  private real: Logger | null = null;
  declare fatal: LogFn;
  declare error: LogFn;
  declare warn: LogFn;
  declare info: LogFn;
  declare debug: LogFn;
  declare trace: LogFn;

  constructor(
    private readonly parent: Logger,
    private readonly bindings: Record<string, unknown>,
    private readonly options: object,
  ) {}

  /** The real pino child, made once. */
  get logger(): Logger {
    this.real ??= this.parent.child(this.bindings, this.options);
    return this.real;
  }

  get level(): string {
    return this.real?.level ?? this.parent.level;
  }

  set level(level: string) {
    this.logger.level = level;
  }

  isLevelEnabled(level: string): boolean {
    return (this.real ?? this.parent).isLevelEnabled(level);
  }

  child(bindings: Record<string, unknown>, options?: object): Logger {
    return this.logger.child(bindings, options);
  }
}

for (const level of LEVELS) {
  LazyChildLogger.prototype[level] = function (this: LazyChildLogger, ...args: unknown[]): void {
    if (!this.isLevelEnabled(level)) return;
    (this.logger[level] as LogFn)(...args);
  };
}

/** Fastify's `childLoggerFactory`: a LazyChildLogger instead of an eager pino child. */
export function lazyChildLoggerFactory(
  logger: FastifyBaseLogger,
  bindings: Record<string, unknown>,
  options: object,
): FastifyBaseLogger {
  return new LazyChildLogger(logger as Logger, bindings, options) as unknown as FastifyBaseLogger;
}
