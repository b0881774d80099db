import { ApiError } from '@infer/contracts';
import { type ArgumentsHost, Catch, type ExceptionFilter } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { sendError } from './send-error.js';

/** Catches everything Nest sees; Fastify-level failures reach the same sendError via its error handler. */
@Catch()
export class ErrorsFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    sendError(http.getRequest<FastifyRequest>(), http.getResponse<FastifyReply>(), exception);
  }
}
export { ApiError };
