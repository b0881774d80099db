import type { AdminMember, MintedKey } from '@infer/contracts';
import { Body, Controller, Get, Inject, Param, Patch, Post, Put, Query } from '@nestjs/common';
import { Actor, Admin } from '../access/admin.decorator.js';
import type { AdminActor } from '../access/admin-access.service.js';
import { MembersService } from './members.service.js';

/**
 * Members for the operator console (and automation with ADMIN_TOKEN). Reads need any role; changes
 * need admin or owner (members.service.ts: audited, applied by every replica at once).
 *   GET   /admin/members?q=&tier=&status=&after=&limit=   one page, newest first
 *   POST  /admin/members                                   {name, email?, tier, billing_anchor?}
 *   GET   /admin/members/{id}                              member and its keys
 *   PATCH /admin/members/{id}                              {tier?, billing_anchor?, suspended?}
 *   PUT   /admin/members/{id}/limits                       {limits: {budget: {member_per_month}} | null}
 *   POST  /admin/members/{id}/keys                         {name?} -> the key, shown this once
 */
@Controller('admin/members')
export class MembersAdminController {
  constructor(@Inject(MembersService) private readonly members: MembersService) {}

  @Admin('read')
  @Get()
  list(@Query() query: unknown) {
    return this.members.list(query);
  }

  @Admin('write')
  @Post()
  create(@Actor() actor: AdminActor, @Body() body: unknown): Promise<AdminMember> {
    return this.members.create(actor, body);
  }

  @Admin('read')
  @Get(':id')
  get(@Param('id') id: string) {
    return this.members.get(id);
  }

  @Admin('write')
  @Patch(':id')
  update(@Actor() actor: AdminActor, @Param('id') id: string, @Body() body: unknown): Promise<AdminMember> {
    return this.members.update(actor, id, body);
  }

  @Admin('write')
  @Put(':id/limits')
  setLimits(
    @Actor() actor: AdminActor,
    @Param('id') id: string,
    @Body() body: unknown,
  ): Promise<AdminMember> {
    return this.members.setLimits(actor, id, body);
  }

  @Admin('write')
  @Post(':id/keys')
  mint(@Actor() actor: AdminActor, @Param('id') id: string, @Body() body: unknown): Promise<MintedKey> {
    return this.members.mint(actor, id, body);
  }
}
