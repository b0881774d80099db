/**
 * A test stack is isolated from a development stack running on the same NATS and Redis: decoys answer on
 * the DEFAULT subjects (where `scripts/setup.sh`'s services listen), and the test stack's services never
 * reach them. The search-service asks the embedding service on its own subject prefix. Every namespace
 * variable of every app's config schema (NATS subject prefixes, streams, Redis key prefixes, BullMQ's
 * prefix) is set by the harness to a value of the stack's own, never the default a development stack
 * runs with.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { QueueGroups, Subjects } from '@infer/contracts';
import { connectNats } from '@infer/rpc';
import type { NatsConnection } from '@nats-io/transport-node';
import { type SearchService, startSearchService } from '../../apps/search-service/src/app.js';
import { SECTIONS, shapeOf } from '../../tools/config-doc.js';
import { isolatedEnv, type Stack, stackLedgerEnv, startStack } from './harness.js';

describe('test stacks never reach a development stack on the same NATS', () => {
  let stack: Stack;
  let nc: NatsConnection;
  let svc: SearchService | undefined;
  const decoy: string[] = [];
  const own: string[] = [];

  before(async () => {
    stack = await startStack();
    nc = await connectNats(process.env.NATS_URL ?? 'nats://127.0.0.1:4222', 'isolation-test');
    // The decoy: where a development stack's embedding-service answers (in its queue group, and plainly).
    for (const queue of [QueueGroups.embedding, undefined])
      nc.subscribe(Subjects.embeddings, {
        ...(queue ? { queue } : {}),
        callback: (_e, m) => {
          decoy.push(m.subject);
        },
      });
    nc.subscribe(`${stack.gatewayEnv.MODEL_SUBJECT_PREFIX}${Subjects.embeddings}`, {
      callback: (_e, m) => {
        own.push(m.subject);
      },
    });
    await nc.flush();
  });
  after(async () => {
    await svc?.stop();
    await nc?.drain();
    await stack?.close();
  });

  it("the search-service's embedding requests go to its own prefix, never to the default subject", async () => {
    svc = await startSearchService({
      env: {
        ...process.env,
        DATABASE_URL: stack.databaseUrl,
        LOG_LEVEL: 'silent',
        SEARCH_CACHE_PREFIX: `test:isolation:${randomUUID()}`,
        SEARCH_DOCS_DIR: process.cwd(),
        SEARCH_HYBRID: '1',
        SEARCH_EMBED_INTERVAL_MS: '100',
        SEARCH_TIMEOUT_MS: '300',
      },
      // As the tests start it: the prefix of the stack, nothing said about the embedding service's.
      subjectPrefix: stack.gatewayEnv.MODEL_SUBJECT_PREFIX,
    });
    const deadline = Date.now() + 20_000;
    while (!own.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.ok(own.length > 0, 'the backfill asked the embedding service of its own stack');
    assert.deepEqual(decoy, [], 'nothing reached the default subject');
  });
});

describe("test stacks never use a development stack's Redis prefixes, queues, streams or subjects", () => {
  /**
   * Namespace variables: where the apps name shared NATS subjects and streams or Redis keys. Not
   * namespaces of a shared server: the S3 stores' object prefixes (tests use the filesystem store), and
   * the ledger writer's consumer name, which lives inside the stack's own stream.
   */
  const NAMESPACE = /(_PREFIX|_STREAM|_SUBJECT_ROOT|_SUBJECTS)$/;
  const NOT_SHARED = new Set(['IMAGE_S3_PREFIX', 'FILE_S3_PREFIX']);
  const variables = new Map<string, unknown>();
  for (const section of SECTIONS)
    for (const [name, field] of Object.entries(shapeOf(section.schema))) {
      if (!NAMESPACE.test(name) || NOT_SHARED.has(name)) continue;
      const d = field.safeParse(undefined);
      variables.set(name, d.success ? d.data : undefined);
    }
  const stackEnv = () => {
    const env = isolatedEnv('abcd1234');
    const gatewayEnv = { ...env };
    return { ...env, ...stackLedgerEnv({ databaseUrl: 'postgresql://x/y', gatewayEnv }) };
  };

  it('finds the namespace variables of the apps (the check below covers them)', () => {
    for (const name of [
      'MODEL_SUBJECT_PREFIX',
      'LIMITS_REDIS_PREFIX',
      'BULLMQ_PREFIX',
      'CONSOLE_REDIS_PREFIX',
      'IMAGE_STORE_REDIS_PREFIX',
      'SEARCH_CACHE_PREFIX',
      'USAGE_STREAM',
      'LEDGER_STREAM',
      'STATUS_SUBJECT_PREFIX',
    ])
      assert.ok(variables.has(name), name);
  });

  it('sets every one to a value of its own, apart from the default (no shared key space or subject)', () => {
    const env = stackEnv();
    const shared: string[] = [];
    for (const [name, def] of variables) {
      const value = env[name];
      const defaults = (Array.isArray(def) ? def : [def]).map(String);
      const values = (value ?? '').split(',');
      const clash =
        value === undefined ||
        value === '' ||
        values.some((v) =>
          // A key or subject prefix inside the default's space shares it; a stream name must differ.
          defaults.some((d) => v === d || (name.endsWith('_PREFIX') && d !== '' && v.startsWith(d))),
        );
      if (clash) shared.push(`${name}=${value ?? '(unset)'} (default ${defaults.join(',') || 'empty'})`);
    }
    assert.deepEqual(shared, [], "these would share the development stack's namespace");
  });

  it("a started stack runs with them: the gateway's limits, queues and console keys under its own prefix", async () => {
    const stack = await startStack();
    try {
      const c = stack.gateway.config;
      for (const v of [c.LIMITS_REDIS_PREFIX, c.BULLMQ_PREFIX, c.CONSOLE_REDIS_PREFIX])
        assert.match(v, /^\{?t[0-9a-f]{8}:/);
      assert.equal(c.MODEL_SUBJECT_PREFIX, c.SEARCH_SUBJECT_PREFIX);
    } finally {
      await stack.close();
    }
  });
});
