import type { MemberStoredResponses, StoredResponsesPurged } from '@infer/contracts';
import {
  MembersRepository,
  prismaRunner,
  type SqlRunner,
  StoredResponsesRepository,
} from '@infer/persistence/lazy';
import { Inject, Injectable } from '@nestjs/common';
import { PG } from '../../infra/tokens.js';
import { AdminAccess, type AdminActor } from '../access/admin-access.service.js';
import { notFound } from '../user-error.js';

/**
 * A member's stored responses (/v1/responses with `store`, docs/adr/0080-coding-agents.md): how many
 * are kept (unexpired), and a purge of all of them, audited in the same transaction as the delete.
 */
@Injectable()
export class StoredResponsesAdminService {
  private readonly stored: StoredResponsesRepository;

  constructor(
    @Inject(MembersRepository) private readonly members: MembersRepository,
    @Inject(AdminAccess) private readonly access: AdminAccess,
    @Inject(PG) pg: SqlRunner,
  ) {
    this.stored = new StoredResponsesRepository(pg);
  }

  private async member(id: string): Promise<void> {
    const m = await this.members.get(id).catch(() => null);
    if (!m) throw notFound('member', id, 'id');
  }

  async count(memberId: string): Promise<MemberStoredResponses> {
    await this.member(memberId);
    return {
      object: 'member.stored_responses',
      member_id: memberId,
      count: await this.stored.count(memberId),
    };
  }

  async purge(actor: AdminActor, memberId: string): Promise<StoredResponsesPurged> {
    await this.member(memberId);
    const deleted = await this.access.audited(
      actor,
      (tx) => new StoredResponsesRepository(prismaRunner(tx)).purgeMember(memberId),
      (n) => ({
        action: 'member.stored_responses.purge',
        targetType: 'member',
        targetId: memberId,
        after: { deleted: n },
      }),
    );
    return { object: 'member.stored_responses.purged', member_id: memberId, deleted };
  }
}
