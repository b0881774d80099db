import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { GatewaySubjects } from '@infer/contracts';
import { createPrisma, dropDatabase, hashApiKey } from '@infer/persistence';
import { createTestDatabase, type TestDatabase } from '@infer/persistence/testing';
import { connect } from '@nats-io/transport-node';
import { runAdminCli } from '../../../test/support/processes.js';

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

function cli(args: string[], env: Record<string, string>): Promise<Result> {
  return runAdminCli(args, env);
}

describe('admin CLI end to end', () => {
  let db: TestDatabase;
  let env: Record<string, string>;
  const run = (...args: string[]) => cli(args, env);
  const json = async (...args: string[]) => {
    const r = await run(...args, '--json');
    assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
    return JSON.parse(r.stdout);
  };

  before(async () => {
    // Not migrated: `db migrate` does it (and creates the database).
    db = await createTestDatabase({ migrate: false });
    await dropDatabase(db.url);
    env = { DATABASE_URL: db.url };
  });

  after(async () => {
    await db?.drop();
  });

  it('a command before migrating says to migrate, without a stack trace', async () => {
    const r = await run('member', 'list');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /db migrate/);
    assert.doesNotMatch(r.stderr, /\n\s+at /);
  });

  it('db migrate creates and migrates the database; again is a no-op; db status is up to date', async () => {
    const first = await json('db', 'migrate');
    assert.equal(first.createdDatabase, true);
    assert.ok(first.applied.length >= 1);
    const second = await json('db', 'migrate');
    assert.deepEqual(second.applied, []);
    const status = await json('db', 'status');
    assert.equal(status.upToDate, true);
  });

  it('catalog sync + models list', async () => {
    const sync = await json('catalog', 'sync');
    assert.equal(sync.upserted.length, 12);
    const { models } = await json('models', 'list');
    assert.equal(models.length, 12);
    assert.equal(models[0].id, 'chat-G');
    assert.deepEqual(models[0].tiers, ['premium']);
    const human = await run('models', 'list');
    assert.equal(human.code, 0);
    assert.match(human.stdout, /chat-A\s+chat\s+community,inference,premium/);
    const missing = await run('catalog', 'sync', '--file', 'no/such/file.yaml');
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /catalog file not found/);
  });

  it('member create / set-tier / list, with clear errors', async () => {
    const { member } = await json(
      'member',
      'create',
      '--name',
      'Grace',
      '--email',
      'grace@example.org',
      '--tier',
      'community',
    );
    assert.equal(member.tier, 'community');
    const set = await json('member', 'set-tier', member.id, 'premium');
    assert.equal(set.member.tier, 'premium');
    const { members } = await json('member', 'list');
    assert.ok(members.some((m: { id: string }) => m.id === member.id));

    const badTier = await run('member', 'create', '--name', 'X', '--tier', 'gold');
    assert.equal(badTier.code, 1);
    assert.match(badTier.stderr, /unknown tier: gold/);
    assert.doesNotMatch(badTier.stderr, /\n\s+at /);
    const badMember = await run('member', 'set-tier', 'no-such-member', 'premium');
    assert.equal(badMember.code, 1);
    assert.match(badMember.stderr, /member not found: no-such-member/);
    const badJson = await run('member', 'set-tier', 'no-such-member', 'premium', '--json');
    assert.equal(JSON.parse(badJson.stderr).error.code, 'not_found');
    const noName = await run('member', 'create', '--tier', 'premium');
    assert.equal(noName.code, 2);
    assert.match(noName.stderr, /missing --name/);
    const unknownOption = await run('member', 'list', '--bogus');
    assert.equal(unknownOption.code, 2);
    const unknownCommand = await run('frobnicate');
    assert.equal(unknownCommand.code, 2);
    assert.match(unknownCommand.stderr, /unknown command/);
    const help = await run('--help');
    assert.equal(help.code, 0);
    assert.match(help.stdout, /demo-keys/);
  });

  it('member / models log-bodies switch body logging, audited; a bad value is a usage error', async () => {
    const { member } = await json('member', 'create', '--name', 'Bodies', '--tier', 'inference');
    assert.equal(member.logBodies, false);
    const on = await json('member', 'log-bodies', member.id, 'on');
    assert.equal(on.member.logBodies, true);
    const model = await json('models', 'log-bodies', 'chat-A', 'on');
    assert.deepEqual(model, { model: 'chat-A', log_bodies: true });
    const prisma = createPrisma(db.url);
    try {
      const rows = await prisma.auditEvent.findMany({
        where: { action: { in: ['member.log_bodies_on', 'model.log_bodies_on'] } },
      });
      assert.deepEqual(rows.map((r) => r.targetId).sort(), ['chat-A', member.id].sort());
    } finally {
      await prisma.$disconnect();
    }
    assert.equal((await json('models', 'log-bodies', 'chat-A', 'off')).log_bodies, false);
    const bad = await run('member', 'log-bodies', member.id, 'yes');
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /expected on or off/);
    const missing = await run('models', 'log-bodies', 'no-such-model', 'on');
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /model not found: no-such-model/);
  });

  it('key mint prints the key once; list shows prefixes only; revoke by prefix', async () => {
    const { member } = await json('member', 'create', '--name', 'Keys', '--tier', 'inference');
    const minted = await json('key', 'mint', member.id, '--name', 'ci');
    assert.match(minted.key, /^sk-inf-[0-9A-Za-z]{40}$/);
    assert.equal(minted.record.prefix, minted.key.slice(0, 13));
    const human = await run('key', 'mint', member.id);
    assert.equal(human.code, 0);
    assert.match(human.stdout.split('\n')[0]!, /^sk-inf-[0-9A-Za-z]{40}$/);

    const listed = await run('key', 'list', '--member', member.id, '--json');
    const { keys } = JSON.parse(listed.stdout);
    assert.equal(keys.length, 2);
    assert.ok(!listed.stdout.includes(minted.key), 'list never shows the key');
    assert.ok(!listed.stdout.includes(hashApiKey(minted.key)), 'nor its hash');

    // The revoke is announced to every gateway over NATS (their key caches drop it at once).
    const prefix = `test.${randomUUID()}.`;
    const nc = await connect({ servers: process.env.NATS_URL || 'nats://127.0.0.1:4222' });
    const sub = nc.subscribe(`${prefix}${GatewaySubjects.invalidate}`, { max: 1 });
    await nc.flush();
    const announced = (async () => {
      for await (const m of sub) return JSON.parse(m.string()) as { scopes: string[] };
      return null;
    })();
    const revoked = JSON.parse(
      (await cli(['key', 'revoke', minted.record.prefix, '--json'], { ...env, MODEL_SUBJECT_PREFIX: prefix }))
        .stdout,
    );
    assert.equal(revoked.record.id, minted.record.id);
    assert.ok(revoked.record.revokedAt);
    const deadline = new Promise<null>((resolve) => setTimeout(resolve, 5000, null).unref());
    assert.deepEqual((await Promise.race([announced, deadline]))?.scopes, ['keys'], 'announced within 5 s');
    await nc.close();
    const unknown = await run('key', 'revoke', 'sk-inf-nothere');
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /key not found/);
    const noMember = await run('key', 'mint', 'no-such-member');
    assert.equal(noMember.code, 1);
    assert.match(noMember.stderr, /member not found/);
  });

  it('demo-keys: one member per tier, a fresh key each run, idempotent members', async () => {
    const first = await json('demo-keys');
    assert.deepEqual(
      first.keys.map((k: { tier: string }) => k.tier),
      ['community', 'inference', 'premium'],
    );
    const second = await json('demo-keys', '--rotate');
    for (let i = 0; i < 3; i++) {
      assert.equal(second.keys[i].memberId, first.keys[i].memberId, 'same demo member');
      assert.notEqual(second.keys[i].key, first.keys[i].key, 'fresh key');
      assert.equal(second.keys[i].revoked, 1, 'older demo key revoked');
    }
    // --file: the keys are kept there and shown again on the next run, unless --rotate.
    const keep = join(mkdtempSync(join(tmpdir(), 'demo-keys-')), 'var', 'demo-keys.env');
    const kept1 = await json('demo-keys', '--file', keep);
    const kept2 = await json('demo-keys', '--file', keep);
    assert.deepEqual(
      kept2.keys.map((k: { key: string }) => k.key),
      kept1.keys.map((k: { key: string }) => k.key),
      'the same keys on a second run',
    );
    assert.equal(statSync(keep).mode & 0o777, 0o600);
    const rotated = await json('demo-keys', '--file', keep, '--rotate');
    assert.notEqual(rotated.keys[0].key, kept1.keys[0].key, '--rotate mints new ones');
    const kept3 = await json('demo-keys', '--file', keep);
    assert.equal(kept3.keys[0].key, rotated.keys[0].key, 'and keeps those');
    const envOut = await run('demo-keys', '--env');
    assert.equal(envOut.code, 0);
    assert.match(
      envOut.stdout,
      /^INFER_DEMO_KEY_COMMUNITY=sk-inf-\w{40}\nINFER_DEMO_KEY_INFERENCE=sk-inf-\w{40}\nINFER_DEMO_KEY_PREMIUM=sk-inf-\w{40}\n$/,
    );
    const { members } = await json('member', 'list');
    assert.equal(
      members.filter((m: { email: string | null }) => m.email?.endsWith('@infer.local')).length,
      3,
    );
  });

  it('an unreachable database is one clear line and exit 1', async () => {
    const r = await cli(['member', 'list'], { DATABASE_URL: 'postgresql://postgres@127.0.0.1:1/none' });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /cannot reach PostgreSQL/);
  });
});
