/**
 * A test stack is isolated from a development stack running on the same NATS: decoys answer on the
 * DEFAULT subjects (where `scripts/setup.sh`'s services listen), and the test stack's services never
 * reach them. The search-service asks the embedding service on its own subject prefix.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { QueueGroups, Subjects } from '@infer/contracts';
import { connectNats } from '@infer/rpc';
import type { NatsConnection } from '@nats-io/transport-node';
import { type SearchService, startSearchService } from '../../apps/search-service/src/app.js';
import { type Stack, startStack } from './harness.js';

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
