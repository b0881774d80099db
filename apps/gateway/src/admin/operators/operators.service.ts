import {
  ApiError,
  CreateOperatorRequestSchema,
  type OperatorView,
  parseOrThrow,
  UpdateOperatorRequestSchema,
} from '@infer/contracts';
import { OperatorsRepository } from '@infer/persistence/lazy';
import { Inject, Injectable } from '@nestjs/common';
import { AdminAccess, type AdminActor } from '../access/admin-access.service.js';
import { userError } from '../user-error.js';
import { operatorAudit, operatorView } from '../views.js';

/**
 * Operators (owner only).
 *   GET   /admin/operators            -> {object: 'list', data: Operator[]}
 *   POST  /admin/operators            {email, role, password?} -> Operator
 *   PATCH /admin/operators/{id}       {role?, disabled?} -> Operator (the last active owner stays)
 */
export type OperatorList = { object: 'list'; data: OperatorView[] };

@Injectable()
export class OperatorsService {
  constructor(
    @Inject(OperatorsRepository) private readonly operators: OperatorsRepository,
    @Inject(AdminAccess) private readonly access: AdminAccess,
  ) {}

  async list(): Promise<OperatorList> {
    return { object: 'list', data: (await this.operators.list()).map(operatorView) };
  }

  async create(actor: AdminActor, body: unknown): Promise<OperatorView> {
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

  async update(actor: AdminActor, id: string, body: unknown): Promise<OperatorView> {
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
}
