/**
 * Air-gapped by default (issue 36, item 4): every app of the platform (gateway, chat, embedding, audio,
 * image and search services, ledger writer, batch runner) runs in a child process whose HTTP_PROXY,
 * HTTPS_PROXY and ALL_PROXY point at a recording proxy (test/support/recording-proxy.ts, a test double
 * that forwards nothing; NO_PROXY only loopback; NODE_USE_ENV_PROXY so that Node's own clients use it
 * too) with HOME in a temporary folder. One request per capability goes through the gateway (chat,
 * embeddings, rerank, speech, transcription, image, search), then: no attempt reached the proxy, no
 * connection to an address other than loopback was attempted by the process, and no telemetry store
 * was written under HOME. The control: the same child's own fetch of a public URL is seen by the proxy.
 */
import assert from 'node:assert/strict';
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import OpenAI, { toFile } from 'openai';
import { type RecordingProxy, recordingProxy } from '../support/recording-proxy.js';

const REPO = resolve(import.meta.dirname, '../..');
const LOOPBACK = '127.0.0.1,localhost,::1';

describe('every app makes no outbound attempt of its own (air-gapped by default)', {
  timeout: 300_000,
}, () => {
  let proxy: RecordingProxy;
  let home: string;
  let child: ChildProcessWithoutNullStreams;
  let lines: Interface;
  let url = '';
  let keys: Record<string, string> = {};
  const messages: Array<Record<string, unknown>> = [];
  const waiting: Array<(m: Record<string, unknown>) => void> = [];
  const next = (key: string, ms = 180_000) =>
    new Promise<Record<string, unknown>>((ok, fail) => {
      const found = messages.findIndex((m) => key in m);
      if (found >= 0) return ok(messages.splice(found, 1)[0] as Record<string, unknown>);
      const timer = setTimeout(() => fail(new Error(`no '${key}' from the stack within ${ms} ms`)), ms);
      waiting.push((m) => {
        if ('exited' in m) {
          clearTimeout(timer);
          return fail(new Error(`the stack process exited (${String(m.exited)}) before '${key}'`));
        }
        if (!(key in m)) return;
        clearTimeout(timer);
        messages.splice(messages.indexOf(m), 1);
        ok(m);
      });
    });

  before(async () => {
    proxy = await recordingProxy();
    home = mkdtempSync(join(tmpdir(), 'air-gap-home-'));
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      ...proxy.env,
      ALL_PROXY: proxy.url,
      all_proxy: proxy.url,
      NO_PROXY: LOOPBACK,
      no_proxy: LOOPBACK,
      NODE_USE_ENV_PROXY: '1',
      HOME: home,
      XDG_CACHE_HOME: join(home, '.cache'),
    };
    // The apps' defaults must hold: nothing from outside that turns telemetry off (onnxruntime keeps
    // it off under CI by itself).
    delete env.ORT_DISABLE_TELEMETRY;
    delete env.CI;
    child = spawn(
      process.execPath,
      ['--conditions=source', '--import', './tools/ts-register.js', 'test/integration/air-gap-stack.ts'],
      { cwd: REPO, env, stdio: ['pipe', 'pipe', 'pipe'] },
    );
    child.stderr.on('data', (d: Buffer) => process.stderr.write(d));
    child.on('exit', (code) => {
      const m = { exited: code };
      messages.push(m);
      for (const w of [...waiting]) w(m);
    });
    lines = createInterface({ input: child.stdout });
    lines.on('line', (line) => {
      let m: Record<string, unknown>;
      try {
        m = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return; // a log line
      }
      messages.push(m);
      for (const w of [...waiting]) w(m);
    });
    const ready = (await next('ready')).ready as { url: string; keys: Record<string, string> };
    url = ready.url;
    keys = ready.keys;
  });

  after(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    lines?.close();
    await proxy?.close();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  it('serves chat, embeddings, rerank, speech, transcription, image and search with zero outbound attempts', async () => {
    // Every app shares this one process's event loop here: a long image or transcription job can make a
    // heartbeat late (a retryable 503); the SDK retries it. What is checked is where the apps connect.
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: keys.inference, maxRetries: 3 });
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${keys.inference}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.status, json: (await res.json()) as Record<string, unknown> };
    };

    const chat = await client.chat.completions.create({
      model: 'chat-E',
      messages: [{ role: 'user', content: 'Hello' }],
      max_tokens: 8,
    });
    assert.ok((chat.usage?.completion_tokens ?? 0) > 0);
    const emb = await client.embeddings.create({ model: 'embed-model', input: 'air-gapped' });
    assert.ok((emb.data[0]?.embedding.length ?? 0) > 0);
    const rerank = await post('/v1/rerank', {
      model: 'rerank',
      query: 'capital of France',
      documents: ['Bananas are yellow', 'Paris is the capital of France'],
    });
    assert.equal(rerank.status, 200, JSON.stringify(rerank.json));
    const speech = await client.audio.speech.create({
      model: 'tts-model',
      input: 'Nothing leaves this machine.',
      voice: 'alloy',
      response_format: 'wav',
    });
    const wav = Buffer.from(await speech.arrayBuffer());
    assert.ok(wav.length > 1000);
    const heard = await client.audio.transcriptions.create({
      file: await toFile(wav, 'speech.wav'),
      model: 'stt-model',
    });
    assert.equal(typeof heard.text, 'string');
    const image = await client.images.generate({
      model: 'image-model',
      prompt: 'a red fox',
      size: '256x256',
    });
    assert.ok(image.data?.[0]);
    const search = await post('/v1/search', { query: 'quick start' });
    assert.equal(search.status, 200, JSON.stringify(search.json));

    child.stdin.write('stop\n');
    const { outbound } = (await next('outbound')) as { outbound: string[] };
    assert.deepEqual(proxy.attempts, [], 'attempts through the proxy');
    assert.deepEqual(outbound, [], 'connections to addresses other than loopback');
    // HOME holds the apps' own local caches (word vectors, the TTS's audio runtime) and the test's
    // transpiler cache; never a telemetry store (onnxruntime's is ~/.cache/Microsoft/DeveloperTools).
    const written = readdirSync(home, { recursive: true }).map(String);
    assert.deepEqual(
      written.filter((p) => /microsoft|telemetry|onnxruntime/i.test(p)),
      [],
      written.join(', '),
    );
  });

  it('control: an outbound request of the same process goes to the recording proxy', async () => {
    // A process with the apps' proxy environment: its fetch of a public URL is what the check above sees.
    const probe = spawn(
      process.execPath,
      [
        '-e',
        "fetch('http://air-gap-probe.example/').then((r) => console.log(r.status), () => console.log('failed'))",
      ],
      {
        cwd: REPO,
        env: {
          ...process.env,
          ...proxy.env,
          NO_PROXY: LOOPBACK,
          no_proxy: LOOPBACK,
          NODE_USE_ENV_PROXY: '1',
          HOME: home,
        },
      },
    );
    let out = '';
    probe.stdout.on('data', (d: Buffer) => {
      out += d;
    });
    await new Promise((done) => probe.on('close', done));
    assert.equal(out.trim(), '502', 'the proxy answered');
    assert.deepEqual(proxy.attempts, [{ method: 'GET', target: 'http://air-gap-probe.example/' }]);
  });
});
