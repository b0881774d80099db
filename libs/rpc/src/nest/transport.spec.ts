import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { ApiError, type CatalogEntry, type EndFrame, type ServiceRequest } from '@infer/contracts';
import { createLogger } from '@infer/telemetry';
import {
  type CanActivate,
  Controller,
  type ExecutionContext,
  type INestMicroservice,
  Injectable,
  UseGuards,
} from '@nestjs/common';
import { Ctx, MessagePattern, Payload } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { lastValueFrom, toArray } from 'rxjs';
import { connectNats, type NatsConnection } from '../nats.js';
import type { HandlerContext } from '../rpc.js';
import { NatsRpcClientProxy } from './client-proxy.js';
import { PassThroughRpcFilter } from './filters.js';
import { NatsRpcTransport } from './transport.js';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const dec = new TextDecoder();
const usage = (n: number) => ({ prompt_tokens: 1, completion_tokens: n, total_tokens: n + 1 });

/** Resolves when `signal` aborts. */
const aborted = (signal: AbortSignal) =>
  new Promise<void>((r) =>
    signal.aborted ? r() : signal.addEventListener('abort', () => r(), { once: true }),
  );

@Injectable()
class RefuseGuard implements CanActivate {
  canActivate(ctx: ExecutionContext): boolean {
    return (ctx.switchToRpc().getData() as ServiceRequest<{ allow?: boolean }>).body.allow !== false;
  }
}

@Controller()
class TestController {
  /** Per request id: the handler's abort reason once it saw one. */
  readonly abortReasons = new Map<string, unknown>();

  @MessagePattern('t.echo')
  echo(@Payload() req: ServiceRequest<{ text: string }>): Promise<EndFrame> {
    return Promise.resolve({ data: { echo: req.body.text }, usage: usage(1) });
  }

  @MessagePattern('t.fail')
  fail(@Payload() req: ServiceRequest<{ kind: string }>): Promise<EndFrame> {
    if (req.body.kind === 'api') throw ApiError.invalid('bad field', 'messages[0].content');
    throw new TypeError('internal detail that must not leak');
  }

  @UseGuards(RefuseGuard)
  @MessagePattern('t.guarded')
  guarded(): Promise<EndFrame> {
    return Promise.resolve({ data: 'ok', usage: usage(0) });
  }

  /** Streams `count` chunks, one per `everyMs`; on abort returns the usage of what was sent. */
  @MessagePattern('t.stream')
  async stream(
    @Payload() req: ServiceRequest<{ count: number; everyMs: number }>,
    @Ctx() ctx: HandlerContext,
  ): Promise<EndFrame> {
    let sent = 0;
    while (sent < req.body.count && !ctx.signal.aborted) {
      ctx.emit({ i: sent });
      sent++;
      await Promise.race([new Promise((r) => setTimeout(r, req.body.everyMs)), aborted(ctx.signal)]);
    }
    if (ctx.signal.aborted) this.abortReasons.set(req.requestId, ctx.signal.reason);
    return { usage: usage(sent) };
  }
}

const model = { id: 'm' } as CatalogEntry;
const envelope = <B>(body: B, stream = false): ServiceRequest<B> => ({
  requestId: randomUUID(),
  memberId: 'member',
  keyId: 'key',
  model,
  body,
  deadline: Date.now() + 10_000,
  stream,
});

