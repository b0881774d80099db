import type { LoggerService } from '@nestjs/common';
import type { Logger } from './logger.js';

/** Nest's own messages (module init, errors) through our JSON logger. */
export class NestPinoLogger implements LoggerService {
  constructor(private readonly out: Logger) {}
  log(message: unknown, context?: string): void {
    this.out.debug({ context }, String(message));
  }
  error(message: unknown, stack?: string, context?: string): void {
    this.out.error({ context, stack }, String(message));
  }
  warn(message: unknown, context?: string): void {
    this.out.warn({ context }, String(message));
  }
  debug(message: unknown, context?: string): void {
    this.out.debug({ context }, String(message));
  }
  verbose(message: unknown, context?: string): void {
    this.out.trace({ context }, String(message));
  }
}
