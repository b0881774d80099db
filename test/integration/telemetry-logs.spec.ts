/**
 * The trace id in every log line of a request, in the real apps: the gateway and the chat-service
 * run from their main.ts as processes of their own (the way their containers start them, on a NATS of
 * the test's own) with tracing
 * on (OTLP/HTTP to an in-process receiver) and debug logging; their stdout (JSON lines) is captured.
 * A request sent with a known `traceparent` through the official openai SDK must come back with that
 * trace id in `x-trace-id`, and every line either app logs for the request (found by its request id)
 * must carry it as `trace_id`: for a sampled trace and for one the client marked not sampled (which
 * must still be logged under its id, and must export no span).
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  ApiKeysRepository,
  CatalogRepository,
  createPrisma,
  dropDatabase,
  ensureDatabase,
  MembersRepository,
  migrateDeploy,
} from '@infer/persistence';
import OpenAI from 'openai';
import { freePort } from '../../bench/support.js';
import { type OtlpReceiver, startOtlpReceiver } from '../support/otlp-receiver.js';
import { type PrivateServer, privateNats } from '../support/private-servers.js';
import { waitFor } from '../support/wait-for.js';

const REPO = resolve(import.meta.dirname, '../..');
const PG_ROOT = process.env.TEST_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432';

interface App {
  child: ChildProcess;
  /** Every JSON line the app wrote to stdout so far, parsed, with its raw text. */
  lines: Array<{ raw: string; json: Record<string, unknown> }>;
  /** stdout lines that were not JSON (none expected). */
  other: string[];
}

