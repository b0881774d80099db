/**
 * The gateway makes Prisma's client on first use (ADR 0014, "Prisma's client on first use"): start-up,
 * /readyz, auth (key lookup and its last-used time), the catalog, the limits (a quota counter rebuilt
 * from the usage ledger) and a chat completion run on its pg pool, and only a route on Prisma's client
 * (here GET /admin/keys) makes it. Checked on the gateway's own Db (`prismaLoaded`).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { prismaLoaded } from '@infer/persistence';
import { Redis } from 'ioredis';
import { PRISMA } from '../../apps/gateway/src/infra/tokens.js';
import { type Stack, startStack } from './harness.js';

const ADMIN_TOKEN = 'lazy-prisma-admin-token-0123456789';

describe("gateway: Prisma's client only for the routes that need it", () => {
  let stack: Stack;
  const prefix = `lazyprisma:${randomUUID()}:`;
  const loaded = () => prismaLoaded(stack.gateway.app.get(PRISMA));

  before(async () => {
    stack = await startStack({
      env: {
        LIMITS_ENABLED: '1',
        LIMITS_REDIS_PREFIX: prefix,
        ADMIN_TOKEN,
        MODEL_SUBJECT_PREFIX: `test.${randomUUID()}.`,
      },
    });
  });
  after(async () => {
    await stack?.close();
    const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });

  it('start-up, /readyz, auth, the catalog, the limits and a chat completion leave it unloaded', async () => {
    assert.equal(loaded(), false);
    const ready = await fetch(`${stack.url}/readyz`);
    assert.equal(ready.status, 200);
    assert.deepEqual(await ready.json(), {
      status: 'ok',
      checks: { postgres: 'ok', redis: 'ok', nats: 'ok' },
    });

    const models = await stack.client('inference').models.list();
    assert.ok(models.data.some((m) => m.id === 'chat-A'));
    const refused = await fetch(`${stack.baseURL}/models`, {
      headers: { authorization: 'Bearer sk-inf-nope' },
    });
    assert.equal(refused.status, 401);

    const chat = await stack.client('premium').chat.completions.create({
      model: 'chat-A',
      messages: [{ role: 'user', content: 'hello' }],
      max_tokens: 4,
    });
    assert.ok(chat.choices[0]?.message);
    // chat-A's monthly allowance counter was missing in Redis: rebuilt from the ledger (usageTotal on pg).
    const metrics = await (await fetch(`${stack.url}/metrics`)).text();
    assert.match(metrics, /gateway_limits_counter_rebuilds_total\{[^}]*\} [1-9]/);
    assert.equal(loaded(), false);
  });

  it('the first admin request makes it, and it answers as before', async () => {
    const res = await fetch(`${stack.url}/admin/keys`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    assert.equal(res.status, 200);
    const body = (await res.json()) as { data?: unknown[] } | unknown[];
    const rows = Array.isArray(body) ? body : (body.data ?? []);
    assert.equal(rows.length, 3);
    assert.equal(loaded(), true);
  });
});
