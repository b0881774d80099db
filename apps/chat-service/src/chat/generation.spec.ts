import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type ApiError, CatalogEntrySchema } from '@infer/contracts';
import type { ChatEngine, EngineDelta, EngineInput } from '../engines/engine.js';
import { countPromptTokens } from '../tokens.js';
import { toEngineInput } from './engine-input.js';
import { fitContext, runChoices } from './generation.js';

const model = (context_window?: number) =>
  CatalogEntrySchema.parse({
    id: 'm',
    kind: 'chat',
    rank: 1,
    tiers: ['inference'],
    ...(context_window ? { context_window } : {}),
    engine: { type: 'simulator' },
  });
const names = { promptParam: 'messages', promptName: 'messages', maxName: 'max_tokens' };
const signal = new AbortController().signal;
const input = (max_tokens?: number) =>
  toEngineInput({ model: 'm', messages: [{ role: 'user', content: 'one two three' }], max_tokens }, model());
const approx = countPromptTokens(input().messages);

/** An engine double that reports an exact prompt size and its own context. */
const measuring = (prompt: number, context: number | null): ChatEngine => ({
  type: 'measuring-double',
  measure: async () => ({ prompt_tokens: prompt, context_tokens: context }),
  async *generate(): AsyncGenerator<EngineDelta> {},
});
const plain: ChatEngine = { type: 'plain-double', async *generate(): AsyncGenerator<EngineDelta> {} };

describe('fitContext', () => {
  it('accepts prompt + max_tokens up to the context, refuses one more with both numbers', async () => {
    const ok = await fitContext(plain, input(100 - approx), model(100), signal, names);
    assert.equal(ok.max_tokens, 100 - approx);
    await assert.rejects(fitContext(plain, input(101 - approx), model(100), signal, names), (e: ApiError) => {
      assert.equal(e.status, 400);
      assert.equal(e.param, 'messages');
      assert.match(e.message, /maximum context length is 100 tokens/);
      assert.match(
        e.message,
        new RegExp(`you requested 101 tokens \\(${approx} in the messages, ${101 - approx} in max_tokens\\)`),
      );
      return true;
    });
  });

  it("uses the engine's exact count and the smaller of the two limits", async () => {
    await assert.rejects(
      fitContext(measuring(50, 60), input(20), model(1000), signal, names),
      (e: ApiError) =>
        /maximum context length is 60 tokens/.test(e.message) &&
        /50 in the messages, 20 in max_tokens/.test(e.message),
    );
    const ok = await fitContext(measuring(50, null), input(20), model(70), signal, names);
    assert.equal(ok.max_tokens, 20);
  });

  it('without max_tokens refuses only a prompt that fills the context; lowers a default cap to fit', async () => {
    await assert.rejects(
      fitContext(measuring(80, null), input(), model(80), signal, names),
      (e: ApiError) => e.status === 400 && /resulted in 80 tokens/.test(e.message),
    );
    assert.equal((await fitContext(measuring(30, null), input(), model(80), signal, names)).max_tokens, null);
    assert.equal(
      (await fitContext(measuring(30, null), input(), model(80), signal, names, 65536)).max_tokens,
      50,
    );
    assert.equal(
      (await fitContext(plain, input(), model(), signal, names, 65536)).max_tokens,
      65536,
      'no known limit',
    );
  });
});

describe('runChoices', () => {
  it('aborts the other choices when one fails, and throws that failure', async () => {
    let abortedSeen = false;
    const engine: ChatEngine = {
      type: 'failing-double',
      async *generate(inp: EngineInput, sig: AbortSignal): AsyncGenerator<EngineDelta> {
        if (inp.choice === 1) throw new Error('boom');
        await new Promise<void>((r) => sig.addEventListener('abort', () => r(), { once: true }));
        abortedSeen = true;
        yield {
          type: 'finish',
          reason: 'cancelled',
          usage: { prompt_tokens: 1, completion_tokens: 0, reasoning_tokens: 0 },
        };
      },
    };
    await assert.rejects(runChoices(engine, input(), 2, signal), /boom/);
    assert.ok(abortedSeen);
  });
});
