import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { EnginePoolSchema, EnginePoolSubjects } from '@infer/contracts';
import { AffinityKey, type Endpoint, EnginePool } from '@infer/engine-pool';
import { connectNats, type NatsConnection } from '@infer/rpc';
import { waitFor } from '../../../test/support/wait-for.js';
import { sharePoolMoves } from './pool-moves.js';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';

// Two replicas of the chat-service over a real NATS server: this process's pools (replica A, wired by
// sharePoolMoves) and a bare connection playing replica B.
describe('engine pool moves shared between chat-service replicas (NATS)', () => {
  let a: NatsConnection;
  let b: NatsConnection;
  let stop: () => void;
  const prefix = `moves-${randomUUID()}.`;
  const subject = `${prefix}${EnginePoolSubjects.moves}`;
  const model = `moves-model-${randomUUID()}`;
  const urls = ['http://10.1.0.1:8000/v1', 'http://10.1.0.2:8000/v1'];
  const pool = new EnginePool(
    EnginePoolSchema.parse({ endpoints: urls.map((url) => ({ url })), probe_interval_ms: 0 }),
    { model },
  );
  const keyOf = (s: string) => new AffinityKey().add(s).value();
  const ringOf = (key: number) => (pool.pick({ key }, 0) as Endpoint).url;
  /** A key and the endpoint that is not its ring endpoint. */
  const keyAway = (tag: string): [number, string] => {
    const key = keyOf(tag);
    return [key, urls.find((u) => u !== ringOf(key)) as string];
  };

  before(async () => {
    a = await connectNats(NATS_URL, 'pool-moves-a');
    b = await connectNats(NATS_URL, 'pool-moves-b');
    stop = sharePoolMoves(a, prefix, 'replica-a');
  });
  after(async () => {
    stop?.();
    await pool.close();
    await Promise.all([a?.close(), b?.close()]);
  });

  it("a move made by another replica sends that key's requests where it went; its own and malformed ones are ignored", async () => {
    const [own, ownAway] = keyAway('own origin');
    const [theirs, theirsAway] = keyAway('their move');
    const publish = (o: unknown) => b.publish(subject, typeof o === 'string' ? o : JSON.stringify(o));
    publish('not json');
    publish({ origin: 'replica-b', model, key: 'x', url: theirsAway });
    publish({ origin: 'replica-a', model, key: own, url: ownAway });
    publish({ origin: 'replica-b', model, key: theirs, url: theirsAway });
    await waitFor('the move learned', () => ringOf(theirs) === theirsAway, { timeoutMs: 5_000 });
    // Published before it on the same connection, so already delivered: not applied.
    assert.notEqual(ringOf(own), ownAway);
  });

  it("this replica's moves reach the others", async () => {
    const got: Array<{ origin: string; model: string; key: number; url: string }> = [];
    const sub = b.subscribe(subject, {
      callback: (_e, m) => {
        got.push(m.json());
      },
    });
    await b.flush();
    // Two long first turns whose keys share a ring endpoint: the second moves while the first prefills.
    const first = keyOf('document one');
    let second = 0;
    for (let i = 0; !second; i++)
      if (ringOf(keyOf(`document ${i + 2}`)) === ringOf(first)) second = keyOf(`document ${i + 2}`);
    const l1 = pool.tryAcquire({ key: first, cold: 20_000 });
    const l2 = pool.tryAcquire({ key: second, cold: 20_000 });
    assert.ok(l1 && l2 && l2.endpoint !== l1.endpoint);
    await waitFor('the move published', () => got.some((m) => m.key === second), { timeoutMs: 5_000 });
    assert.deepEqual(
      got.find((m) => m.key === second),
      { origin: 'replica-a', model, key: second, url: l2.endpoint.url },
    );
    l1.release('ok');
    l2.release('ok');
    sub.unsubscribe();
  });
});
