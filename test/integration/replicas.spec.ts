// What the Kubernetes manifests rely on, on this machine: every app scales out by adding replicas that
// share one NATS and one Redis. Two gateways, two chat-service and two embedding-service replicas, the
// audio and image api roles, two audio workers, two image workers and two ledger-writers run together
// (workers and ledger-writers as their own processes, started from their main.ts as a container would);
// a load through both gateways is shared by the replicas (the split is printed and checked: NATS
// queue-group deliveries per connection from the server's own monitoring, BullMQ's processedBy per job);
// mid-load an image worker holding a job and a ledger-writer are killed with SIGKILL, and still no BullMQ
// job is lost (every request answered, every job completed, the killed one by the other worker) and no
// usage event is lost or counted twice (ledger rows == requests).
// The test runs its own nats-server (private ports, JetStream in a temporary folder) so that it can read
// the server's per-connection counts; Redis and PostgreSQL are the machine's, under fresh prefixes and a
// fresh database.
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { Queues } from '@infer/contracts';
import {
  ApiKeysRepository,
  CatalogRepository,
  createPrisma,
  dropDatabase,
  ensureDatabase,
  MembersRepository,
  migrateDeploy,
} from '@infer/persistence';
import { Queue } from 'bullmq';
import OpenAI, { toFile } from 'openai';
import { parse as parseYaml, stringify } from 'yaml';
import { startAudioService } from '../../apps/audio-service/src/app.js';
import { startChatService } from '../../apps/chat-service/src/app.js';
import { startEmbeddingService } from '../../apps/embedding-service/src/app.js';
import { type RunningGateway, startGateway } from '../../apps/gateway/src/app.js';
import { startImageService } from '../../apps/image-service/src/app.js';
import { freePort } from '../../bench/support.js';
import { waitFor } from '../support/wait-for.js';

const REPO = resolve(import.meta.dirname, '../..');
const PG_ROOT = process.env.TEST_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const run = promisify(execFile);

/** waitFor, with a failed probe (a server not up yet) counted as not yet. */
function until<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> {
  return waitFor(what, () => fn().catch(() => undefined), { timeoutMs, everyMs: 100 }) as Promise<T>;
}

