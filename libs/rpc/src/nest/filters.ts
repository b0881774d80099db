import { ArgumentsHost, Catch, type RpcExceptionFilter } from '@nestjs/common';
import { type Observable, throwError } from 'rxjs';

/**
 * Nest's default RPC exception filter turns every error that is not an RpcException into
 * `{status: 'error', message: 'Internal server error'}`. Our handlers throw ApiErrors (status, code,
 * param) that the transport puts on the wire as error frames, so this filter hands every error back as
 * it is; the transport maps anything that is not an ApiError to a clean 500.
 */
@Catch()
export class PassThroughRpcFilter implements RpcExceptionFilter<unknown> {
  catch(exception: unknown, _host: ArgumentsHost): Observable<never> {
    return throwError(() => exception);
  }
}
