/**
 * Admin changes and PostgreSQL outages, on a PostgreSQL server of this test's own: an admin change to
 * one key leaves the other keys' cached lookups in place, so a key used before keeps working through
 * an outage that follows; the admin API answers 503 (never 500) while the database is down.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { type Stack, startStack } from '../integration/harness.js';
import { ADMIN_TOKEN } from '../integration/limits-support.js';
import { type PrivateServer, privatePostgres } from '../support/private-servers.js';

const CHAT = { model: 'chat-F', messages: [{ role: 'user' as const, content: 'hello' }], max_tokens: 4 };

async function status(client: OpenAI): Promise<number> {
  try {
    await client.chat.completions.create(CHAT);
    return 200;
  } catch (e) {
    return e instanceof OpenAI.APIError ? (e.status ?? 0) : 0;
  }
}

describe('admin changes and a PostgreSQL outage', () => {
  let pg: PrivateServer;
  let stack: Stack;
  let pgUp = true;
  const pgStop = async () => {
    if (pgUp) await pg.stop();
    pgUp = false;
  };
  const pgStart = async () => {
    if (!pgUp) await pg.start();
    pgUp = true;
  };
  const admin = (path: string, init: RequestInit = {}) =>
    fetch(`${stack.url}${path}`, {
      ...init,
      headers: {
        authorization: `Bearer ${ADMIN_TOKEN}`,
        'content-type': 'application/json',
        ...init.headers,
      },
    });

  before(async () => {
    pg = await privatePostgres();
    stack = await startStack({ pgRoot: pg.url, env: { ADMIN_TOKEN, KEY_CACHE_TTL_MS: '60000' } });
  });
  after(async () => {
    await pgStart().catch(() => undefined);
    await stack?.close().catch(() => undefined);
    await pg?.destroy();
  });

  it('an admin change to another key does not drop a used key: it keeps working while PostgreSQL is down', async () => {
    const used = stack.client('inference');
    assert.equal(await status(used), 200);
    // An unrelated change: the premium key's limit overrides.
    const premium = await stack.prisma.apiKey.findFirstOrThrow({ where: { name: 'it-premium' } });
    const r = await admin(`/admin/keys/${premium.id}/limits`, {
      method: 'PUT',
      body: JSON.stringify({ limits: { key: { requests_per_minute: 100 } } }),
    });
    assert.equal(r.status, 200, await r.text());
    await pgStop();
    for (let i = 0; i < 3; i++) assert.equal(await status(used), 200, 'a key used before the outage');
    assert.equal(await status(stack.client('premium')), 503, 'the changed key must be verified again: 503');
  });

  it('/admin/usage and the other admin reads answer 503 while PostgreSQL is down, never 500', async () => {
    await pgStop();
    for (const path of ['/admin/usage', '/admin/usage?group_by=member', '/admin/members', '/admin/keys']) {
      const r = await admin(path);
      const body = (await r.json()) as { error?: { code?: string } };
      assert.equal(r.status, 503, `${path}: ${JSON.stringify(body)}`);
      assert.equal(body.error?.code, 'service_unavailable');
    }
    await pgStart();
    const r = await admin('/admin/usage');
    assert.equal(r.status, 200, 'back once PostgreSQL is');
  });
});
