// The ledger writer against the machine's NATS JetStream and PostgreSQL: batches, exactly-once under
// redelivery, and no loss while PostgreSQL is unreachable. PostgreSQL itself is shared with other test
// runs and is never stopped: the writer reaches it through a TCP proxy started here, and "PostgreSQL
// down" means the proxy refuses and cuts every connection.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { UsageEvent } from '@infer/contracts';
import { createPrisma } from '@infer/persistence';
import { createTestDatabase, type TestDatabase } from '@infer/persistence/testing';
import { connectNats, type NatsConnection } from '@infer/rpc';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { type LedgerWriter, startLedgerWriter } from '../../apps/ledger-writer/src/app.js';

/** A TCP proxy to PostgreSQL that can be cut (refuse + drop every connection) and restored. */
class CuttableProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(
    private readonly targetPort: number,
    private readonly targetHost = '127.0.0.1',
  ) {}

  async open(): Promise<void> {
    const server = createServer((client) => {
      const upstream = tcpConnect(this.targetPort, this.targetHost);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    const addr = server.address();
    this.port = typeof addr === 'object' && addr ? addr.port : this.port;
    this.server = server;
  }

  async cut(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    for (const sock of this.sockets) sock.destroy();
    await new Promise<void>((r) => (s ? s.close(() => r()) : r()));
  }
}

const until = async (what: string, cond: () => Promise<boolean>, timeoutMs = 20_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

describe('ledger writer', () => {
  const tag = randomBytes(4).toString('hex');
  const stream = `LEDGERTEST_${tag}`;
  const subjectBase = `ledgertest.${tag}`;
  let db: TestDatabase;
  let prisma: ReturnType<typeof createPrisma>;
  let nc: NatsConnection;
  let proxy: CuttableProxy;
  const writers: LedgerWriter[] = [];
  let seq = 0;

  const event = (over: Partial<UsageEvent> = {}): UsageEvent => ({
    requestId: `req_${tag}_${seq++}`,
    memberId: 'm1',
    keyId: 'k1',
    model: 'chat-A',
    endpoint: '/v1/chat/completions',
    promptTokens: 10,
    completionTokens: 5,
    totalTokens: 15,
    status: 200,
    latencyMs: 12,
    at: Date.now(),
    ...over,
  });

  const publish = async (events: UsageEvent[], msgId = (e: UsageEvent) => e.requestId) => {
    const js = jetstream(nc);
    await Promise.all(
      events.map((e) => js.publish(`${subjectBase}.${e.model}`, JSON.stringify(e), { msgID: msgId(e) })),
    );
  };
  const rows = async () =>
    Number(
      ((await prisma.$queryRawUnsafe('SELECT count(*)::int AS n FROM "UsageEvent"')) as { n: number }[])[0]!
        .n,
    );
  const tokens = async () =>
    Number(
      (
        (await prisma.$queryRawUnsafe(
          'SELECT COALESCE(sum("totalTokens"),0)::int AS n FROM "UsageEvent"',
        )) as {
          n: number;
        }[]
      )[0]!.n,
    );
  const start = (extra: Record<string, string> = {}, beforeAck?: () => void) =>
    startLedgerWriter({
      env: {
        ...process.env,
        DATABASE_URL: db.url.replace(/127\.0\.0\.1:5432|localhost:5432/, `127.0.0.1:${proxy.port}`),
        LOG_LEVEL: 'silent',
        LEDGER_STREAM: stream,
        LEDGER_SUBJECTS: `${subjectBase}.>`,
        LEDGER_CONSUMER: 'ledger-writer',
        LEDGER_BATCH_SIZE: '100',
        LEDGER_ACK_WAIT_MS: '2000',
        LEDGER_RETRY_MAX_MS: '200',
        ...extra,
      },
      beforeAck,
    }).then((w) => {
      writers.push(w);
      return w;
    });

  before(async () => {
    db = await createTestDatabase();
    assert.match(db.url, /127\.0\.0\.1:5432|localhost:5432/, 'the test reaches PostgreSQL through its proxy');
    prisma = createPrisma(db.url);
    proxy = new CuttableProxy(5432);
    await proxy.open();
    nc = await connectNats(process.env.NATS_URL ?? 'nats://127.0.0.1:4222', 'ledger-test');
  });

  after(async () => {
    for (const w of writers) await w.stop();
    await jetstreamManager(nc)
      .then((jsm) => jsm.streams.delete(stream))
      .catch(() => undefined);
    await nc.drain();
    await proxy.cut();
    await prisma.$disconnect();
    await db.drop();
  });

  it('writes events in batches, once each, and acknowledges them', async () => {
    const w = await start();
    const events = Array.from({ length: 250 }, () => event());
    await publish(events);
    await until('250 rows', async () => (await rows()) === 250);
    assert.equal(await tokens(), 250 * 15);
    assert.ok(w.stats.batches >= 3 && w.stats.batches < 250, `batched: ${w.stats.batches} batches`);
    const info = await (await jetstreamManager(nc)).consumers.info(stream, 'ledger-writer');
    await until('all acknowledged', async () => {
      const i = await (await jetstreamManager(nc)).consumers.info(stream, 'ledger-writer');
      return i.num_pending === 0 && i.num_ack_pending === 0;
    });
    assert.ok(info);
  });

  it('counts a redelivered event once: a writer that dies between commit and ack', async () => {
    const before = await rows();
    await writers.pop()!.stop();
    let crashes = 0;
    // This writer commits each batch, then "dies" before acknowledging the first one.
    const w = await start({}, () => {
      if (crashes++ === 0) throw new Error('simulated crash after commit, before ack');
    });
    const events = Array.from({ length: 60 }, () => event({ totalTokens: 7 }));
    await publish(events);
    // JetStream redelivers the unacknowledged batch after ack_wait (2 s): written again, skipped.
    await until('the redelivered batch to be skipped', async () => w.stats.duplicates >= 60, 30_000);
    assert.equal(await rows(), before + 60);
    // The same request published again under a new message id (past JetStream's duplicate window).
    await publish(events.slice(0, 10), (e) => `${e.requestId}-again`);
    await until('the republished events to be skipped', async () => w.stats.duplicates >= 70);
    assert.equal(await rows(), before + 60);
    assert.equal(crashes >= 2, true);
  });

  it('loses nothing while PostgreSQL is unreachable: events wait in the stream, then are written once', async () => {
    const w = writers.at(-1)!;
    const before = await rows();
    const beforeTokens = await tokens();
    await proxy.cut();
    const events = Array.from({ length: 120 }, () => event({ totalTokens: 3 }));
    await publish(events);
    await until('failed attempts', async () => w.stats.failures >= 2);
    const jsm = await jetstreamManager(nc);
    const waiting = await jsm.consumers.info(stream, 'ledger-writer');
    assert.equal(waiting.num_pending + waiting.num_ack_pending, 120, 'every event is still in the stream');
    assert.equal(await rows(), before, 'nothing written meanwhile');
    // A writer restart during the outage loses nothing either.
    await writers.pop()!.stop();
    const w2 = await start();
    await new Promise((r) => setTimeout(r, 300));
    await proxy.open(); // PostgreSQL is back, on the same address
    await until('the backlog to be written', async () => (await rows()) === before + 120, 30_000);
    assert.equal(await tokens(), beforeTokens + 120 * 3);
    await until('the backlog to be acknowledged', async () => {
      const i = await jsm.consumers.info(stream, 'ledger-writer');
      return i.num_pending === 0 && i.num_ack_pending === 0;
    });
    assert.equal(await rows(), before + 120);
    assert.ok(w2.stats.inserted >= 1);
  });

  it('drops a message that is not a usage event instead of blocking the stream', async () => {
    const w = writers.at(-1)!;
    const js = jetstream(nc);
    await js.publish(`${subjectBase}.junk`, '{"not":"an event"}', { msgID: `junk-${tag}` });
    const good = event();
    await publish([good]);
    await until('the good event', async () => {
      const r = (await prisma.$queryRawUnsafe(
        `SELECT count(*)::int AS n FROM "UsageEvent" WHERE "requestId" = '${good.requestId}'`,
      )) as { n: number }[];
      return r[0]!.n === 1;
    });
    assert.ok(w.stats.rejected >= 1);
    // Terminated for good: not left pending, to be redelivered after every ack wait.
    await until('nothing pending or unacknowledged', async () => {
      const i = await jetstreamManager(nc).then((jsm) => jsm.consumers.info(stream, 'ledger-writer'));
      return i.num_pending === 0 && i.num_ack_pending === 0;
    });
  });

  it("takes the gateway's batches (a JSON array per message): every event once, a bad one dropped alone", async () => {
    const w = writers.at(-1)!;
    const rejectedBefore = w.stats.rejected;
    const batch = [event(), event(), event()];
    const js = jetstream(nc);
    const body = JSON.stringify([...batch.slice(0, 2), { not: 'an event' }, batch[2]]);
    await js.publish(`${subjectBase}.chat-A`, body, { msgID: `batch:${batch[0]!.requestId}:4` });
    // The same events again in a message of another id (a batch formed again): stored once by request id.
    await js.publish(`${subjectBase}.chat-A`, JSON.stringify(batch), { msgID: `batch:again-${tag}` });
    const count = async () =>
      (
        (await prisma.$queryRawUnsafe(
          `SELECT count(*)::int AS n FROM "UsageEvent" WHERE "requestId" IN (${batch.map((e) => `'${e.requestId}'`).join(',')})`,
        )) as { n: number }[]
      )[0]!.n;
    await until('the batch written', async () => (await count()) === 3);
    await until('both messages acknowledged', async () => {
      const i = await jetstreamManager(nc).then((jsm) => jsm.consumers.info(stream, 'ledger-writer'));
      return i.num_pending === 0 && i.num_ack_pending === 0;
    });
    assert.equal(await count(), 3);
    assert.equal(w.stats.rejected, rejectedBefore + 1);
  });

  it('writes a fetch holding more events than LEDGER_BATCH_SIZE in statements of at most that many', async () => {
    const w = writers.at(-1)!;
    const batchesBefore = w.stats.batches;
    const insertedBefore = w.stats.inserted;
    const big = Array.from({ length: 250 }, () => event());
    const js = jetstream(nc);
    await js.publish(`${subjectBase}.chat-A`, JSON.stringify(big), {
      msgID: `batch:${big[0]!.requestId}:250`,
    });
    await until('250 events written', async () => w.stats.inserted - insertedBefore === 250);
    // LEDGER_BATCH_SIZE is 100 here: 100 + 100 + 50.
    assert.equal(w.stats.batches - batchesBefore, 3);
  });
});
