// Optional body logging (docs/adr/0110-request-log.md, "Bodies") end to end through the openai SDK:
// off by default (no body stored); turned on for a member (PATCH /admin/members/{id}, audited) its chat
// bodies, streamed and not, are stored redacted and capped at REQUEST_LOG_BODY_MAX_BYTES; another
// member's stay unlogged, and an API key never reaches the log; turned on for a model its calls are
// logged whoever makes them; the retention sweep deletes bodies past REQUEST_LOG_BODY_RETENTION_DAYS
// while the log rows stay.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { AuditList, RequestLogDetail } from '@infer/contracts';
import { RequestLogRepository } from '@infer/persistence';
import type { LedgerWriter } from '../../apps/ledger-writer/src/app.js';
import { waitFor } from '../support/wait-for.js';
import { type Stack, startStack, startStackLedger } from './harness.js';
import { ADMIN_TOKEN, newKey, type TestKey, writeCatalog } from './limits-support.js';

const CAP = 2048;
const DAY = 86_400_000;
// Has our key format (sk-inf- + 40 base62): must never be stored.
const SECRET_KEY = `sk-inf-${'Zq9Xw8Vu7T'.repeat(4)}`;

describe('request bodies (opt-in per member and model, redacted, capped, own retention)', () => {
  let stack: Stack;
  let ledger: LedgerWriter;
  let a: TestKey;
  let b: TestKey;

  const admin = async <T>(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: T }> => {
    const res = await fetch(`${stack.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${ADMIN_TOKEN}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, body: (await res.json()) as T };
  };
  const logged = (requestId: string) =>
    waitFor(
      `request ${requestId} in the log`,
      async () => {
        const r = await admin<RequestLogDetail>('GET', `/admin/logs/${encodeURIComponent(requestId)}`);
        return r.status === 200 ? r.body : null;
      },
      { timeoutMs: 20_000, everyMs: 50 },
    );
  const chat = async (k: TestKey, content: string, model = 'chat-A') => {
    const { response } = await k.client.chat.completions
      .create({ model, messages: [{ role: 'user', content }], max_tokens: 4 })
      .withResponse();
    return response.headers.get('x-request-id') ?? '';
  };

  before(async () => {
    stack = await startStack({
      catalogFile: writeCatalog({}),
      env: {
        LIMITS_ENABLED: '0',
        ADMIN_TOKEN,
        MODEL_SUBJECT_PREFIX: `test.${randomUUID()}.`,
        REQUEST_LOG_BODY_MAX_BYTES: String(CAP),
      },
    });
    ledger = await startStackLedger(stack);
    a = await newKey(stack, 'inference');
    b = await newKey(stack, 'inference');
  });
  after(async () => {
    await ledger?.stop();
    await stack?.close();
  });

  it('off by default: the request is logged, its bodies are not', async () => {
    const id = await chat(a, `off ${SECRET_KEY}`);
    const entry = await logged(id);
    assert.equal(entry.status, 200);
    assert.equal(entry.bodies, null);
    assert.equal(await stack.prisma.requestLogBody.count(), 0);
    const member = await admin<{ log_bodies: boolean }>('GET', `/admin/members/${a.memberId}`);
    assert.equal(member.body.log_bodies, false);
  });

  it('on for a member (audited): chat bodies, unary and streamed, stored redacted and capped', async () => {
    const on = await admin<{ log_bodies: boolean }>('PATCH', `/admin/members/${a.memberId}`, {
      log_bodies: true,
    });
    assert.equal(on.status, 200);
    assert.equal(on.body.log_bodies, true);
    const audit = await admin<AuditList>(
      'GET',
      `/admin/audit?action=member.log_bodies_on&target_id=${a.memberId}`,
    );
    assert.equal(audit.body.data.length, 1);

    const unary = await chat(a, `my key is ${SECRET_KEY}, header Authorization: Bearer abcdefghijklmnop1234`);
    const u = await waitFor('the unary bodies', async () => (await logged(unary)).bodies, {
      timeoutMs: 20_000,
    });
    const req = JSON.parse(u.request ?? '') as { messages: Array<{ content: string }>; model: string };
    assert.equal(req.model, 'chat-A');
    assert.match(
      req.messages[0]?.content ?? '',
      /^my key is sk-\[redacted\], header Authorization: Bearer \[redacted\]$/,
    );
    assert.ok(!u.request?.includes('Zq9Xw8Vu7T'));
    const res = JSON.parse(u.response ?? '') as {
      object: string;
      choices: Array<{ message: { content: string } }>;
    };
    assert.equal(res.object, 'chat.completion');
    assert.equal(typeof res.choices[0]?.message.content, 'string');
    assert.equal(u.request_truncated, false);
    assert.equal(u.response_truncated, false);

    // Streamed: the frames as the service sent them, one a line; the text the client got is in them.
    const stream = await a.client.chat.completions
      .create({
        model: 'chat-A',
        messages: [{ role: 'user', content: 'stream please' }],
        max_tokens: 4,
        stream: true,
      })
      .withResponse();
    let text = '';
    for await (const chunk of stream.data) text += chunk.choices[0]?.delta?.content ?? '';
    const sid = stream.response.headers.get('x-request-id') ?? '';
    const s = await waitFor('the streamed bodies', async () => (await logged(sid)).bodies, {
      timeoutMs: 20_000,
    });
    assert.match(s.request ?? '', /"stream":true/);
    assert.ok((s.response ?? '').split('\n').filter(Boolean).length >= 2, s.response ?? '');
    for (const word of text.split(/\s+/).filter(Boolean))
      assert.ok(s.response?.includes(word), `${word} in ${s.response}`);

    // Over the cap: cut at REQUEST_LOG_BODY_MAX_BYTES with the marker.
    const big = await chat(a, 'x'.repeat(CAP * 3));
    const g = await waitFor('the capped bodies', async () => (await logged(big)).bodies, {
      timeoutMs: 20_000,
    });
    assert.equal(g.request_truncated, true);
    assert.match(g.request ?? '', /…\[truncated: the body was \d+ bytes\]$/);
    assert.ok(Buffer.byteLength((g.request ?? '').replace(/…\[truncated.*$/, '')) <= CAP);
  });

  it("another member's bodies are not logged, and an API key cannot read the log", async () => {
    const id = await chat(b, `b's secret question ${SECRET_KEY}`);
    assert.equal((await logged(id)).bodies, null);
    const rows = await stack.prisma.requestLogBody.findMany({ select: { memberId: true } });
    assert.deepEqual(new Set(rows.map((r) => r.memberId)), new Set([a.memberId]));
    // A member's API key (b's) cannot reach the operators' log of a's bodies.
    const [aRow] = await stack.prisma.requestLogBody.findMany({ take: 1 });
    const res = await fetch(`${stack.url}/admin/logs/${aRow?.requestId}`, {
      headers: { authorization: `Bearer ${b.key}` },
    });
    assert.ok(res.status === 401 || res.status === 403, `status ${res.status}`);
    assert.ok(!(await res.text()).includes('stream please'));
  });

  it('on for a model: its calls are logged whoever makes them; off again stops it', async () => {
    const on = await admin<{ log_bodies: boolean }>('PATCH', '/admin/models/chat-B', { log_bodies: true });
    assert.equal(on.status, 200);
    assert.equal(on.body.log_bodies, true);
    // Every gateway reloads its catalog on the change; wait until a call shows it.
    const id = await waitFor(
      'chat-B bodies logged for member b',
      async () => {
        const rid = await chat(b, 'model switch', 'chat-B');
        return (await logged(rid)).bodies ? rid : null;
      },
      { timeoutMs: 20_000, everyMs: 200 },
    );
    assert.ok(id);
    assert.equal((await logged(await chat(b, 'other model'))).bodies, null, 'chat-A stays unlogged for b');
    const audit = await admin<AuditList>('GET', '/admin/audit?action=model.log_bodies_on&target_id=chat-B');
    assert.equal(audit.body.data.length, 1);
    const bad = await admin<{ error: { param: string } }>('PATCH', '/admin/models/chat-B', {
      log_bodies: 'yes',
    });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.param, 'log_bodies');
    assert.equal((await admin('PATCH', `/admin/members/${a.memberId}`, { log_bodies: false })).status, 200);
    assert.equal((await logged(await chat(a, 'off again'))).bodies, null);
  });

  it('the retention sweep deletes bodies past their retention; the log row stays', async () => {
    const repo = new RequestLogRepository(stack.prisma);
    const old = Date.now() - 5 * DAY; // past the bodies' 3 days, within the log's 30
    const requestId = `old-${randomUUID()}`;
    await repo.insertBatch(
      [
        {
          requestId,
          memberId: a.memberId,
          keyId: a.keyId,
          model: 'chat-A',
          endpoint: '/v1/chat/completions',
          promptTokens: 1,
          completionTokens: 1,
          totalTokens: 2,
          status: 200,
          latencyMs: 1,
          at: old,
          bodies: { request: '{"old":true}', response: '{}' },
        },
      ],
      { retentionDays: 30, bodyRetentionDays: 365 },
    );
    assert.notEqual((await logged(requestId)).bodies, null);
    const recent = await stack.prisma.requestLogBody.count({
      where: { time: { gt: new Date(Date.now() - DAY) } },
    });
    await ledger.requestLogHousekeeping();
    const entry = await logged(requestId);
    assert.equal(entry.bodies, null);
    assert.equal(entry.status, 200);
    assert.equal(
      await stack.prisma.requestLogBody.count({ where: { time: { gt: new Date(Date.now() - DAY) } } }),
      recent,
    );
  });
});
