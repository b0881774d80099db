import type { AdminKey, AdminKeyList, KeyLimitsState, MintedKey } from '@infer/contracts';
import { Body, Controller, Get, HttpCode, Inject, Param, Patch, Post, Put, Query } from '@nestjs/common';
import { Actor, Admin } from '../access/admin.decorator.js';
import type { AdminActor } from '../access/admin-access.service.js';
import { KeysService } from './keys.service.js';

/**
 * API keys (keys.service.ts). Reads need any role; changes need admin or owner.
 *   GET   /admin/keys?q=&member=&status=&sort=&after=&limit= keys of all members, newest first
 *                                                          (sort=expiring: expiring soonest first)
 *   POST  /admin/keys/{id or prefix}/revoke
 *   POST  /admin/keys/{id or prefix}/rotate  {grace?}       a new secret, same id; the old one works for
 *                                                          grace (default 24h, 0: revoked now)
 *   PATCH /admin/keys/{id or prefix}  {expires_at|expires_in, allowed_models, allowed_ips}
 *   PUT   /admin/keys/{id or prefix}/limits                {limits: LimitsOverride | null}
 *   GET   /admin/keys/{id or prefix}/limits                every limit of the key, its member and models, now
 */
@Controller('admin/keys')
export class KeysAdminController {
  constructor(@Inject(KeysService) private readonly keys: KeysService) {}

  @Admin('read')
  @Get()
  list(@Query() query: unknown): Promise<AdminKeyList> {
    return this.keys.list(query);
  }

  @Admin('write')
  @Post(':key/revoke')
  @HttpCode(200)
  revoke(@Actor() actor: AdminActor, @Param('key') ref: string): Promise<AdminKey> {
    return this.keys.revoke(actor, ref);
  }

  @Admin('write')
  @Post(':key/rotate')
  rotate(@Actor() actor: AdminActor, @Param('key') ref: string, @Body() body: unknown): Promise<MintedKey> {
    return this.keys.rotate(actor, ref, body);
  }

  @Admin('write')
  @Patch(':key')
  update(@Actor() actor: AdminActor, @Param('key') ref: string, @Body() body: unknown): Promise<AdminKey> {
    return this.keys.update(actor, ref, body);
  }

  @Admin('write')
  @Put(':key/limits')
  setLimits(@Actor() actor: AdminActor, @Param('key') ref: string, @Body() body: unknown): Promise<AdminKey> {
    return this.keys.setLimits(actor, ref, body);
  }

  @Admin('read')
  @Get(':key/limits')
  limits(@Param('key') ref: string): Promise<KeyLimitsState> {
    return this.keys.limitsState(ref);
  }
}
