/**
 * An operator's console session for API-level console tests: create the operator, sign in through
 * POST /admin/session and call the admin API with its cookie and CSRF token, as the console does.
 */
import assert from 'node:assert/strict';
import { SessionSchema } from '@infer/contracts';
import { OperatorsRepository } from '@infer/persistence';

export interface OperatorSession {
  cookie: string;
  csrf: string;
}

type Prisma = ConstructorParameters<typeof OperatorsRepository>[0];
type Role = Parameters<OperatorsRepository['create']>[0]['role'];

/** Creates the operator in the database and signs it in on the gateway at `url`. */
export async function operatorSession(
  url: string,
  prisma: Prisma,
  who: { email: string; password: string; role: Role },
): Promise<OperatorSession> {
  await new OperatorsRepository(prisma).create(who);
  const res = await fetch(`${url}/admin/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: who.email, password: who.password }),
  });
  assert.equal(res.status, 200);
  const session = SessionSchema.parse(await res.json());
  return { cookie: (res.headers.get('set-cookie') ?? '').split(';')[0] ?? '', csrf: session.csrf_token };
}

/** One admin API call as `as`: status and parsed JSON body (null when empty). */
export async function operatorCall(
  url: string,
  as: OperatorSession,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: ReturnType<typeof JSON.parse> }> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: {
      cookie: as.cookie,
      'x-csrf-token': as.csrf,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}
