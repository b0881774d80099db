import {
  ApiError,
  type AuditList,
  AuditQuerySchema,
  CreateOperatorRequestSchema,
  type OperatorView,
  parseOrThrow,
  UpdateOperatorRequestSchema,
} from '@infer/contracts';
import { AuditRepository, type Db, OperatorsRepository } from '@infer/persistence/lazy';
import { Body, Controller, Get, Inject, Param, Patch, Post, Query } from '@nestjs/common';
import { PRISMA } from '../../infra/tokens.js';
import { Actor, Admin } from '../access/admin.decorator.js';
import { AdminAccess, type AdminActor } from '../access/admin-access.service.js';
import { userError } from '../user-error.js';
import { auditView, operatorAudit, operatorView } from '../views.js';

/**
 * Operators (owner only) and the audit log (any signed-in role).
 *   GET   /admin/operators            -> {object: 'list', data: Operator[]}
 *   POST  /admin/operators            {email, role, password?} -> Operator
 *   PATCH /admin/operators/{id}       {role?, disabled?} -> Operator (the last active owner stays)
 *   GET   /admin/audit?actor=&action=&target_type=&target_id=&from=&to=&before=&limit=
 */
@Controller('admin')
export class OperatorsController {
  private readonly operators: OperatorsRepository;
  private readonly auditLog: AuditRepository;

  constructor(
    @Inject(PRISMA) db: Db,
    @Inject(AdminAccess) private readonly access: AdminAccess,
  ) {
    this.operators = new OperatorsRepository(db);
    this.auditLog = new AuditRepository(db);
  }

  @Admin('owner')
  @Get('operators')
  async list(): Promise<{ object: 'list'; data: OperatorView[] }> {
    return { object: 'list', data: (await this.operators.list()).map(operatorView) };
  }

  @Admin('owner')
  @Post('operators')
  async create(@Actor() actor: AdminActor, @Body() body: unknown): Promise<OperatorView> {
    const input = parseOrThrow(CreateOperatorRequestSchema, body ?? {});
    const op = await this.access
      .audited(
        actor,
        (tx) => new OperatorsRepository(tx).create(input),
        (op) => ({
          action: 'operator.create',
          targetType: 'operator',
          targetId: op.id,
          after: operatorAudit(op),
        }),
      )
      .catch(userError);
    return operatorView(op);
  }

  @Admin('owner')
  @Patch('operators/:id')
  async update(
    @Actor() actor: AdminActor,
    @Param('id') id: string,
    @Body() body: unknown,
  ): Promise<OperatorView> {
    const change = parseOrThrow(UpdateOperatorRequestSchema, body ?? {});
    const before = await this.operators.get(id);
    if (!before) {
      throw new ApiError(404, `No operator '${id}'.`, {
        type: 'invalid_request_error',
        code: 'not_found',
        param: 'id',
      });
    }
    const losesOwner =
      before.role === 'owner' &&
      !before.disabledAt &&
      ((change.role !== undefined && change.role !== 'owner') || change.disabled === true);
    if (losesOwner && (await this.operators.countActiveOwners(id)) === 0) {
      throw new ApiError(409, 'The last active owner cannot be demoted or disabled.', {
        type: 'invalid_request_error',
        code: 'last_owner',
        param: change.role !== undefined ? 'role' : 'disabled',
      });
    }
    const after = await this.access
      .audited(
        actor,
        (tx) => new OperatorsRepository(tx).update(id, change),
        (after) => ({
          action:
            change.disabled === true
              ? 'operator.disable'
              : change.disabled === false
                ? 'operator.enable'
                : 'operator.update',
          targetType: 'operator',
          targetId: id,
          before: operatorAudit(before),
          after: operatorAudit(after),
        }),
      )
      .catch(userError);
    return operatorView(after);
  }

  @Admin('read')
  @Get('audit')
  async audit(@Query() query: unknown): Promise<AuditList> {
    const q = parseOrThrow(AuditQuerySchema, query ?? {});
    const page = await this.auditLog.list({
      ...(q.actor ? { actorId: q.actor } : {}),
      ...(q.action ? { action: q.action } : {}),
      ...(q.target_type ? { targetType: q.target_type } : {}),
      ...(q.target_id ? { targetId: q.target_id } : {}),
      ...(q.from ? { from: q.from } : {}),
      ...(q.to ? { to: q.to } : {}),
      ...(q.before ? { before: BigInt(q.before) } : {}),
      limit: q.limit,
    });
    return { object: 'list', data: page.rows.map(auditView), next_before: page.nextBefore };
  }
}