/** An app started from its main.ts as its own process, the way its container starts it. */
function startProcess(app: string, env: Record<string, string>): ChildProcess {
  const child = spawn(
    process.execPath,
    ['--conditions=source', '--import', './tools/ts-register.js', `apps/${app}/src/main.ts`],
    {
      cwd: REPO,
      env: { PATH: process.env.PATH ?? '', HOME: tmpdir(), ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let err = '';
  child.stderr!.on('data', (d) => {
    err = (err + d).slice(-4000);
  });
  child.on('exit', (code, signal) => {
    if (code && !signal) console.error(`${app} exited ${code}: ${err}`);
  });
  return child;
}

describe('replicas sharing one NATS and one Redis (what the Kubernetes scaling relies on)', () => {
  const tag = randomBytes(4).toString('hex');
  const dir = mkdtempSync(join(tmpdir(), 'infer-replicas-'));
  const databaseUrl = `${PG_ROOT}/infer_rep_${tag}`;
  const bullPrefix = `test-replicas-${tag}`;
  let nats: ChildProcess;
  let monitor: string;
  let natsUrl: string;
  const children = new Map<string, ChildProcess>();
  const stops: Array<() => Promise<void>> = [];
  const gateways: RunningGateway[] = [];
  let key: string;
  let env: Record<string, string>;

  before(async () => {
    // A private NATS with JetStream and its monitoring port.
    const [port, mport] = [await freePort(), await freePort()];
    natsUrl = `nats://127.0.0.1:${port}`;
    monitor = `http://127.0.0.1:${mport}`;
    nats = spawn(
      'nats-server',
      ['-a', '127.0.0.1', '-p', String(port), '-m', String(mport), '-js', '-sd', join(dir, 'js')],
      {
        stdio: 'ignore',
      },
    );
    await until('nats-server', async () => (await fetch(`${monitor}/healthz`)).ok);

    // A fresh database with the default catalog, the image model slowed down so that jobs last.
    await ensureDatabase(databaseUrl);
    await migrateDeploy(databaseUrl);
    const catalog = parseYaml(readFileSync(join(REPO, 'config/models.yaml'), 'utf8'));
    for (const m of catalog.models) {
      if (m.id === 'image-model') m.engine = { type: 'simulator', ttft_ms: 400 };
      // The embedding replicas run in this process: the lexical engines load instantly, where the
      // default GloVe vectors would hold this process's event loop for a second or more while they load.
      if (m.id === 'embed-model') m.engine = { type: 'lexical-hash' };
      if (m.id === 'rerank') m.engine = { type: 'bm25' };
    }
    const catalogFile = join(dir, 'catalog.yaml');
    writeFileSync(catalogFile, stringify(catalog));
    const prisma = createPrisma(databaseUrl);
    await new CatalogRepository(prisma).syncFromFile(catalogFile);
    const member = await new MembersRepository(prisma).create({ name: 'replicas', tier: 'inference' });
    key = (await new ApiKeysRepository(prisma).mint(member.id, 'replicas')).key;
    await prisma.$disconnect();

    env = {
      NATS_URL: natsUrl,
      REDIS_URL,
      DATABASE_URL: databaseUrl,
      BULLMQ_PREFIX: bullPrefix,
      IMAGE_STORE_REDIS_PREFIX: `test:replicas:${tag}:img:`,
      LOG_LEVEL: 'silent',
      // A killed worker's job is taken over once its lock expires: short here, minutes in production.
      IMAGE_LOCK_DURATION_MS: '2000',
      AUDIO_LOCK_DURATION_MS: '2000',
      AUDIO_STALLED_INTERVAL_MS: '1000',
      AUDIO_WORKER_CONCURRENCY: '1',
      IMAGE_WORKER_CONCURRENCY: '1',
      // A killed ledger-writer's unacknowledged batch is redelivered after this.
      LEDGER_ACK_WAIT_MS: '2000',
      LEDGER_MAX_WAIT_MS: '1000',
    };
    const appEnv = { ...process.env, ...env };
    // Processes that are killed: the workers and the ledger-writers.
    for (const i of [1, 2]) {
      children.set(
        `image-worker-${i}`,
        startProcess('image-service', {
          ...env,
          IMAGE_ROLE: 'worker',
          IMAGE_WORKER_NAME: `image-worker-${i}`,
        }),
      );
      children.set(
        `audio-worker-${i}`,
        startProcess('audio-service', {
          ...env,
          AUDIO_ROLE: 'worker',
          AUDIO_WORKER_NAME: `audio-worker-${i}`,
        }),
      );
      children.set(`ledger-writer-${i}`, startProcess('ledger-writer', env));
    }
    // In this process: two of each NATS service, the api roles and two gateways.
    for (let i = 0; i < 2; i++) {
      const chat = await startChatService({ env: appEnv });
      const embed = await startEmbeddingService({ env: appEnv });
      stops.push(
        () => chat.stop(),
        () => embed.stop(),
      );
    }
    const audio = await startAudioService({ env: appEnv, role: 'api' });
    const image = await startImageService({ env: appEnv, role: 'api' });
    stops.push(
      () => audio.stop(),
      () => image.stop(),
    );
    for (let i = 0; i < 2; i++) {
      gateways.push(
        await startGateway({
          ...appEnv,
          HOST: '127.0.0.1',
          PORT: '0',
          ALLOW_INSECURE_HTTP: '1',
          LIMITS_ENABLED: '0',
          IMAGE_URL_SECRET: 'replicas-test-image-url-secret-0123456789abcdef',
        }),
      );
    }
    // Workers registered with BullMQ, ledger-writers bound to the durable consumer.
    const imageQueue = new Queue(Queues.imageJobs, { connection: { url: REDIS_URL }, prefix: bullPrefix });
    const audioQueue = new Queue(Queues.audioTranscriptions, {
      connection: { url: REDIS_URL },
      prefix: bullPrefix,
    });
    await until('2 image workers', async () => (await imageQueue.getWorkers()).length >= 2, 45_000);
    await until('2 audio workers', async () => (await audioQueue.getWorkers()).length >= 2, 45_000);
    await imageQueue.close();
    await audioQueue.close();
  });

  after(async () => {
    for (const c of children.values()) c.kill('SIGKILL');
    for (const g of gateways) await g.close().catch(() => undefined);
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    for (const q of [Queues.imageJobs, Queues.audioTranscriptions]) {
      const queue = new Queue(q, { connection: { url: REDIS_URL }, prefix: bullPrefix });
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
    }
    nats?.kill('SIGTERM');
    await dropDatabase(databaseUrl).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  it('shares the load, and a killed worker and ledger-writer lose no job and no usage event', async () => {
    const clients = gateways.map(
      (g) => new OpenAI({ baseURL: `${g.url}/v1`, apiKey: key, maxRetries: 0, timeout: 60_000 }),
    );
    const via = (i: number) => clients[i % 2]!;
    const wavFile = join(dir, 'hello.wav');
    await run('flite', ['-voice', 'slt', '-t', 'hello world', '-o', wavFile]);
    const wav = readFileSync(wavFile);

    const imageQueue = new Queue(Queues.imageJobs, { connection: { url: REDIS_URL }, prefix: bullPrefix });
    const audioQueue = new Queue(Queues.audioTranscriptions, {
      connection: { url: REDIS_URL },
      prefix: bullPrefix,
    });
    const counts = { chat: 40, embeddings: 40, images: 8, transcriptions: 6 };
    const load = [
      ...Array.from({ length: counts.chat }, (_, i) =>
        via(i).chat.completions.create({
          model: 'chat-F',
          messages: [{ role: 'user', content: `hello ${i}` }],
          max_tokens: 8,
        }),
      ),
      ...Array.from({ length: counts.embeddings }, (_, i) =>
        via(i).embeddings.create({ model: 'embed-model', input: `text ${i}` }),
      ),
      ...Array.from({ length: counts.images }, (_, i) =>
        via(i).images.generate({
          model: 'image-model',
          prompt: `a lighthouse ${i}`,
          size: '256x256',
          response_format: 'b64_json',
        }),
      ),
      ...Array.from({ length: counts.transcriptions }, async (_, i) =>
        via(i).audio.transcriptions.create({ model: 'stt-model', file: await toFile(wav, 'hello.wav') }),
      ),
    ];

    // Mid-load: kill an image worker that has finished a job and holds another, and one ledger-writer.
    const { victim, jobId } = await until(
      'an image worker busy with its second job',
      async () => {
        const done = new Set((await imageQueue.getJobs(['completed'])).map((j) => j.processedBy));
        const active = (await imageQueue.getJobs(['active'])).find(
          (j) => j.processedBy && done.has(j.processedBy),
        );
        return active ? { victim: active.processedBy!, jobId: active.id! } : undefined;
      },
      30_000,
    );
    children.get(victim)!.kill('SIGKILL');
    children.get('ledger-writer-1')!.kill('SIGKILL');

    const results = await Promise.allSettled(load);
    const failed = results
      .map((r, i) => (r.status === 'rejected' ? `request ${i}: ${String(r.reason)}` : ''))
      .filter(Boolean);
    assert.deepEqual(failed, [], 'every request answered');
    const total = results.length;

    // The split. NATS: deliveries to each queue-group subscription, per connection, from the server.
    const connz = (await (await fetch(`${monitor}/connz?subs=detail&limit=1000`)).json()) as {
      connections: {
        cid: number;
        name?: string;
        subscriptions_list_detail?: { subject: string; qgroup?: string; msgs: number }[];
      }[];
    };
    const perConnection = (group: string) =>
      connz.connections
        .map((c) => ({
          cid: c.cid,
          msgs: (c.subscriptions_list_detail ?? [])
            .filter((s) => s.qgroup === group)
            .reduce((a, s) => a + s.msgs, 0),
        }))
        .filter((c) =>
          (connz.connections.find((x) => x.cid === c.cid)!.subscriptions_list_detail ?? []).some(
            (s) => s.qgroup === group,
          ),
        );
    const chatSplit = perConnection('chat-service');
    const embedSplit = perConnection('embedding-service');
    // BullMQ: who completed each job.
    const completedBy = async (q: Queue) => {
      const jobs = await q.getJobs(['completed']);
      const by: Record<string, number> = {};
      for (const j of jobs) by[j.processedBy ?? '?'] = (by[j.processedBy ?? '?'] ?? 0) + 1;
      return { jobs, by };
    };
    const images = await completedBy(imageQueue);
    const audio = await completedBy(audioQueue);
    const gatewayCounts = await Promise.all(
      gateways.map(async (g) => {
        const text = await (await fetch(`${g.url}/metrics`)).text();
        return [...text.matchAll(/^gateway_http_requests_total\{[^}]*route="\/v1[^}]*\} (\d+)/gm)].reduce(
          (a, m) => a + Number(m[1]),
          0,
        );
      }),
    );
    console.log(
      `split: gateways ${gatewayCounts.join('/')}, chat-service ${chatSplit.map((c) => c.msgs).join('/')}, embedding-service ${embedSplit
        .map((c) => c.msgs)
        .join(
          '/',
        )}, image workers ${JSON.stringify(images.by)} (killed ${victim}), audio workers ${JSON.stringify(audio.by)}`,
    );
    assert.equal(chatSplit.length, 2);
    assert.equal(embedSplit.length, 2);
    for (const c of [...chatSplit, ...embedSplit]) assert.ok(c.msgs > 0, 'every NATS replica took work');
    assert.ok(chatSplit.reduce((a, c) => a + c.msgs, 0) >= counts.chat);
    for (const n of gatewayCounts) assert.ok(n >= total / 2 - 1, `gateway share ${n} of ${total}`);
    assert.equal(
      Object.keys(audio.by).length,
      2,
      `both audio workers took jobs: ${JSON.stringify(audio.by)}`,
    );

    // No BullMQ job lost: all completed, none failed, the killed worker's job finished by the other one.
    assert.equal(images.jobs.length, counts.images);
    assert.equal(audio.jobs.length, counts.transcriptions);
    assert.equal((await imageQueue.getJobCounts('failed')).failed, 0);
    const survivor = victim === 'image-worker-1' ? 'image-worker-2' : 'image-worker-1';
    assert.equal(
      Object.keys(images.by).length,
      2,
      `both image workers took jobs: ${JSON.stringify(images.by)}`,
    );
    const killedJob = images.jobs.find((j) => j.id === jobId);
    assert.equal(
      killedJob?.processedBy,
      survivor,
      'the job held by the killed worker was finished by the other one',
    );

    // No usage event lost, none counted twice: one ledger row per request, once the survivor drained.
    const prisma = createPrisma(databaseUrl);
    try {
      const rows = await until(
        'the ledger to hold every request',
        async () => {
          const n = await prisma.usageEvent.count();
          return n >= total ? n : undefined;
        },
        30_000,
      );
      assert.equal(rows, total);
      const ids = await prisma.usageEvent.findMany({ select: { requestId: true } });
      assert.equal(new Set(ids.map((r) => r.requestId)).size, total);
    } finally {
      await prisma.$disconnect();
      await imageQueue.close();
      await audioQueue.close();
    }
  });
});
