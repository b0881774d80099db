import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { after, before, describe, it } from 'node:test';
import { ServiceStatusSchema, StatusSubjects } from '@infer/contracts';
import { connectNats, type NatsConnection } from '@infer/rpc';
import { Module } from '@nestjs/common';
import { waitFor } from '../../../test/support/wait-for.js';
import { idleHeapTrimUsers } from './memory.js';
import { startAppContext } from './nest/microservice.js';
import { registerOpsStatus, StatusPublisher, serviceVersion } from './status.js';

@Module({})
class NothingModule {}

describe('service status messages (console overview)', () => {
  let nc: NatsConnection;
  const prefix = `st${randomBytes(4).toString('hex')}.`;
  before(async () => {
    nc = await connectNats(process.env.NATS_URL ?? 'nats://127.0.0.1:4222', 'status-spec');
  });
  after(async () => {
    await nc.close();
  });

  it('answers an ops status request on its prefix with the registered document, and nothing for another name', async () => {
    registerOpsStatus('status-spec-doc', () => ({ answer: 42 }));
    const p = new StatusPublisher(nc, { service: 'chat-service', inflight: () => 0, subjectPrefix: prefix });
    p.start();
    await nc.flush();
    const collect = async (subject: string) => {
      const out: unknown[] = [];
      try {
        for await (const m of await nc.requestMany(subject, undefined, { strategy: 'timer', maxWait: 300 }))
          out.push(JSON.parse(new TextDecoder().decode(m.data)));
      } catch {
        // no responders
      }
      return out;
    };
    const [reply] = await collect(prefix + StatusSubjects.opsStatus('status-spec-doc'));
    assert.deepEqual(reply, {
      instance: p.instance,
      process: `${hostname()}:${process.pid}`,
      service: 'chat-service',
      status: { answer: 42 },
    });
    assert.deepEqual(await collect(prefix + StatusSubjects.opsStatus('no-such-doc')), []);
    // Another stack's prefix does not reach it.
    assert.deepEqual(await collect(`other${prefix}${StatusSubjects.opsStatus('status-spec-doc')}`), []);
    p.stop();
  });

  it('announces at start, answers a ping at once, and stops with a last message marked stopping', async () => {
    const seen: unknown[] = [];
    const sub = nc.subscribe(prefix + StatusSubjects.all, {
      callback: (_e, m) => {
        seen.push(JSON.parse(new TextDecoder().decode(m.data)));
      },
    });
    let inflight = 3;
    const p = new StatusPublisher(nc, {
      service: 'chat-service',
      inflight: () => inflight,
      intervalMs: 60_000,
      version: '1.0.0-test',
      subjectPrefix: prefix,
    });
    p.start();
    await nc.flush();
    await waitFor('the first status', () => seen.length >= 1);
    const first = ServiceStatusSchema.parse(seen[0]);
    assert.equal(first.service, 'chat-service');
    assert.equal(first.version, '1.0.0-test');
    assert.equal(first.inflight, 3);
    assert.equal(first.instance, p.instance);
    inflight = 5;
    nc.publish(prefix + StatusSubjects.ping);
    await waitFor('the status answering the ping', () => seen.length >= 2);
    assert.equal(ServiceStatusSchema.parse(seen[1]).inflight, 5);
    assert.equal(ServiceStatusSchema.parse(seen[1]).stopping, undefined);
    p.stop();
    nc.publish(prefix + StatusSubjects.ping);
    // The unsubscribe went to the server before the ping: two round trips, and only the goodbye came.
    await nc.flush();
    await nc.flush();
    await waitFor('the last message', () => seen.length >= 3);
    assert.equal(ServiceStatusSchema.parse(seen[2]).stopping, true);
    p.stop();
    await nc.flush();
    assert.equal(seen.length, 3, 'no answer after stop, one goodbye');
    sub.unsubscribe();
  });

  it('carries the readiness checks; a check that throws says not ready', async () => {
    const seen: Array<{ ready?: boolean; checks?: Record<string, boolean> }> = [];
    const sub = nc.subscribe(`${prefix}infer.status.readiness-spec`, {
      callback: (_e, m) => {
        seen.push(JSON.parse(new TextDecoder().decode(m.data)));
      },
    });
    let engine: boolean | null = true;
    const p = new StatusPublisher(nc, {
      service: 'readiness-spec',
      inflight: () => 0,
      intervalMs: 60_000,
      subjectPrefix: prefix,
      readiness: () => {
        if (engine === null) throw new Error('boom');
        return { ready: engine, checks: { nats: true, engine } };
      },
    });
    p.start();
    await waitFor('the first status', () => seen.length >= 1);
    assert.deepEqual([seen[0]?.ready, seen[0]?.checks], [true, { nats: true, engine: true }]);
    engine = false;
    p.publish();
    await waitFor('the second status', () => seen.length >= 2);
    assert.deepEqual([seen[1]?.ready, seen[1]?.checks], [false, { nats: true, engine: false }]);
    engine = null;
    p.publish();
    await waitFor('the third status', () => seen.length >= 3);
    assert.equal(seen[2]?.ready, false);
    p.stop();
    sub.unsubscribe();
  });

  it('a worker-only role (application context) announces itself on its own connection', async () => {
    const seen: Array<{ service: string; version: string }> = [];
    const sub = nc.subscribe(prefix + StatusSubjects.all, {
      callback: (_e, m) => {
        seen.push(JSON.parse(new TextDecoder().decode(m.data)));
      },
    });
    const trimUsers = idleHeapTrimUsers();
    const ctx = await startAppContext({
      name: 'image-service',
      module: NothingModule,
      env: {
        NATS_URL: process.env.NATS_URL ?? 'nats://127.0.0.1:4222',
        LOG_LEVEL: 'silent',
        SERVICE_VERSION: '2.0.0-w',
      },
      statusService: 'image-worker',
      statusSubjectPrefix: prefix,
    });
    try {
      const msg = await waitFor('the image-worker status', () =>
        seen.find((m) => m.service === 'image-worker'),
      );
      assert.equal(msg.version, '2.0.0-w');
      assert.equal(idleHeapTrimUsers(), trimUsers + 1, 'the role runs the idle collection');
    } finally {
      await ctx.stop();
      sub.unsubscribe();
    }
    assert.equal(idleHeapTrimUsers(), trimUsers, 'and stops it with itself');
  });

  it('reports SERVICE_VERSION, else the platform version', () => {
    assert.equal(serviceVersion({ SERVICE_VERSION: 'abc123' }), 'abc123');
    assert.match(serviceVersion({}), /^\d+\.\d+\.\d+/);
  });
});
