import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { type ApiError, CatalogEntrySchema, type ChatCompletionRequest } from '@infer/contracts';
import { createLogger } from '@infer/telemetry';
import { type FakeUpstream, startFakeUpstream } from '../../../../test/support/fake-openai-upstream.js';
import { toEngineInput } from '../chat/engine-input.js';
import type { EngineDelta, EngineInput } from './engine.js';
import {
  type OpenAIUpstreamEngine,
  openaiUpstreamEngineFactory,
  upstreamMessage,
} from './openai-upstream.js';

const log = createLogger('upstream-spec', 'silent');

function engine(
  base: string,
  scenario: string,
  extra: Record<string, unknown> = {},
  reasoning = 'none',
): OpenAIUpstreamEngine {
  const model = CatalogEntrySchema.parse({
    id: 'up-model',
    kind: 'chat',
    rank: 1,
    tiers: ['inference'],
    capabilities: { tools: true, reasoning },
    engine: { type: 'openai', base_url: base, model: scenario, ...extra },
  });
  return openaiUpstreamEngineFactory.create(model.engine as never, { model, log }) as OpenAIUpstreamEngine;
}

const input = (extra: Partial<ChatCompletionRequest> = {}, reasoning = 'none'): EngineInput =>
  toEngineInput(
    { model: 'up-model', messages: [{ role: 'user', content: 'Hi there' }], ...extra },
    CatalogEntrySchema.parse({
      id: 'up-model',
      kind: 'chat',
      rank: 1,
      tiers: ['inference'],
      capabilities: { tools: true, reasoning },
      engine: { type: 'simulator' },
    }),
  );

async function collect(e: OpenAIUpstreamEngine, inp: EngineInput, signal = new AbortController().signal) {
  const deltas: EngineDelta[] = [];
  for await (const d of e.generate(inp, signal)) deltas.push(d);
  const text = (t: 'content' | 'reasoning') =>
    deltas
      .filter((d) => d.type === t)
      .map((d) => (d as { text: string }).text)
      .join('');
  const finish = deltas.at(-1);
  assert.equal(finish?.type, 'finish');
  return {
    deltas,
    content: text('content'),
    reasoning: text('reasoning'),
    finish: finish as Extract<EngineDelta, { type: 'finish' }>,
  };
}

const weatherTool = {
  type: 'function' as const,
  function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
};

