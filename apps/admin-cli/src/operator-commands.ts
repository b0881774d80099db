// `admin operator ...`: the people who use the operator console (not members; they hold no API key).
import { userInfo } from 'node:os';
import {
  type AuditActor,
  AuditRepository,
  type Db,
  NotFoundError,
  type Operator,
  OperatorsRepository,
  PersistenceUserError,
  parseOperatorRole,
} from '@infer/persistence';

export const OPERATOR_USAGE = `  operator create --email E --role R [--password-stdin]
                                                  create a console operator (roles: owner, admin,
                                                  viewer); the password is read from standard input
                                                  (at least 12 characters); without it the operator
                                                  can only sign in through single sign-on
  operator list                                   list operators
  operator set-role <email> <role>                change an operator's role
  operator disable <email> | operator enable <email>
                                                  disable (signs out everywhere) or enable an operator
  operator set-password <email> --password-stdin  set a new password, read from standard input`;

export interface OperatorCliContext {
  args: string[];
  values: { email?: string; role?: string; 'password-stdin'?: boolean };
  repos(): { db: Db };
  print(data: unknown, human: () => string): void;
  /** All of standard input as text. */
  readStdin(): Promise<string>;
}

type OperatorHandler = (ctx: OperatorCliContext) => Promise<number>;

export const cliActor = (): AuditActor => {
  let who = 'unknown';
  try {
    who = userInfo().username;
  } catch {}
  return { type: 'cli', id: null, label: `cli:${who}` };
};

const view = (o: Operator) => ({
  id: o.id,
  email: o.email,
  role: o.role,
  disabled: Boolean(o.disabledAt),
  sso_only: !o.passwordHash,
  created_at: o.createdAt.toISOString(),
});
const audited = (o: Operator) => ({ email: o.email, role: o.role, disabled: Boolean(o.disabledAt) });

/** The password from standard input: one line, its line break removed. */
async function stdinPassword(ctx: OperatorCliContext, usage: (m: string) => Error): Promise<string> {
  const text = await ctx.readStdin();
  const password = text.replace(/\r?\n$/, '');
  if (!password) throw usage('--password-stdin: standard input is empty');
  if (password.includes('\n')) throw usage('--password-stdin: give the password on one line');
  return password;
}

export function operatorCommands(usage: (message: string) => Error): Record<string, OperatorHandler> {
  const need = (v: string | undefined, what: string) => {
    if (!v?.trim()) throw usage(`missing ${what}`);
    return v.trim();
  };
  const find = async (ctx: OperatorCliContext, email: string) => {
    const op = await new OperatorsRepository(ctx.repos().db).findByEmail(email);
    if (!op) throw new NotFoundError('operator', email);
    return op;
  };
  const change = async (ctx: OperatorCliContext, patch: { role?: Operator['role']; disabled?: boolean }) => {
    if (ctx.args.length !== (patch.role ? 2 : 1)) throw usage('wrong number of arguments');
    const repo = new OperatorsRepository(ctx.repos().db);
    const before = await find(ctx, need(ctx.args[0], '<email>'));
    const losesOwner =
      before.role === 'owner' &&
      !before.disabledAt &&
      ((patch.role && patch.role !== 'owner') || patch.disabled);
    if (losesOwner && (await repo.countActiveOwners(before.id)) === 0)
      throw new PersistenceUserError('the last active owner cannot be demoted or disabled', 'conflict');
    // The change and its audit row in one transaction: both or neither.
    const after = await ctx.repos().db.$transaction(async (tx) => {
      const after = await new OperatorsRepository(tx).update(before.id, patch);
      await new AuditRepository(tx).append(cliActor(), {
        action:
          patch.disabled === true
            ? 'operator.disable'
            : patch.disabled === false
              ? 'operator.enable'
              : 'operator.update',
        targetType: 'operator',
        targetId: after.id,
        before: audited(before),
        after: audited(after),
      });
      return after;
    });
    ctx.print(
      { operator: view(after) },
      () => `operator ${after.email}: ${after.role}${after.disabledAt ? ', disabled' : ''}`,
    );
    return 0;
  };

  return {
    'operator create': async (ctx) => {
      if (ctx.args.length) throw usage(`unexpected argument: ${ctx.args[0]}`);
      const email = need(ctx.values.email, '--email');
      const role = parseOperatorRole(need(ctx.values.role, '--role'));
      const password = ctx.values['password-stdin'] ? await stdinPassword(ctx, usage) : undefined;
      const op = await ctx.repos().db.$transaction(async (tx) => {
        const op = await new OperatorsRepository(tx).create({
          email,
          role,
          ...(password === undefined ? {} : { password }),
        });
        await new AuditRepository(tx).append(cliActor(), {
          action: 'operator.create',
          targetType: 'operator',
          targetId: op.id,
          after: audited(op),
        });
        return op;
      });
      ctx.print({ operator: view(op) }, () => `created operator ${op.email} (${op.role}, id ${op.id})`);
      return 0;
    },
    'operator list': async (ctx) => {
      if (ctx.args.length) throw usage(`unexpected argument: ${ctx.args[0]}`);
      const ops = await new OperatorsRepository(ctx.repos().db).list();
      ctx.print({ operators: ops.map(view) }, () =>
        ops.length
          ? ops
              .map(
                (o) =>
                  `${o.email}  ${o.role}${o.disabledAt ? '  disabled' : ''}${o.passwordHash ? '' : '  sso-only'}`,
              )
              .join('\n')
          : 'no operators',
      );
      return 0;
    },
    'operator set-role': (ctx) => change(ctx, { role: parseOperatorRole(need(ctx.args[1], '<role>')) }),
    'operator disable': (ctx) => change(ctx, { disabled: true }),
    'operator enable': (ctx) => change(ctx, { disabled: false }),
    'operator set-password': async (ctx) => {
      if (ctx.args.length !== 1) throw usage('wrong number of arguments');
      if (!ctx.values['password-stdin']) throw usage('missing --password-stdin');
      const op = await find(ctx, need(ctx.args[0], '<email>'));
      const password = await stdinPassword(ctx, usage);
      await ctx.repos().db.$transaction(async (tx) => {
        await new OperatorsRepository(tx).setPassword(op.id, password);
        await new AuditRepository(tx).append(cliActor(), {
          action: 'operator.set_password',
          targetType: 'operator',
          targetId: op.id,
        });
      });
      ctx.print({ operator: view(op) }, () => `password of ${op.email} changed`);
      return 0;
    },
  };
}
