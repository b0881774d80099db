import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  type ApiError,
  type CatalogEntry,
  CatalogEntrySchema,
  type ChatCompletionRequest,
} from '@infer/contracts';
import { createLogger } from '@infer/telemetry';
import { writeTinyLlamaGguf } from '../../../../../test/support/tiny-llama-gguf.mjs';
import { toEngineInput } from '../../chat/engine-input.js';
import { checkJson } from '../../structured/json-schema.js';
import type { EngineDelta, EngineInput } from '../engine.js';
import { type LlamaCppEngine, llamaCppEngineFactory } from './llama-cpp.engine.js';

const log = createLogger('llama-spec', 'silent');

/** The tiny model has RANDOM weights: these tests check mechanics, never meaning. */
describe('embedded llama.cpp engine (tiny random-weight GGUF)', () => {
  let dir: string;
  let gguf: string;
  let eng: LlamaCppEngine;
  let entry: CatalogEntry;

  const model = (reasoning: string, engine: Record<string, unknown> = {}, id = 'tiny') =>
    CatalogEntrySchema.parse({
      id,
      kind: 'chat',
      rank: 1,
      tiers: ['inference'],
      context_window: 2048,
      capabilities: { reasoning, tools: true, response_format: true },
      engine: { type: 'llama-cpp', gguf, threads: 1, reasoning_budget: 6, ...engine },
    });
  const make = (m: CatalogEntry) =>
    llamaCppEngineFactory.create(m.engine as never, { model: m, log }) as LlamaCppEngine;
  const input = (extra: Partial<ChatCompletionRequest> = {}, m = entry): EngineInput =>
    toEngineInput(
      { model: m.id, messages: [{ role: 'user', content: 'hello world' }], seed: 7, ...extra },
      m,
    );

  async function run(e: LlamaCppEngine, inp: EngineInput, signal = new AbortController().signal) {
    const deltas: EngineDelta[] = [];
    for await (const d of e.generate(inp, signal)) deltas.push(d);
    const text = (t: 'content' | 'reasoning') =>
      deltas
        .filter((d) => d.type === t)
        .map((d) => (d as { text: string }).text)
        .join('');
    const finish = deltas.at(-1) as Extract<EngineDelta, { type: 'finish' }>;
    assert.equal(finish?.type, 'finish');
    const calls = deltas.filter((d) => d.type === 'tool_call') as Array<
      Extract<EngineDelta, { type: 'tool_call' }>
    >;
    return { deltas, content: text('content'), reasoning: text('reasoning'), calls, finish };
  }

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'llama-spec-'));
    gguf = writeTinyLlamaGguf(join(dir, 'tiny.gguf'));
    entry = model('none');
    eng = make(entry);
  });
  after(async () => {
    await eng?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('loads the GGUF, measures the prompt exactly and streams tokens until max_tokens', async () => {
    const inp = input({ max_tokens: 12 });
    const m = await eng.measure(inp);
    assert.ok(m.prompt_tokens > 5 && m.prompt_tokens < 40, `prompt of ${m.prompt_tokens} tokens`);
    assert.ok(m.context_tokens !== null && m.context_tokens >= 2048);
    const r = await run(eng, inp);
    assert.equal(r.finish.reason, 'length');
    assert.deepEqual(r.finish.usage, {
      prompt_tokens: m.prompt_tokens,
      completion_tokens: 12,
      reasoning_tokens: 0,
    });
    assert.ok(r.deltas.filter((d) => d.type === 'content').length >= 3, 'streamed in several deltas');
    assert.ok(r.content.length > 0);
  });

  it('is deterministic for a seed, and the n choices of a request differ', async () => {
    const a = await run(eng, input({ max_tokens: 16 }));
    const b = await run(eng, input({ max_tokens: 16 }));
    assert.equal(a.content, b.content);
    const c = await run(eng, { ...input({ max_tokens: 16 }), choice: 1 });
    assert.notEqual(c.content, a.content);
  });

  it('cuts the answer before a stop sequence', async () => {
    const full = await run(eng, input({ max_tokens: 24 }));
    const stop = full.content.slice(6, 9);
    assert.equal(stop.length, 3);
    const cut = await run(eng, input({ max_tokens: 24, stop }));
    assert.equal(cut.finish.reason, 'stop');
    assert.equal(cut.finish.stop_sequence, stop, 'the matched stop string is reported');
    assert.equal(full.finish.stop_sequence, undefined);
    assert.equal(cut.content, full.content.slice(0, full.content.indexOf(stop)));
    assert.ok(cut.finish.usage.completion_tokens < 24);
  });

  it('reasons first when the request reasons: the budget closes <think>, scaled by reasoning_effort', async () => {
    const on = model('default_on');
    const e = make(on);
    try {
      const r = await run(e, input({ max_tokens: 30 }, on));
      assert.ok(r.reasoning.length > 0, 'reasoning_content');
      assert.ok(r.content.length > 0, 'an answer after the forced </think>');
      assert.equal(r.finish.usage.reasoning_tokens, 6);
      const firstContent = r.deltas.findIndex((d) => d.type === 'content');
      const lastReasoning = r.deltas.findLastIndex((d) => d.type === 'reasoning');
      assert.ok(lastReasoning < firstContent, 'reasoning deltas come before the answer');
      const off = await run(
        e,
        input({ max_tokens: 10, chat_template_kwargs: { enable_thinking: false } }, on),
      );
      assert.equal(off.reasoning, '');
      assert.equal(off.finish.usage.reasoning_tokens, 0);
    } finally {
      await e.close();
    }
    const effort = model('effort', { reasoning_budget: 8 }, 'tiny-effort');
    const e2 = make(effort);
    try {
      const low = await run(e2, input({ max_tokens: 60, reasoning_effort: 'low' }, effort));
      assert.equal(low.finish.usage.reasoning_tokens, 2);
      const high = await run(e2, input({ max_tokens: 60, reasoning_effort: 'high' }, effort));
      assert.equal(high.finish.usage.reasoning_tokens, 32);
    } finally {
      await e2.close();
    }
  });

  it('enforces json_schema by grammar: every answer parses and validates', async () => {
    const schema = {
      type: 'object',
      properties: {
        name: { type: 'string', minLength: 1, maxLength: 12 },
        age: { type: 'integer', minimum: 0, maximum: 150 },
        tags: { type: 'array', items: { type: 'string', maxLength: 5 }, maxItems: 3 },
        kind: { enum: ['a', 'b', 'c'] },
        ok: { type: 'boolean' },
        note: { type: ['string', 'null'], maxLength: 6 },
      },
      required: ['name', 'age', 'kind'],
      additionalProperties: false,
    };
    for (let seed = 1; seed <= 6; seed++) {
      const r = await run(
        eng,
        input({
          seed,
          max_tokens: 400,
          response_format: { type: 'json_schema', json_schema: { name: 'person', strict: true, schema } },
        }),
      );
      assert.equal(r.finish.reason, 'stop', `seed ${seed}: ${r.content}`);
      const check = checkJson(r.content, schema);
      assert.ok(check.ok, `seed ${seed}: ${r.content} ${check.ok ? '' : check.reason}`);
      assert.equal(r.finish.usage.completion_tokens > 0, true);
    }
    const obj = await run(eng, input({ seed: 3, max_tokens: 400, response_format: { type: 'json_object' } }));
    const parsed = JSON.parse(obj.content);
    assert.equal(typeof parsed, 'object');
    assert.ok(!Array.isArray(parsed));
  });

  it('forces tool calls by grammar: a named function, or one of the tools for required', async () => {
    const tools = [
      {
        type: 'function' as const,
        function: {
          name: 'get_weather',
          parameters: {
            type: 'object',
            properties: {
              city: { type: 'string', maxLength: 10 },
              days: { type: 'integer', minimum: 1, maximum: 7 },
            },
            required: ['city', 'days'],
          },
        },
      },
      { type: 'function' as const, function: { name: 'noop' } },
    ];
    const forced = await run(
      eng,
      input({ max_tokens: 300, tools, tool_choice: { type: 'function', function: { name: 'get_weather' } } }),
    );
    assert.equal(forced.finish.reason, 'tool_calls');
    assert.equal(forced.calls.length, 1);
    assert.equal(forced.calls[0]?.name, 'get_weather');
    const args = JSON.parse(forced.calls[0]?.arguments ?? '');
    assert.equal(typeof args.city, 'string');
    assert.ok(Number.isInteger(args.days) && args.days >= 1 && args.days <= 7, JSON.stringify(args));
    assert.equal(forced.content, '');
    const required = await run(eng, input({ seed: 11, max_tokens: 300, tools, tool_choice: 'required' }));
    assert.equal(required.finish.reason, 'tool_calls');
    assert.ok(required.calls.length >= 1);
    for (const c of required.calls) {
      assert.ok(['get_weather', 'noop'].includes(c.name ?? ''), c.name);
      assert.doesNotThrow(() => JSON.parse(c.arguments ?? ''));
    }
  });

  it('continues a raw prompt for legacy completions', async () => {
    const r = await run(eng, {
      ...input({ max_tokens: 8, seed: 1 }),
      messages: [],
      prompt: 'Once upon a time',
    });
    assert.equal(r.finish.reason, 'length');
    assert.equal(r.finish.usage.completion_tokens, 8);
    assert.ok(r.finish.usage.prompt_tokens >= 2 && r.finish.usage.prompt_tokens < 20);
  });

  it('stops at once when the signal aborts and reports the tokens produced so far', async () => {
    const ac = new AbortController();
    const deltas: EngineDelta[] = [];
    for await (const d of eng.generate(input({ max_tokens: 1500 }), ac.signal)) {
      deltas.push(d);
      if (deltas.length === 4) ac.abort(new Error('client gone'));
    }
    const fin = deltas.at(-1) as Extract<EngineDelta, { type: 'finish' }>;
    assert.equal(fin.reason, 'cancelled');
    assert.ok(
      fin.usage.completion_tokens >= 4 && fin.usage.completion_tokens < 40,
      `${fin.usage.completion_tokens}`,
    );
  });

  it('queues requests beyond `parallel` and serves them in turn', async () => {
    const [a, b, c] = await Promise.all([
      run(eng, input({ max_tokens: 10 })),
      run(eng, { ...input({ max_tokens: 10 }), choice: 1 }),
      run(eng, input({ max_tokens: 10 })),
    ]);
    assert.equal(a?.finish.usage.completion_tokens, 10);
    assert.equal(b?.finish.usage.completion_tokens, 10);
    assert.equal(a?.content, c?.content, 'a sequence reused after another request gives the same answer');
  });

  it('refuses a prompt larger than its context with a 400 stating both numbers', async () => {
    const small = model('none', { context_size: 64 }, 'tiny-small');
    const e = make(small);
    try {
      const inp = input({ messages: [{ role: 'user', content: 'word '.repeat(200) }] }, small);
      const m = await e.measure(inp);
      assert.ok(m.prompt_tokens > 64);
      await assert.rejects(
        run(e, inp),
        (err: ApiError) =>
          err.status === 400 &&
          err.message.includes(String(m.context_tokens)) &&
          err.message.includes(String(m.prompt_tokens)),
      );
    } finally {
      await e.close();
    }
  });

  it('fails a missing model file with a clean 500 that does not reveal the path, and caps threads', async () => {
    const bad = model('none', { gguf: join(dir, 'missing.gguf'), threads: 999 }, 'tiny-missing');
    const e = make(bad);
    assert.equal(e.threads, Math.max(1, availableParallelism()));
    await assert.rejects(
      e.measure(input({}, bad)),
      (err: ApiError) =>
        err.status === 500 && /tiny-missing/.test(err.message) && !err.message.includes('missing.gguf'),
    );
    await e.close();
  });

  it('takes neither images nor audio', () => {
    assert.deepEqual(eng.media, { images: false, audio: false });
  });
});