describe('openai upstream engine (against a local fake OpenAI-compatible server)', () => {
  let up: FakeUpstream;
  before(async () => {
    up = await startFakeUpstream();
  });
  after(async () => {
    await up.close();
  });

  it('sends the request in the OpenAI format with the spec defaults, stream and include_usage', async () => {
    const e = engine(up.url, 'plain', { api_key_env: 'UPSTREAM_TEST_KEY' }, 'default_on');
    try {
      await collect(e, input({ max_tokens: 9, stop: ['END'], seed: 5, top_k: 40 }, 'default_on'));
    } finally {
      await e.close();
    }
    const r = up.requests.at(-1);
    assert.equal(r?.path, '/v1/chat/completions');
    assert.equal(r?.headers.authorization, 'Bearer sk-upstream-test');
    assert.deepEqual(r?.body, {
      model: 'plain',
      stream: true,
      stream_options: { include_usage: true },
      temperature: 0.6,
      top_p: 0.95,
      max_tokens: 9,
      stop: ['END'],
      seed: 5,
      top_k: 40,
      messages: [{ role: 'user', content: 'Hi there' }],
      chat_template_kwargs: { enable_thinking: true },
    });
  });

  it('relays content delta by delta and reports the upstream usage', async () => {
    const e = engine(up.url, 'plain');
    const { deltas, content, finish } = await collect(e, input());
    assert.equal(content, 'Hello from the upstream.');
    assert.ok(deltas.filter((d) => d.type === 'content').length >= 4, 'one delta per upstream chunk');
    assert.equal(finish.reason, 'stop');
    assert.deepEqual(finish.usage, { prompt_tokens: 11, completion_tokens: 7, reasoning_tokens: 0 });
    await e.close();
  });

  it('reports the stop string that ended the answer, as vLLM (stop_reason) and SGLang (matched_stop) name it', async () => {
    for (const scenario of ['vllm-stop', 'sglang-stop']) {
      const e = engine(up.url, scenario);
      try {
        const hit = await collect(e, input({ stop: ['NEVER', ' the'] }));
        assert.equal(hit.content, 'Hello from');
        assert.equal(hit.finish.reason, 'stop');
        assert.equal(hit.finish.stop_sequence, ' the', scenario);
        const none = await collect(e, input({ stop: ['NEVER'] }));
        assert.equal(none.finish.reason, 'stop');
        assert.equal(none.finish.stop_sequence, undefined, `${scenario}: no match, no stop_sequence`);
      } finally {
        await e.close();
      }
    }
  });

  it('complete answers keep their connection (reused, not aborted)', async () => {
    const e = engine(up.url, 'plain');
    const conns = up.connections;
    const closed = up.closed;
    for (let i = 0; i < 4; i++) assert.equal((await collect(e, input())).content, 'Hello from the upstream.');
    // undici may open a second connection while the first is being returned to its pool, not more.
    assert.ok(up.connections - conns <= 2, `4 answers over ${up.connections - conns} connections`);
    assert.equal(up.closed, closed, 'no answer was aborted');
    await e.close();
  });

  it('parses <think> out of the content, even with the tags split across chunks', async () => {
    const e = engine(up.url, 'think-inline');
    const r = await collect(e, input());
    assert.equal(r.reasoning, 'Let me think.');
    assert.equal(r.content, 'The answer is 4.');
    await e.close();
  });

  it('passes reasoning_content through and takes the upstream reasoning token count', async () => {
    const e = engine(up.url, 'think-native');
    const r = await collect(e, input());
    assert.equal(r.reasoning, 'Pondering deeply.');
    assert.equal(r.content, 'Four.');
    assert.equal(r.finish.usage.reasoning_tokens, 3);
    await e.close();
  });

  it('passes streamed tool_calls through with their id, name and arguments', async () => {
    const e = engine(up.url, 'tools-native');
    const r = await collect(e, input({ tools: [weatherTool] }));
    const calls = r.deltas.filter((d) => d.type === 'tool_call');
    assert.deepEqual(calls[0], {
      type: 'tool_call',
      index: 0,
      id: 'call_up_1',
      name: 'get_weather',
      arguments: '',
    });
    assert.equal(
      calls.map((c) => (c as { arguments?: string }).arguments ?? '').join(''),
      '{"city": "Paris"}',
    );
    assert.ok(calls.slice(1).every((c) => (c as { name?: string }).name === undefined));
    assert.equal(r.finish.reason, 'tool_calls');
    assert.deepEqual(up.requests.at(-1)?.body.tools, [weatherTool]);
    assert.equal(up.requests.at(-1)?.body.tool_choice, 'auto');
    await e.close();
  });

  it('parses Hermes <tool_call> text into a tool call and finishes with tool_calls', async () => {
    const e = engine(up.url, 'tools-hermes');
    const r = await collect(e, input({ tools: [weatherTool] }));
    assert.equal(r.content, 'Checking. ');
    const calls = r.deltas.filter((d) => d.type === 'tool_call');
    assert.deepEqual(calls, [
      { type: 'tool_call', index: 0, name: 'get_weather', arguments: '{"city":"Paris"}' },
    ]);
    assert.equal(r.finish.reason, 'tool_calls');
    // Without tools offered the same text stays text.
    const plain = await collect(e, input());
    assert.match(plain.content, /<tool_call>/);
    assert.equal(plain.finish.reason, 'stop');
    await e.close();
  });

  it('maps finish_reason length, reads a plain JSON answer, estimates usage when none is sent', async () => {
    const len = engine(up.url, 'length');
    assert.equal((await collect(len, input())).finish.reason, 'length');
    await len.close();
    const json = engine(up.url, 'json-only');
    const j = await collect(json, input());
    assert.equal(j.content, 'Plain JSON answer.');
    assert.equal(j.finish.usage.completion_tokens, 7);
    await json.close();
    const none = engine(up.url, 'no-usage');
    const n = await collect(none, input());
    assert.equal(n.content, 'No usage here.');
    assert.equal(n.finish.usage.completion_tokens, 4, 'the shared approximation: No, usage, here, .');
    assert.ok(n.finish.usage.prompt_tokens > 0);
    await none.close();
  });

  it('serves legacy completions from the upstream /completions', async () => {
    const e = engine(up.url, 'plain');
    const r = await collect(e, { ...input(), messages: [], prompt: 'Once upon a time' });
    assert.equal(r.content, 'Hello from the upstream.');
    const req = up.requests.at(-1);
    assert.equal(req?.path, '/v1/completions');
    assert.equal(req?.body.prompt, 'Once upon a time');
    assert.equal(req?.body.messages, undefined);
    await e.close();
  });

  it('maps upstream errors: 4xx -> 400 with the upstream message, 5xx/401/429 -> clean 5xx', async () => {
    const cases: Array<[string, (e: ApiError) => boolean]> = [
      [
        'bad-request',
        (e) =>
          e.status === 400 && /maximum context length is 4096/.test(e.message) && e.param === 'max_tokens',
      ],
      ['bad-detail', (e) => e.status === 400 && e.message === 'temperature must be <= 2'],
      [
        'server-error',
        (e) => e.status === 500 && !/CUDA|secret/.test(e.message) && e.type === 'server_error',
      ],
      ['unauthorized', (e) => e.status === 500 && !/bad key/.test(e.message)],
      ['busy', (e) => e.status === 503 && e.code === 'service_unavailable'],
      ['mid-error', (e) => e.status === 500 && !/crashed/.test(e.message)],
      ['cut', (e) => e.status === 500 && /before it was finished/.test(e.message)],
      ['no-such-model', (e) => e.status === 500],
    ];
    for (const [scenario, check] of cases) {
      const e = engine(up.url, scenario);
      await assert.rejects(collect(e, input()), (err: ApiError) => check(err), scenario);
      await e.close();
    }
  });

  it('gives a clean 500 for a refused connection and for a server that hangs past timeout_ms', async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const refused = engine(`http://127.0.0.1:${port}/v1`, 'plain');
    await assert.rejects(
      collect(refused, input()),
      (e: ApiError) => e.status === 500 && /could not be reached/.test(e.message),
    );
    await refused.close();
    const hang = engine(up.url, 'hang', { timeout_ms: 300 });
    const t0 = performance.now();
    await assert.rejects(
      collect(hang, input()),
      (e: ApiError) => e.status === 500 && /did not answer in time/.test(e.message),
    );
    const took = performance.now() - t0;
    assert.ok(took >= 250 && took < 5000, `timed out after ${took} ms`);
    await hang.close();
  });

  it('aborts the upstream HTTP request when the signal aborts and still reports usage', async () => {
    const e = engine(up.url, 'slow');
    const ac = new AbortController();
    const before = up.closed;
    const deltas: EngineDelta[] = [];
    for await (const d of e.generate(input(), ac.signal)) {
      deltas.push(d);
      if (deltas.length === 3) ac.abort(new Error('client gone'));
    }
    const fin = deltas.at(-1) as Extract<EngineDelta, { type: 'finish' }>;
    assert.equal(fin.type, 'finish');
    assert.equal(fin.reason, 'cancelled');
    assert.ok(
      fin.usage.completion_tokens >= 3 && fin.usage.completion_tokens < 50,
      `${fin.usage.completion_tokens}`,
    );
    for (let i = 0; i < 100 && up.closed === before; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(up.closed, before + 1, 'the upstream saw its client leave');
    await e.close();
  });

  it('refuses bad settings and a missing key variable with a clean 500 naming the model', () => {
    const m = (engineCfg: Record<string, unknown>) =>
      CatalogEntrySchema.parse({ id: 'bad', kind: 'chat', rank: 1, tiers: ['inference'], engine: engineCfg });
    assert.throws(
      () =>
        openaiUpstreamEngineFactory.create(
          { type: 'openai', base_url: 'not a url' },
          { model: m({ type: 'x' }), log },
        ),
      (e: ApiError) => e.status === 500 && /'bad'/.test(e.message) && /base_url/.test(e.message),
    );
    assert.throws(
      () =>
        openaiUpstreamEngineFactory.create(
          { type: 'openai', base_url: 'http://127.0.0.1:1/v1', api_key_env: 'NOPE_NOT_SET' },
          { model: m({ type: 'x' }), log, env: {} },
        ),
      (e: ApiError) => e.status === 500 && /NOPE_NOT_SET/.test(e.message),
    );
  });

  it('reads error bodies of the common server dialects', () => {
    assert.deepEqual(upstreamMessage('{"error":{"message":"m","param":"messages"}}'), {
      message: 'm',
      param: 'messages',
    });
    assert.deepEqual(upstreamMessage('{"object":"error","message":"vllm says"}'), {
      message: 'vllm says',
      param: null,
    });
    assert.deepEqual(upstreamMessage('{"error":"tgi says","error_type":"validation"}'), {
      message: 'tgi says',
      param: null,
    });
    assert.deepEqual(upstreamMessage('plain text'), { message: 'plain text', param: null });
    assert.deepEqual(upstreamMessage('<html>oops</html>'), { message: null, param: null });
  });
});

process.env.UPSTREAM_TEST_KEY = 'sk-upstream-test';