describe('NatsRpcTransport (a Nest microservice on the NATS RPC protocol)', () => {
  const prefix = `test.${randomUUID()}.`;
  let app: INestMicroservice;
  let transport: NatsRpcTransport;
  let serverNc: NatsConnection;
  let clientNc: NatsConnection;
  let client: NatsRpcClientProxy;
  let controller: TestController;
  const opts = { idleTimeoutMs: 5_000 };

  before(async () => {
    serverNc = await connectNats(NATS_URL, 'transport-spec-server');
    clientNc = await connectNats(NATS_URL, 'transport-spec-client');
    const moduleRef = await Test.createTestingModule({
      controllers: [TestController],
      providers: [RefuseGuard],
    }).compile();
    transport = new NatsRpcTransport({
      nc: serverNc,
      queue: `q-${randomUUID()}`,
      log: createLogger('transport-spec', 'silent'),
      subjectPrefix: prefix,
      drainMs: 200,
    });
    app = moduleRef.createNestMicroservice({ strategy: transport, logger: false });
    app.useGlobalFilters(new PassThroughRpcFilter());
    await app.listen();
    controller = app.get(TestController);
    client = new NatsRpcClientProxy(clientNc, opts);
  });
  after(async () => {
    await app.close();
    await serverNc.close();
    await clientNc.close();
  });

  it('subscribes every @MessagePattern with the prefix', () => {
    assert.deepEqual(
      [...transport.subjects].sort(),
      ['t.echo', 't.fail', 't.guarded', 't.stream'].map((s) => prefix + s).sort(),
    );
  });

  it('answers a unary request with the handler’s end frame', async () => {
    const end = await client.call(`${prefix}t.echo`, envelope({ text: 'hi' }), opts);
    assert.deepEqual(end, { data: { echo: 'hi' }, usage: usage(1) });
  });

  it('passes an ApiError through with its status, code and param; hides anything else as a clean 500', async () => {
    const e1 = await client.call(`${prefix}t.fail`, envelope({ kind: 'api' }), opts).catch((e: unknown) => e);
    assert.ok(e1 instanceof ApiError);
    assert.equal(e1.status, 400);
    assert.equal(e1.param, 'messages[0].content');
    const e2 = await client
      .call(`${prefix}t.fail`, envelope({ kind: 'type' }), opts)
      .catch((e: unknown) => e);
    assert.ok(e2 instanceof ApiError);
    assert.equal(e2.status, 500);
    assert.doesNotMatch(e2.message, /internal detail/);
  });

  it('runs Nest guards: a refused request gets an error, an allowed one its answer', async () => {
    const ok = await client.call(`${prefix}t.guarded`, envelope({ allow: true }), opts);
    assert.equal(ok.data, 'ok');
    const refused = await client
      .call(`${prefix}t.guarded`, envelope({ allow: false }), opts)
      .catch((e: unknown) => e);
    assert.ok(refused instanceof ApiError);
  });

  it('streams frames in order, then the end frame with usage', async () => {
    const st = client.stream(`${prefix}t.stream`, envelope({ count: 5, everyMs: 1 }, true), opts);
    const chunks: unknown[] = [];
    for await (const c of st) chunks.push(JSON.parse(dec.decode(c)));
    assert.deepEqual(
      chunks,
      [0, 1, 2, 3, 4].map((i) => ({ i })),
    );
    assert.deepEqual((await st.end).usage, usage(5));
  });

  it('Nest’s ClientProxy.send() emits the chunks then the end frame; unsubscribing cancels the work', async () => {
    const all = await lastValueFrom(
      client.send(`${prefix}t.stream`, envelope({ count: 3, everyMs: 1 }, true)).pipe(toArray()),
    );
    assert.deepEqual(all.slice(0, 3), [{ i: 0 }, { i: 1 }, { i: 2 }]);
    assert.deepEqual((all[3] as EndFrame).usage, usage(3));

    const req = envelope({ count: 1_000, everyMs: 5 }, true);
    await new Promise<void>((resolve) => {
      const sub = client.send(`${prefix}t.stream`, req).subscribe({
        next: () => {
          sub.unsubscribe();
          resolve();
        },
      });
    });
    const deadline = Date.now() + 5_000;
    while (!controller.abortReasons.has(req.requestId) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 10));
    assert.ok(controller.abortReasons.has(req.requestId), 'the handler saw the cancel');
  });

  it('a subject nobody answers is a 503 at once', async () => {
    const t0 = Date.now();
    const e = await client.call(`${prefix}t.nobody`, envelope({}), opts).catch((x: unknown) => x);
    assert.ok(e instanceof ApiError);
    assert.equal(e.status, 503);
    assert.ok(Date.now() - t0 < 2_000);
  });
});

describe('NatsRpcTransport drain on shutdown', () => {
  it('leaves the queue group, lets short work finish, cuts long streams short with a 503 that carries their usage', async () => {
    const prefix = `test.${randomUUID()}.`;
    const serverNc = await connectNats(NATS_URL, 'drain-spec-server');
    const clientNc = await connectNats(NATS_URL, 'drain-spec-client');
    const moduleRef = await Test.createTestingModule({ controllers: [TestController] }).compile();
    const transport = new NatsRpcTransport({
      nc: serverNc,
      queue: `q-${randomUUID()}`,
      log: createLogger('drain-spec', 'silent'),
      subjectPrefix: prefix,
      drainMs: 300,
    });
    const app = moduleRef.createNestMicroservice({ strategy: transport, logger: false });
    app.useGlobalFilters(new PassThroughRpcFilter());
    await app.listen();
    const client = new NatsRpcClientProxy(clientNc);
    const opts = { idleTimeoutMs: 5_000 };
    try {
      const short = client.stream(`${prefix}t.stream`, envelope({ count: 3, everyMs: 20 }, true), opts);
      const long = client.stream(`${prefix}t.stream`, envelope({ count: 10_000, everyMs: 5 }, true), opts);
      const longChunks: unknown[] = [];
      const longDone = (async () => {
        try {
          for await (const c of long) longChunks.push(c);
          return null;
        } catch (e) {
          return e;
        }
      })();
      // Wait until the long stream is under way, then shut down.
      const deadline = Date.now() + 5_000;
      while (longChunks.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
      const t0 = Date.now();
      const closing = app.close();
      // Once the replica has left its queue group, new work is refused at once (no responders).
      while (!transport.rpc.draining) await new Promise((r) => setTimeout(r, 1));
      await serverNc.flush();
      const t1 = Date.now();
      const refused = await client
        .call(`${prefix}t.echo`, envelope({ text: 'x' }), opts)
        .catch((e: unknown) => e);
      assert.ok(
        refused instanceof ApiError && refused.status === 503,
        'a request during the drain gets a 503',
      );
      assert.ok(Date.now() - t1 < 1_000, 'at once');
      await closing;
      const took = Date.now() - t0;
      assert.deepEqual((await short.end).usage, usage(3), 'short work finished within the grace');
      const err = await longDone;
      assert.ok(err instanceof ApiError, 'the long stream ended with an error');
      assert.equal(err.status, 503);
      assert.equal(err.code, 'service_unavailable');
      assert.ok(long.partialUsage, 'its usage came with the error');
      assert.equal(long.partialUsage.completion_tokens, longChunks.length, 'usage counts what was streamed');
      assert.ok(took < 2_000, `closed within the grace period plus a margin (${took} ms)`);
    } finally {
      await serverNc.close();
      await clientNc.close();
    }
  });
});
