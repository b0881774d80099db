import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type CatalogEntry, CatalogEntrySchema, type ChatCompletionRequest } from '@infer/contracts';
import { createLogger } from '@infer/telemetry';
import { toEngineInput } from '../chat/engine-input.js';
import { countPromptTokens, countTokens } from '../tokens.js';
import type { EngineDelta, EngineFinish } from './engine.js';
import { SimulatorEngine, simulatorEngineFactory } from './simulator.js';

const log = createLogger('simulator-spec', 'silent');

function model(engine: Record<string, unknown> = {}, reasoning = 'none'): CatalogEntry {
  return CatalogEntrySchema.parse({
    id: 'sim',
    kind: 'chat',
    rank: 1,
    tiers: ['inference'],
    capabilities: { reasoning, tools: true },
    engine: { type: 'simulator', ...engine },
  });
}

function engineOf(m: CatalogEntry): SimulatorEngine {
  return simulatorEngineFactory.create(m.engine as never, { model: m, log }) as SimulatorEngine;
}

const ask = (text: string, extra: Partial<ChatCompletionRequest> = {}): ChatCompletionRequest => ({
  model: 'sim',
  messages: [{ role: 'user', content: text }],
  ...extra,
});

interface Run {
  deltas: EngineDelta[];
  content: string;
  reasoning: string;
  finish: EngineFinish;
  times: number[];
}

async function run(
  m: CatalogEntry,
  body: ChatCompletionRequest,
  signal = new AbortController().signal,
  choice = 0,
): Promise<Run> {
  const t0 = performance.now();
  const deltas: EngineDelta[] = [];
  const times: number[] = [];
  for await (const d of engineOf(m).generate(toEngineInput(body, m, choice), signal)) {
    deltas.push(d);
    times.push(performance.now() - t0);
  }
  const finish = deltas.at(-1) as EngineFinish;
  assert.equal(finish.type, 'finish', 'ends with a finish delta');
  assert.equal(deltas.filter((d) => d.type === 'finish').length, 1, 'exactly one finish');
  const text = (type: 'content' | 'reasoning') => deltas.map((d) => (d.type === type ? d.text : '')).join('');
  return { deltas, content: text('content'), reasoning: text('reasoning'), finish, times };
}

