import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { AccountAccess } from './account-access.service.js';

/** The one check in front of every account route but sign-in and the invitation (AccountRoute()). */
@Injectable()
export class AccountGuard implements CanActivate {
  constructor(@Inject(AccountAccess) private readonly access: AccountAccess) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    const req = ctx.switchToHttp().getRequest<FastifyRequest>();
    req.memberActor = await this.access.require(req);
    return true;
  }
}
