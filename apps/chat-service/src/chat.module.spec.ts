import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  ApiError,
  type CatalogEntry,
  CatalogEntrySchema,
  ChatCompletionChunkSchema,
  ChatCompletionSchema,
  type ServiceRequest,
} from '@infer/contracts';
import { type HandlerContext } from '@infer/rpc';
import { ServiceCoreModule } from '@infer/runtime';
import { createLogger } from '@infer/telemetry';
import type { TestingModule } from '@nestjs/testing';
import { Test } from '@nestjs/testing';
import { ChatController, ChatServiceModule } from './chat.module.js';
import { ChatServiceEnvSchema } from './config.js';
import { EngineRegistry } from './engines/registry.js';

const log = createLogger('chat-module-spec', 'silent');
const model = (capabilities: Record<string, unknown> = {}): CatalogEntry =>
  CatalogEntrySchema.parse({
    id: 'chat-sim',
    kind: 'chat',
    rank: 1,
    tiers: ['inference'],
    capabilities: { streaming: true, ...capabilities },
    engine: { type: 'simulator', default_output_tokens: 6, ttft_ms: 0, itl_ms: 0 },
  });
const envelope = <B>(body: B, m = model(), stream = false): ServiceRequest<B> => ({
  requestId: randomUUID(),
  memberId: 'member',
  keyId: 'key',
  model: m,
  body,
  deadline: Date.now() + 10_000,
  stream,
});
const context = (emitted: unknown[] = []): HandlerContext => ({
  signal: new AbortController().signal,
  log,
  emit: (c) => emitted.push(c),
});

/** The chat controller as Nest builds it (the module's real providers), called without a transport. */
describe('ChatController (Test.createTestingModule)', () => {
  let moduleRef: TestingModule;
  let controller: ChatController;

  before(async () => {
    const env = ChatServiceEnvSchema.parse({});
    moduleRef = await Test.createTestingModule({
      imports: [ServiceCoreModule.forRoot(log), ChatServiceModule.forRoot(env, {})],
    }).compile();
    controller = moduleRef.get(ChatController);
  });
  after(async () => {
    await moduleRef.close();
  });

  it('injects the engine registry with the built-in engines', () => {
    const engines = moduleRef.get(EngineRegistry);
    assert.ok(engines.types.includes('simulator'));
  });

  it('answers a chat completion with the result and exact usage', async () => {
    const end = await controller.chatCompletions(
      envelope({ model: 'chat-sim', messages: [{ role: 'user', content: 'hello there' }], max_tokens: 4 }),
      context(),
    );
    const completion = ChatCompletionSchema.parse(end.data);
    assert.equal(completion.choices[0]?.finish_reason, 'length');
    assert.equal(end.usage.completion_tokens, 4);
  });

  it('streams chunks through the context and returns the usage at the end', async () => {
    const chunks: unknown[] = [];
    const end = await controller.chatCompletions(
      envelope(
        { model: 'chat-sim', messages: [{ role: 'user', content: 'hi' }], stream: true },
        model(),
        true,
      ),
      context(chunks),
    );
    assert.ok(chunks.length >= 2);
    for (const c of chunks) ChatCompletionChunkSchema.parse(c);
    assert.equal(end.usage.completion_tokens, 6);
  });

  it('refuses a legacy completion on a model without that capability with a 400', async () => {
    const err = await controller
      .completions(envelope({ model: 'chat-sim', prompt: 'x' }, model({ completions: false })), context())
      .catch((e: unknown) => e);
    assert.ok(err instanceof ApiError);
    assert.equal(err.status, 400);
  });
});
