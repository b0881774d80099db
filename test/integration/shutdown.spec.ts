/**
 * Graceful shutdown of a service process (issue 15): SIGTERM during a stream ends the stream with a
 * retryable error that carries the usage of what was streamed, and the process exits within its grace
 * period. The service runs as its own process (apps/chat-service/src/main.ts) on a private NATS.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { ApiError, CatalogEntrySchema, type ServiceRequest, Subjects } from '@infer/contracts';
import { connectNats, type NatsConnection, RpcClient } from '@infer/rpc';
import { type PrivateServer, privateNats } from '../support/private-servers.js';

const GRACE_MS = 400;

interface ReadyLine {
  msg: string;
  ops?: string | null;
}

/** Spawns the chat service and resolves with its ops URL once it logs that it is ready. */
function spawnChatService(natsUrl: string): Promise<{ child: ChildProcess; ops: string }> {
  const child = spawn(
    process.execPath,
    ['--conditions=source', '--import', './tools/ts-register.js', 'apps/chat-service/src/main.ts'],
    {
      env: {
        ...process.env,
        NATS_URL: natsUrl,
        LOG_LEVEL: 'info',
        OPS_PORT: '0',
        OPS_HOST: '127.0.0.1',
        SHUTDOWN_GRACE_MS: String(GRACE_MS),
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  return new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => reject(new Error('chat-service did not get ready in 30 s')), 30_000);
    child.stdout?.on('data', (d: Buffer) => {
      buf += d.toString();
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        try {
          const j = JSON.parse(line) as ReadyLine;
          if (j.msg === 'service ready' && j.ops) {
            clearTimeout(timer);
            resolve({ child, ops: j.ops });
          }
        } catch {
          // not a log line
        }
      }
    });
    child.once('exit', (code) => reject(new Error(`chat-service exited early (${code})`)));
  });
}

describe('chat-service process: graceful shutdown on SIGTERM', () => {
  let nats: PrivateServer;
  let nc: NatsConnection;
  before(async () => {
    nats = await privateNats();
    nc = await connectNats(nats.url, 'shutdown-spec');
  });
  after(async () => {
    await nc?.close();
    await nats?.destroy();
  });

  it('ends an open stream with a retryable 503 carrying its usage, and exits within the grace period', async () => {
    const { child, ops } = await spawnChatService(nats.url);
    try {
      assert.equal((await fetch(`${ops}/healthz`)).status, 200);
      assert.equal((await fetch(`${ops}/readyz`)).status, 200);
      const model = CatalogEntrySchema.parse({
        id: 'chat-sim',
        kind: 'chat',
        rank: 1,
        tiers: ['inference'],
        capabilities: { streaming: true },
        engine: { type: 'simulator', default_output_tokens: 100_000, ttft_ms: 1, itl_ms: 2 },
      });
      const req: ServiceRequest = {
        requestId: randomUUID(),
        memberId: 'member',
        keyId: 'key',
        model,
        body: {
          model: 'chat-sim',
          messages: [{ role: 'user', content: 'Talk for a long time.' }],
          stream: true,
        },
        deadline: Date.now() + 60_000,
        stream: true,
      };
      const st = new RpcClient(nc).stream(Subjects.chatCompletions, req, { idleTimeoutMs: 10_000 });
      let chunks = 0;
      const consumed = (async () => {
        try {
          for await (const _ of st) chunks++;
          return null;
        } catch (e) {
          return e;
        }
      })();
      const deadline = Date.now() + 10_000;
      while (chunks < 5 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
      assert.ok(chunks >= 5, 'the stream is under way');
      const metrics = await (await fetch(`${ops}/metrics`)).text();
      assert.match(metrics, /^infer_rpc_inflight\{service="chat-service"\} 1$/m, 'one request in flight');

      const exited = new Promise<{ code: number | null; at: number }>((r) =>
        child.once('exit', (code) => r({ code, at: Date.now() })),
      );
      const t0 = Date.now();
      child.kill('SIGTERM');
      const err = await consumed;
      assert.ok(err instanceof ApiError, 'the stream ended with an error');
      assert.equal(err.status, 503);
      assert.equal(err.code, 'service_unavailable');
      assert.ok(st.partialUsage, 'the error carried the usage');
      assert.ok(st.partialUsage.completion_tokens >= chunks - 1, 'usage counts what was streamed');
      const { code, at } = await exited;
      assert.equal(code, 0, 'clean exit');
      assert.ok(at - t0 < GRACE_MS + 3_000, `exited within the grace period (${at - t0} ms)`);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
