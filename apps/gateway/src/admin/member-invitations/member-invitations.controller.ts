import {
  invitationUrl,
  type MemberInvitationView,
  MemberInviteRequestSchema,
  parseDuration,
  parseOrThrow,
} from '@infer/contracts';
import { MemberInvitationsRepository } from '@infer/persistence/lazy';
import { Body, Controller, Inject, Param, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GATEWAY_CONFIG, type GatewayConfig } from '../../config.js';
import { Actor, Admin } from '../access/admin.decorator.js';
import { AdminAccess, type AdminActor } from '../access/admin-access.service.js';
import { userError } from '../user-error.js';

/**
 * Invitations of members to their account pages (issue 41): a one-time link, valid MEMBER_INVITE_TTL
 * (or `expires_in`), where the member sets their password. A password reset is another invitation;
 * a new one voids the member's earlier unused links. The link is in this answer only.
 *   POST /admin/members/{id}/invitations  {email?, expires_in?} -> {url, expires_at}
 */
@Controller('admin/members')
export class MemberInvitationsController {
  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Inject(AdminAccess) private readonly access: AdminAccess,
  ) {}

  @Admin('write')
  @Post(':id/invitations')
  async invite(
    @Actor() actor: AdminActor,
    @Param('id') id: string,
    @Body() body: unknown,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<MemberInvitationView> {
    const input = parseOrThrow(MemberInviteRequestSchema, body ?? {});
    const ttlMs = parseDuration(input.expires_in ?? this.config.MEMBER_INVITE_TTL) ?? 0;
    const { token, invitation, member } = await this.access
      .audited(
        actor,
        (tx) =>
          new MemberInvitationsRepository(tx).create(id, {
            ttlMs,
            email: input.email,
            createdBy: actor.label,
          }),
        ({ invitation, member }) => ({
          action: 'member.invite',
          targetType: 'member',
          targetId: member.id,
          after: { email: member.email, expires_at: invitation.expiresAt.toISOString() },
        }),
      )
      .catch(userError);
    reply.header('cache-control', 'no-store');
    return {
      object: 'member_invitation',
      member_id: member.id,
      email: member.email ?? '',
      url: invitationUrl(this.config.PUBLIC_BASE_URL ?? `${req.protocol}://${req.host}`, token),
      expires_at: Math.floor(invitation.expiresAt.getTime() / 1000),
    };
  }
}