describe('simulator engine (test double)', () => {
  it('is deterministic for the same input and differs for another prompt, seed or choice', async () => {
    const m = model();
    const a = await run(m, ask('Tell me about rivers.'));
    const b = await run(m, ask('Tell me about rivers.'));
    assert.equal(a.content, b.content);
    assert.ok(a.content.length > 0);
    assert.notEqual((await run(m, ask('Tell me about stones.'))).content, a.content);
    assert.notEqual((await run(m, ask('Tell me about rivers.', { seed: 7 }))).content, a.content);
    assert.notEqual((await run(m, ask('Tell me about rivers.'), undefined, 1)).content, a.content);
  });

  it('answers default_output_tokens tokens without max_tokens, with exact counts', async () => {
    const m = model({ default_output_tokens: 23 });
    const r = await run(m, ask('Hello there, simulator!'));
    assert.equal(r.finish.reason, 'stop');
    assert.equal(r.finish.usage.completion_tokens, 23);
    assert.equal(r.finish.usage.reasoning_tokens, 0);
    assert.equal(r.deltas.length, 24, 'one delta per token, then the finish');
    assert.equal(countTokens(r.content), 23, 'the text has as many tokens as reported');
    const input = toEngineInput(ask('Hello there, simulator!'), m);
    assert.equal(r.finish.usage.prompt_tokens, countPromptTokens(input.messages, input.tools));
  });

  it('honours max_tokens: finish length with exactly max_tokens tokens, a prefix of a longer answer', async () => {
    const m = model({ default_output_tokens: 5 });
    const r = await run(m, ask('Count to many.', { max_tokens: 40 }));
    assert.equal(r.finish.reason, 'length');
    assert.equal(r.finish.usage.completion_tokens, 40);
    assert.equal(countTokens(r.content), 40);
    const longer = await run(m, ask('Count to many.', { max_completion_tokens: 60 }));
    assert.equal(longer.finish.usage.completion_tokens, 60);
    assert.ok(longer.content.startsWith(r.content));
  });

  it('cuts the content before a stop sequence and finishes with stop', async () => {
    const m = model({ default_output_tokens: 40 });
    const whole = await run(m, ask('Say something long.'));
    const full = whole.content;
    assert.equal(whole.finish.stop_sequence, undefined, 'no stop string ended it');
    const words = full.split(' ');
    const stop = ` ${words[6]}`;
    const cut = full.indexOf(stop);
    assert.ok(cut > 0);
    const r = await run(m, ask('Say something long.', { stop: ['NEVER-THERE', stop] }));
    assert.equal(r.finish.reason, 'stop');
    assert.equal(r.finish.stop_sequence, stop, 'the matched stop string is reported');
    assert.equal(r.content, full.slice(0, cut));
    assert.ok(r.finish.usage.completion_tokens < 40);
    assert.ok(r.finish.usage.completion_tokens >= countTokens(r.content));
    const single = await run(m, ask('Say something long.', { stop }));
    assert.equal(single.content, r.content, 'a single string works too');
  });

  it('reasons first when asked, counting reasoning tokens in the completion', async () => {
    const m = model({ default_output_tokens: 10, reasoning_tokens: 6 }, 'default_off');
    const off = await run(m, ask('Think?'));
    assert.equal(off.reasoning, '');
    const on = await run(m, ask('Think?', { chat_template_kwargs: { enable_thinking: true } }));
    const kinds = on.deltas.map((d) => d.type);
    assert.deepEqual(kinds.slice(0, 6), Array(6).fill('reasoning'));
    assert.deepEqual(kinds.slice(6, 16), Array(10).fill('content'));
    assert.equal(on.finish.usage.reasoning_tokens, 6);
    assert.equal(on.finish.usage.completion_tokens, 16);
    assert.equal(countTokens(on.reasoning), 6);
    const capped = await run(
      m,
      ask('Think?', { chat_template_kwargs: { enable_thinking: true }, max_tokens: 4 }),
    );
    assert.equal(capped.finish.reason, 'length', 'max_tokens counts reasoning');
    assert.equal(capped.finish.usage.completion_tokens, 4);
    assert.equal(capped.content, '');
  });

  const weather = {
    type: 'function' as const,
    function: {
      name: 'get_weather',
      parameters: {
        type: 'object',
        properties: {
          city: { type: 'string' },
          unit: { type: 'string', enum: ['c', 'f'] },
          days: { type: 'integer', minimum: 1, maximum: 7 },
        },
        required: ['city', 'unit', 'days'],
      },
    },
  };
  const clock = { type: 'function' as const, function: { name: 'now' } };

  function toolCalls(r: Run) {
    const calls = new Map<number, { id?: string; name: string; args: string }>();
    for (const d of r.deltas) {
      if (d.type !== 'tool_call') continue;
      const c = calls.get(d.index) ?? { name: '', args: '' };
      if (d.id) c.id = d.id;
      c.name += d.name ?? '';
      c.args += d.arguments ?? '';
      calls.set(d.index, c);
    }
    return [...calls.values()];
  }

  it('calls a tool when required or forced, with JSON arguments from the schema', async () => {
    const m = model();
    const req = await run(m, ask('Hi.', { tools: [weather, clock], tool_choice: 'required' }));
    assert.equal(req.finish.reason, 'tool_calls');
    assert.equal(req.content, '');
    const [call] = toolCalls(req);
    assert.equal(call?.name, 'get_weather', 'required without a named tool calls the first');
    assert.match(call?.id ?? '', /^call_/);
    const args = JSON.parse(call?.args ?? '');
    assert.equal(typeof args.city, 'string');
    assert.ok(['c', 'f'].includes(args.unit));
    assert.ok(Number.isInteger(args.days) && args.days >= 1 && args.days <= 7);
    assert.equal(
      req.finish.usage.completion_tokens,
      1 + countTokens(call?.args ?? ''),
      'name + argument tokens',
    );

    const forced = await run(
      m,
      ask('Hi.', { tools: [weather, clock], tool_choice: { type: 'function', function: { name: 'now' } } }),
    );
    assert.deepEqual(
      toolCalls(forced).map((c) => [c.name, c.args]),
      [['now', '{}']],
    );
  });

  it('with tool_choice auto calls only tools the last user message names', async () => {
    const m = model();
    const plain = await run(m, ask('What is the weather?', { tools: [weather, clock] }));
    assert.equal(plain.finish.reason, 'stop');
    assert.equal(toolCalls(plain).length, 0);
    const named = await run(m, ask('Please call get_weather and now.', { tools: [weather, clock] }));
    assert.deepEqual(
      toolCalls(named).map((c) => c.name),
      ['get_weather', 'now'],
    );
    const single = await run(
      m,
      ask('Please call get_weather and now.', { tools: [weather, clock], parallel_tool_calls: false }),
    );
    assert.deepEqual(
      toolCalls(single).map((c) => c.name),
      ['get_weather'],
    );
    const none = await run(m, ask('Please call get_weather.', { tools: [weather], tool_choice: 'none' }));
    assert.equal(toolCalls(none).length, 0);
    const answered = await run(m, {
      model: 'sim',
      messages: [
        { role: 'user', content: 'Please call get_weather.' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }],
        },
        { role: 'tool', content: 'sunny', tool_call_id: 'c1' },
      ],
      tools: [weather],
    });
    assert.equal(answered.finish.reason, 'stop', 'after a tool result it answers');
  });

  it('emits JSON for response_format', async () => {
    const m = model();
    const obj = await run(m, ask('json please', { response_format: { type: 'json_object' } }));
    assert.equal(typeof JSON.parse(obj.content).answer, 'string');
    const schema = await run(
      m,
      ask('json please', {
        response_format: {
          type: 'json_schema',
          json_schema: {
            name: 'p',
            schema: {
              type: 'object',
              properties: {
                name: { type: 'string' },
                tags: { type: 'array', items: { type: 'string' } },
                ok: { type: 'boolean' },
              },
              required: ['name', 'tags', 'ok'],
            },
          },
        },
      }),
    );
    const v = JSON.parse(schema.content);
    assert.equal(typeof v.name, 'string');
    assert.ok(Array.isArray(v.tags));
    assert.equal(typeof v.ok, 'boolean');
    assert.equal(schema.finish.usage.completion_tokens, countTokens(schema.content));
  });

  it('models time to first token and inter-token latency', async () => {
    const m = model({ ttft_ms: 120, itl_ms: 15, default_output_tokens: 11 });
    const r = await run(m, ask('timing'));
    const first = r.times[0] ?? 0;
    const last = r.times[10] ?? 0;
    // Timers never fire early, so the lower bounds hold on any machine; the upper bounds only say
    // "not wildly late" (a busy machine delays timers, so they are loose).
    assert.ok(first >= 115 && first < 5_000, `first token after ~120 ms, got ${first}`);
    assert.ok(last - first >= 90 && last - first < 10_000, `10 gaps of ~15 ms, got ${last - first}`);
  });

  it('stops at once when the signal aborts, reporting the tokens produced', async () => {
    const m = model({ ttft_ms: 0, itl_ms: 50, default_output_tokens: 1000 });
    const ac = new AbortController();
    const deltas: EngineDelta[] = [];
    let atAbort = 0;
    // Abort after the 4th token arrived (not after a fixed time, which a busy machine stretches).
    for await (const d of engineOf(m).generate(toEngineInput(ask('long'), m, 0), ac.signal)) {
      deltas.push(d);
      const tokens = deltas.filter((x) => x.type === 'content').length;
      if (tokens === 4 && !ac.signal.aborted) {
        atAbort = tokens;
        ac.abort(new Error('client gone'));
      }
    }
    const finish = deltas.at(-1) as EngineFinish;
    assert.equal(finish.type, 'finish');
    assert.equal(finish.reason, 'cancelled');
    const produced = finish.usage.completion_tokens;
    const content = deltas.map((d) => (d.type === 'content' ? d.text : '')).join('');
    assert.ok(
      produced >= atAbort && produced <= atAbort + 1,
      `${atAbort} tokens at the abort, got ${produced}`,
    );
    assert.equal(countTokens(content), produced);

    const slowStart = model({ ttft_ms: 10_000 });
    const ac2 = new AbortController();
    const t1 = performance.now();
    const pending = run(slowStart, ask('never'), ac2.signal);
    ac2.abort();
    const r2 = await pending;
    assert.ok(performance.now() - t1 < 5_000, 'the 10 s ttft wait is cancellable');
    assert.equal(r2.finish.usage.completion_tokens, 0);
  });

  it('refuses invalid settings with a clean message naming the model', () => {
    const m = model();
    assert.throws(
      () => simulatorEngineFactory.create({ type: 'simulator', itl_ms: -1 }, { model: m, log }),
      (e: Error & { status?: number }) =>
        e.status === 500 && /'sim'/.test(e.message) && /itl_ms/.test(e.message),
    );
  });
});
