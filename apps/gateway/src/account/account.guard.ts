import {
  applyDecorators,
  type CanActivate,
  createParamDecorator,
  type ExecutionContext,
  Inject,
  Injectable,
  SetMetadata,
  UseGuards,
} from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { IS_PUBLIC } from '../auth/public.decorator.js';
import type { MemberActor } from './account-access.js';
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

/**
 * An account route: needs a member's session (AccountGuard); public for the API-key guard (an API key
 * never opens the account pages, and the account's session never calls the API).
 */
export const AccountRoute = () => applyDecorators(SetMetadata(IS_PUBLIC, true), UseGuards(AccountGuard));

/** An account route open without a session (sign-in, the invitation). */
export const AccountOpen = () => SetMetadata(IS_PUBLIC, true);

/** The member AccountGuard admitted. */
export const CurrentMember = createParamDecorator(
  (_: unknown, ctx: ExecutionContext): MemberActor =>
    ctx.switchToHttp().getRequest<FastifyRequest>().memberActor!,
);
