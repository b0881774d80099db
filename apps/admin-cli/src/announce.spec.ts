import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { AdminInvalidationSchema, GatewaySubjects } from '@infer/contracts';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { announceChange } from './announce.js';

const NATS_URL = process.env.NATS_URL || 'nats://127.0.0.1:4222';

describe('announceChange (real NATS)', () => {
  let nc: NatsConnection;
  before(async () => {
    nc = await connect({ servers: NATS_URL });
  });
  after(async () => {
    await nc?.close();
  });

  it('publishes the scopes on the gateways’ invalidation subject, under the test prefix', async () => {
    const prefix = `test.${randomUUID()}.`;
    const sub = nc.subscribe(prefix + GatewaySubjects.invalidate, { max: 1 });
    await nc.flush();
    const got = (async () => {
      for await (const m of sub) return AdminInvalidationSchema.parse(JSON.parse(m.string()));
      return null;
    })();
    const r = await announceChange({ NATS_URL, MODEL_SUBJECT_PREFIX: prefix }, ['keys', 'catalog']);
    assert.deepEqual(r, { announced: true });
    const deadline = new Promise<null>((resolve) => setTimeout(resolve, 5000, null).unref());
    const msg = await Promise.race([got, deadline]);
    assert.ok(msg, 'the message arrived within 5 s');
    assert.deepEqual(msg?.scopes, ['keys', 'catalog']);
    assert.match(msg?.origin ?? '', /^admin-cli:/);
  });

  it('says why when NATS cannot be reached, within a couple of seconds, without throwing', async () => {
    // A port that accepts nothing: bind one, take its number, close it.
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const started = Date.now();
    const r = await announceChange({ NATS_URL: `nats://127.0.0.1:${port}` }, ['keys']);
    assert.equal(r.announced, false);
    assert.ok(r.reason, 'a reason is given');
    assert.ok(Date.now() - started < 5000, `gave up in ${Date.now() - started} ms`);
  });
});
