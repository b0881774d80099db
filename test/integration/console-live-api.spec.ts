/**
 * The console's live API against a real gateway, chat-service and ledger writer, as signed-in
 * operators: the overview (traffic per model from the Redis minute counters, instances from their
 * NATS status messages, ledger lag from JetStream) as JSON and as Server-Sent Events, the keys of all
 * members, a member's quotas, queue pause/resume and one job by id, with viewers refused server side.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  AdminKeyListSchema,
  AuditListSchema,
  ErrorBodySchema,
  MemberQuotasSchema,
  MintedKeySchema,
  OverviewSchema,
  QueueJobDetailSchema,
  Queues,
} from '@infer/contracts';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import { type OperatorSession, operatorCall, operatorSession } from '../support/console-session.js';
import { waitFor } from '../support/wait-for.js';
import { type LiveStack, type Stack, startLiveStack } from './harness.js';

type Operator = OperatorSession;

describe('operator console: live overview, keys, quotas, queue controls (API)', () => {
  let live: LiveStack;
  let stack: Stack;
  let prefix: string;
  let admin: Operator;
  let viewer: Operator;
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

  const call = (method: string, path: string, as: Operator, body?: unknown) =>
    operatorCall(stack.url, as, method, path, body);

  const signIn = (email: string, role: 'admin' | 'viewer') =>
    operatorSession(stack.url, stack.prisma, { email, role, password: `${role} password 123` });

  before(async () => {
    live = await startLiveStack('clive', '9.9.9-test');
    ({ stack, prefix } = live);
    admin = await signIn('admin@example.com', 'admin');
    viewer = await signIn('viewer@example.com', 'viewer');
  });

  after(async () => {
    await live?.close();
  });

  it('overview: traffic per model with p50/p99 and tokens/min, instances with versions, ledger lag', async () => {
    const client = new OpenAI({ baseURL: stack.baseURL, apiKey: stack.keys.inference, maxRetries: 0 });
    const hi = [{ role: 'user' as const, content: 'hi' }];
    for (let i = 0; i < 3; i++)
      await client.chat.completions.create({ model: 'chat-A', messages: hi, max_tokens: 4 });
    await client.chat.completions
      .create({ model: 'no-such-model', messages: hi, max_tokens: 4 })
      .catch(() => undefined);
    const o = await waitFor(
      'chat-A traffic and three kinds of instances in the overview',
      async () => {
        const r = await call('GET', '/admin/overview?minutes=10', viewer);
        assert.equal(r.status, 200, JSON.stringify(r.body));
        const o = OverviewSchema.parse(r.body);
        const services = new Set(o.instances.map((i) => i.service));
        const chat = o.models.find((m) => m.model === 'chat-A');
        return chat &&
          chat.requests >= 3 &&
          ['gateway', 'chat-service', 'ledger-writer'].every((s) => services.has(s))
          ? o
          : undefined;
      },
      { timeoutMs: 15_000, everyMs: 200 },
    );
    assert.equal(o.minutes, 10);
    assert.equal(o.minute_starts.length, 10);
    const chat = o.models.find((m) => m.model === 'chat-A');
    assert.ok(chat);
    assert.equal(chat.tokens_per_min.length, 10);
    assert.ok(chat.tokens > 0, 'tokens counted');
    assert.equal(
      chat.tokens_per_min.reduce((a, b) => a + b, 0),
      chat.tokens,
    );
    // Requests per minute per model too (the console's 24-hour chart takes the current hour from them).
    assert.equal(chat.requests_per_min.length, 10);
    assert.equal(
      chat.requests_per_min.reduce((a, b) => a + b, 0),
      chat.requests,
    );
    assert.ok(chat.p50_ms !== null && chat.p99_ms !== null && chat.p50_ms <= chat.p99_ms);
    assert.ok(o.totals.requests >= 3);
    for (const i of o.instances.filter((i) =>
      ['gateway', 'chat-service', 'ledger-writer'].includes(i.service),
    ))
      assert.equal(i.version, '9.9.9-test', i.instance);
    assert.ok(o.inflight >= 0);
    assert.deepEqual(o.queues.map((q) => q.name).sort(), Object.values(Queues).sort());
    assert.ok(o.queues.every((q) => q.paused === false && typeof q.counts.waiting === 'number'));
    assert.equal(o.ledger.error, null, JSON.stringify(o.ledger));
    assert.equal(typeof o.ledger.pending, 'number');
    // Bad input: the error envelope, naming the parameter.
    const bad = await call('GET', '/admin/overview?minutes=abc', viewer);
    assert.equal(bad.status, 400);
    assert.equal(ErrorBodySchema.parse(bad.body).error.param, 'minutes');
  });

  it('overview stream: Server-Sent Events with the same document; refused without a session', async () => {
    const none = await fetch(`${stack.url}/admin/overview/stream`);
    assert.ok(none.status === 401 || none.status === 404, String(none.status));
    await none.arrayBuffer();
    const ac = new AbortController();
    const res = await fetch(`${stack.url}/admin/overview/stream?minutes=5`, {
      headers: { cookie: viewer.cookie, accept: 'text/event-stream' },
      signal: ac.signal,
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const dec = new TextDecoder();
    let text = '';
    while (!/event: overview\ndata: .*\n\n/.test(text)) {
      const { value, done } = await reader.read();
      if (done) break;
      text += dec.decode(value, { stream: true });
    }
    ac.abort();
    const data = /event: overview\ndata: (.*)\n\n/.exec(text)?.[1];
    assert.ok(data, text.slice(0, 200));
    assert.equal(OverviewSchema.parse(JSON.parse(data)).minutes, 5);
  });

  it('keys of all members: keyset pages, search, rotate; a viewer cannot mint, rotate or revoke', async () => {
    const first = AdminKeyListSchema.parse((await call('GET', '/admin/keys?limit=2', viewer)).body);
    assert.equal(first.data.length, 2);
    assert.ok(first.next_after);
    const second = AdminKeyListSchema.parse(
      (await call('GET', `/admin/keys?limit=2&after=${first.next_after}`, viewer)).body,
    );
    assert.ok(second.data.length >= 1);
    assert.ok(second.data.every((k) => !first.data.some((f) => f.id === k.id)));
    const found = AdminKeyListSchema.parse((await call('GET', '/admin/keys?q=it-premium', viewer)).body);
    assert.equal(found.data.length, 1);
    assert.equal(found.data[0]?.member.tier, 'premium');
    const bad = await call('GET', '/admin/keys?status=lost', viewer);
    assert.equal(bad.status, 400);
    assert.equal(ErrorBodySchema.parse(bad.body).error.param, 'status');
    const nul = await call('GET', '/admin/keys?q=%00', viewer);
    assert.equal(nul.status, 400);
    assert.equal(ErrorBodySchema.parse(nul.body).error.param, 'q');

    const target = found.data[0];
    assert.ok(target);
    for (const [method, path] of [
      ['POST', `/admin/members/${target.member.id}/keys`],
      ['POST', `/admin/keys/${target.id}/rotate`],
      ['POST', `/admin/keys/${target.id}/revoke`],
    ] as const) {
      const r = await call(
        method,
        path,
        viewer,
        method === 'POST' && path.endsWith('/keys') ? {} : undefined,
      );
      assert.equal(r.status, 403, `${method} ${path}`);
      assert.equal(ErrorBodySchema.parse(r.body).error.code, 'insufficient_role');
    }
    const rotated = await call('POST', `/admin/keys/${target.id}/rotate`, admin);
    assert.equal(rotated.status, 201, JSON.stringify(rotated.body));
    const minted = MintedKeySchema.parse(rotated.body);
    // Rotation keeps the key's id (a new secret, shown once); the old secret works until its grace ends.
    assert.equal(minted.record.id, target.id);
    const active = AdminKeyListSchema.parse(
      (await call('GET', `/admin/keys?member=${target.member.id}&status=active`, viewer)).body,
    );
    assert.deepEqual(
      active.data.map((k) => k.id),
      [target.id],
    );
    // Default grace: 24 h.
    assert.ok((active.data[0]?.old_secret_valid_until ?? 0) > Date.now() / 1000 + 23 * 3600);
    const revoked = AdminKeyListSchema.parse(
      (await call('GET', `/admin/keys?member=${target.member.id}&status=revoked`, viewer)).body,
    );
    assert.deepEqual(revoked.data, []);
  });

  it("a member's quotas: the allowance used after a request, as the limits store counts it", async () => {
    const keys = AdminKeyListSchema.parse((await call('GET', '/admin/keys?q=it-community', viewer)).body);
    const memberId = keys.data[0]?.member.id;
    assert.ok(memberId);
    const before = MemberQuotasSchema.parse(
      (await call('GET', `/admin/members/${memberId}/quotas`, viewer)).body,
    );
    const allowance = (q: typeof before) => q.member.find((l) => l.name === 'models.chat-A.allowance_tokens');
    assert.equal(before.enabled, true);
    assert.equal(allowance(before)?.window, 'month');
    // Community has no image model, so no image quota; the inference tier has one.
    assert.ok(!before.member.some((l) => l.name.startsWith('images.')));
    assert.ok(before.member.every((l) => l.scope === 'member' && l.window !== 'minute'));
    const inference = AdminKeyListSchema.parse(
      (await call('GET', '/admin/keys?q=it-inference', viewer)).body,
    );
    const imageQuota = MemberQuotasSchema.parse(
      (await call('GET', `/admin/members/${inference.data[0]?.member.id}/quotas`, viewer)).body,
    ).member.find((l) => l.name === 'images.requests_per_month');
    assert.equal(imageQuota?.window, 'month');
    assert.equal(imageQuota?.limit, 100);
    assert.ok(before.keys[0]?.quotas.some((l) => l.name === 'search.requests_per_day'));
    const used0 = allowance(before)?.used ?? 0;
    const client = new OpenAI({ baseURL: stack.baseURL, apiKey: stack.keys.community, maxRetries: 0 });
    await client.chat.completions.create({
      model: 'chat-A',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 4,
    });
    const after = await waitFor('the allowance to count the request', async () => {
      const q = MemberQuotasSchema.parse(
        (await call('GET', `/admin/members/${memberId}/quotas`, viewer)).body,
      );
      return (allowance(q)?.used ?? 0) > used0 ? q : undefined;
    });
    const a = allowance(after);
    assert.ok(a);
    assert.equal(a.remaining, a.limit - a.used);
    const missing = await call('GET', '/admin/members/nope/quotas', viewer);
    assert.equal(missing.status, 404);
  });

  it('queues: pause and resume (admin, audited; viewer refused), one job by id with a data summary', async () => {
    const refused = await call('POST', '/admin/queues/image-jobs/pause', viewer);
    assert.equal(refused.status, 403);
    const paused = await call('POST', '/admin/queues/image-jobs/pause', admin);
    assert.deepEqual(paused.body, { object: 'queue', name: 'image-jobs', paused: true });
    const list = await call('GET', '/admin/queues', viewer);
    assert.equal(
      (list.body.data as Array<{ name: string; paused: boolean }>).find((q) => q.name === 'image-jobs')
        ?.paused,
      true,
    );
    const resumed = await call('POST', '/admin/queues/image-jobs/resume', admin);
    assert.equal(resumed.body.paused, false);
    const audit = AuditListSchema.parse((await call('GET', '/admin/audit?action=queue.', viewer)).body);
    assert.deepEqual(
      audit.data.map((e) => [e.action, e.target.id]),
      [
        ['queue.resume', 'image-jobs'],
        ['queue.pause', 'image-jobs'],
      ],
    );
    assert.equal((await call('POST', '/admin/queues/nope/pause', admin)).status, 404);

    const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
    const queue = new Queue('image-jobs', { connection, prefix: `${prefix}bull` });
    try {
      const job = await queue.add(
        'generate',
        { prompt: 'a fox', image: 'x'.repeat(1000), n: 2 },
        { attempts: 3 },
      );
      const r = await call('GET', `/admin/queues/image-jobs/jobs/${job.id}`, viewer);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const d = QueueJobDetailSchema.parse(r.body);
      assert.equal(d.state, 'waiting');
      assert.equal(d.attempts_allowed, 3);
      assert.deepEqual(d.data_summary, { prompt: '"a fox"', image: 'string (1000 characters)', n: '2' });
      const none = await call('GET', '/admin/queues/image-jobs/jobs/999999', viewer);
      assert.equal(none.status, 404);
      assert.equal(ErrorBodySchema.parse(none.body).error.param, 'id');
    } finally {
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
      connection.disconnect();
    }
  });
});
