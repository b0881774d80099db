// The admin CLI's limits and usage commands, end to end on a throw-away database.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createRepositories, type Repositories } from '@infer/persistence';
import { createTestDatabase, type TestDatabase } from '@infer/persistence/testing';
import { runAdminCli } from '../../../test/support/processes.js';

function cli(args: string[], env: Record<string, string>) {
  return runAdminCli(args, { GATEWAY_URL: '', ADMIN_TOKEN: '', ...env });
}

describe('admin CLI: key limits and usage reports', () => {
  let db: TestDatabase;
  let repos: Repositories;
  let keyId: string;
  let prefix: string;
  let memberId: string;
  const run = (...args: string[]) => cli(args, { DATABASE_URL: db.url });

  before(async () => {
    db = await createTestDatabase();
    repos = createRepositories(db.url);
    const m = await repos.members.create({ name: 'cli-limits', tier: 'inference' });
    memberId = m.id;
    const { record } = await repos.keys.mint(m.id, 'cli');
    keyId = record.id;
    prefix = record.prefix;
    const ev = (i: number, model: string, total: number, at: number) => ({
      requestId: `req_cli_${i}`,
      memberId,
      keyId,
      model,
      endpoint: '/v1/chat/completions',
      promptTokens: total - 2,
      completionTokens: 2,
      totalTokens: total,
      status: 200,
      latencyMs: 4,
      at,
    });
    await repos.usage.insertBatch([
      ev(1, 'chat-A', 100, Date.UTC(2031, 2, 3)),
      ev(2, 'chat-A', 50, Date.UTC(2031, 2, 4)),
      ev(3, 'chat-B', 7, Date.UTC(2031, 2, 5)),
      ev(4, 'chat-B', 1000, Date.UTC(2031, 3, 1)), // next month: outside the period
    ]);
  });
  after(async () => {
    await repos?.close();
    await db?.drop();
  });

  it('sets, shows and clears per-key limit overrides, validated against the limits schema', async () => {
    const set = await run(
      'key',
      'set-limits',
      prefix,
      '{"key":{"requests_per_minute":120},"models":{"chat-A":{"tokens_per_minute":3000000}}}',
      '--json',
    );
    assert.equal(set.code, 0, set.stderr);
    assert.deepEqual(JSON.parse(set.stdout).record.limits, {
      key: { requests_per_minute: 120 },
      models: { 'chat-A': { tokens_per_minute: 3_000_000 } },
    });
    const shown = await run('key', 'limits', keyId, '--json');
    assert.equal(shown.code, 0, shown.stderr);
    const body = JSON.parse(shown.stdout);
    assert.equal(body.overrides.key.requests_per_minute, 120);
    assert.equal(body.state, null, 'no gateway configured: no live state');
    const human = await run('key', 'limits', keyId);
    assert.match(human.stdout, /GATEWAY_URL/);

    const typo = await run('key', 'set-limits', keyId, '{"key":{"rpm":1}}');
    assert.equal(typo.code, 1);
    assert.match(typo.stderr, /invalid limits: key: Unrecognized key/);
    const negative = await run('key', 'set-limits', keyId, '{"key":{"concurrent":-1}}');
    assert.equal(negative.code, 1);
    assert.match(negative.stderr, /key\.concurrent/);
    const notJson = await run('key', 'set-limits', keyId, '{nope');
    assert.equal(notJson.code, 2);
    const unknown = await run('key', 'set-limits', 'sk-inf-000000', '{}');
    assert.equal(unknown.code, 1);

    const cleared = await run('key', 'clear-limits', keyId, '--json');
    assert.equal(cleared.code, 0, cleared.stderr);
    assert.equal(JSON.parse(cleared.stdout).record.limits, null);
  });

  it('reports usage per member, key and model for a period', async () => {
    const r = await run(
      'usage',
      'report',
      '--from',
      '2031-03-01',
      '--to',
      '2031-04-01',
      '--member',
      memberId,
      '--json',
    );
    assert.equal(r.code, 0, r.stderr);
    const { rows } = JSON.parse(r.stdout);
    assert.deepEqual(
      rows.map((x: { model: string; keyId: string; requests: number; totalTokens: number }) => [
        x.model,
        x.keyId,
        x.requests,
        x.totalTokens,
      ]),
      [
        ['chat-A', keyId, 2, 150],
        ['chat-B', keyId, 1, 7],
      ],
    );
    const byMember = await run(
      'usage',
      'report',
      '--from',
      '2031-03-01',
      '--to',
      '2031-05-01',
      '--by',
      'member',
    );
    assert.equal(byMember.code, 0, byMember.stderr);
    assert.match(byMember.stdout, new RegExp(`${memberId}\\s+4\\s+1149\\s+8\\s+1157`));
    const bad = await run('usage', 'report', '--by', 'tier');
    assert.equal(bad.code, 2);
    const badDate = await run('usage', 'report', '--from', 'soon');
    assert.equal(badDate.code, 2);
  });
});