/** An app from its main.ts in a process of its own, its stdout captured line by line. */
function startApp(app: string, env: Record<string, string>): App {
  const child = spawn(
    process.execPath,
    ['--conditions=source', '--import', './tools/ts-register.js', `apps/${app}/src/main.ts`],
    { cwd: REPO, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const out: App = { child, lines: [], other: [] };
  let rest = '';
  child.stdout?.setEncoding('utf8');
  child.stdout?.on('data', (d: string) => {
    const parts = (rest + d).split('\n');
    rest = parts.pop() ?? '';
    for (const raw of parts) {
      if (!raw.trim()) continue;
      try {
        out.lines.push({ raw, json: JSON.parse(raw) as Record<string, unknown> });
      } catch {
        out.other.push(raw);
      }
    }
  });
  return out;
}

async function stop(app: App | undefined): Promise<void> {
  if (!app || app.child.exitCode !== null || app.child.signalCode !== null) return;
  const exited = new Promise((r) => app.child.once('exit', r));
  app.child.kill('SIGTERM');
  await exited;
}

describe('telemetry: the trace id in every log line of a request, in the real gateway and service', () => {
  const tag = randomBytes(4).toString('hex');
  const databaseUrl = `${PG_ROOT}/infer_otel_logs_${tag}`;
  let otlp: OtlpReceiver;
  let gateway: App | undefined;
  let chat: App | undefined;
  let client: OpenAI;
  // A NATS of this test's own: the apps run unchanged from main.ts (no subject prefix), and no other
  // chat-service on the machine can answer in theirs.
  let nats: PrivateServer | undefined;

  before(async () => {
    otlp = await startOtlpReceiver();
    nats = await privateNats();
    await ensureDatabase(databaseUrl);
    await migrateDeploy(databaseUrl);
    const prisma = createPrisma(databaseUrl);
    let key: string;
    try {
      await new CatalogRepository(prisma).syncFromFile('config/models.yaml');
      const member = await new MembersRepository(prisma).create({ name: 'otel-logs', tier: 'premium' });
      key = (await new ApiKeysRepository(prisma).mint(member.id, 'otel-logs')).key;
    } finally {
      await prisma.$disconnect();
    }
    const env = {
      NATS_URL: nats.url,
      LOG_LEVEL: 'debug',
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_TRACES_SAMPLER: 'parentbased_always_on',
      OTEL_BSP_SCHEDULE_DELAY: '200',
    };
    chat = startApp('chat-service', env);
    await waitFor(
      'the chat-service to be ready',
      () => chat?.lines.some((l) => l.json.msg === 'service ready'),
      {
        timeoutMs: 60_000,
        everyMs: 50,
      },
    );
    const port = await freePort();
    gateway = startApp('gateway', {
      ...env,
      DATABASE_URL: databaseUrl,
      HOST: '127.0.0.1',
      PORT: String(port),
      ALLOW_INSECURE_HTTP: '1',
      LIMITS_ENABLED: '0',
    });
    const url = `http://127.0.0.1:${port}`;
    await waitFor(
      'the gateway to be ready',
      async () => {
        if (gateway?.child.exitCode !== null) throw new Error('the gateway exited');
        return (await fetch(`${url}/readyz`).catch(() => null))?.status === 200;
      },
      { timeoutMs: 60_000, everyMs: 100 },
    );
    client = new OpenAI({ apiKey: key, baseURL: `${url}/v1`, maxRetries: 0 });
  });

  after(async () => {
    await stop(gateway);
    await stop(chat);
    await nats?.destroy();
    await otlp?.close();
    await dropDatabase(databaseUrl).catch(() => undefined);
  });

  /**
   * Sends a streamed chat completion with the given traceparent; returns the response's trace and
   * request ids and, once both apps have logged the request, their lines that name its request id.
   */
  async function send(traceparent: string) {
    const { data, response } = await client.chat.completions
      .create(
        {
          model: 'chat-G',
          messages: [{ role: 'user', content: 'Say hello in five words.' }],
          stream: true,
          stream_options: { include_usage: true },
        },
        { headers: { traceparent } },
      )
      .withResponse();
    for await (const _ of data) {
      // drain the stream
    }
    const requestId = response.headers.get('x-request-id') ?? '';
    assert.match(requestId, /.+/);
    const of = (app: App | undefined) => (app?.lines ?? []).filter((l) => l.raw.includes(requestId));
    // The gateway logs its request line when the response has closed; the service its lines as it works.
    const gw = await waitFor('the gateway request line', () =>
      of(gateway).find((l) => l.json.msg === 'request'),
    );
    const svc = await waitFor('the chat-service lines', () => (of(chat).length > 0 ? of(chat) : null));
    return { traceId: response.headers.get('x-trace-id'), requestId, gateway: of(gateway), service: svc, gw };
  }

  it('a sampled traceparent: x-trace-id is its trace id, and so is every log line of the request in both apps', async () => {
    const traceId = randomBytes(16).toString('hex');
    const r = await send(`00-${traceId}-${randomBytes(8).toString('hex')}-01`);
    assert.equal(r.traceId, traceId);
    assert.ok(r.gateway.length >= 1 && r.service.length >= 1);
    for (const l of [...r.gateway, ...r.service]) assert.equal(l.json.trace_id, traceId, l.raw);
    assert.equal(r.gw.json.status, 200);
    assert.equal(
      r.service.some((l) => l.json.msg === 'chat completion done'),
      true,
      'the handler logged its work',
    );
    // The same trace was exported by both processes (sampled): their spans name it.
    const services = await waitFor('spans of both apps', () => {
      const s = new Set(otlp.spans.filter((x) => x.traceId === traceId).map((x) => x.service));
      return s.has('gateway') && s.has('chat-service') ? s : null;
    });
    assert.ok(services.size >= 2);
  });

  it('a traceparent marked not sampled: still its trace id in the header and in every log line, and no span', async () => {
    const traceId = randomBytes(16).toString('hex');
    const r = await send(`00-${traceId}-${randomBytes(8).toString('hex')}-00`);
    assert.equal(r.traceId, traceId);
    for (const l of [...r.gateway, ...r.service]) assert.equal(l.json.trace_id, traceId, l.raw);
    // Spans arrive in each process's export order (a 200 ms batch delay here); after a later
    // sampled request's spans have arrived, none of this trace may have.
    const marker = randomBytes(16).toString('hex');
    await send(`00-${marker}-${randomBytes(8).toString('hex')}-01`);
    await waitFor('the marker trace from both apps', () => {
      const s = new Set(otlp.spans.filter((x) => x.traceId === marker).map((x) => x.service));
      return s.has('gateway') && s.has('chat-service');
    });
    assert.equal(otlp.spans.filter((x) => x.traceId === traceId).length, 0);
  });

  it('no stdout line of either app is anything but JSON', () => {
    assert.deepEqual(gateway?.other, []);
    assert.deepEqual(chat?.other, []);
  });
});
