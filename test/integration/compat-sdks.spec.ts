/**
 * Client compatibility: the platform driven, unchanged, by the libraries application developers use
 * (versions pinned in package.json, listed in the README's compatibility table):
 * - the openai SDK's helpers: responses.stream, responses.parse (zod), chat.completions.runTools,
 *   chat.completions.parse (zod);
 * - the Vercel AI SDK: generateText, streamText, generateObject, tools, embedMany, image, speech,
 *   transcription, through @ai-sdk/openai (Responses API by default, and chat) and
 *   @ai-sdk/openai-compatible;
 * - LangChain JS: ChatOpenAI invoke / stream / bindTools / withStructuredOutput, also with
 *   useResponsesApi, and OpenAIEmbeddings.
 * On the real stack: gateway, chat-service (simulator engines: the default catalog's test doubles),
 * embedding-service (lexical-hash), audio-service (flite + pocketsphinx) and image-service (simulator).
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { tool as lcTool } from '@langchain/core/tools';
import { ChatOpenAI, OpenAIEmbeddings } from '@langchain/openai';
import {
  embedMany,
  generateImage,
  generateObject,
  experimental_generateSpeech as generateSpeech,
  generateText,
  stepCountIs,
  streamText,
  tool,
  experimental_transcribe as transcribe,
} from 'ai';
import { Redis } from 'ioredis';
import { Tiktoken } from 'js-tiktoken/lite';
import cl100kBase from 'js-tiktoken/ranks/cl100k_base';
import type OpenAI from 'openai';
import { zodResponseFormat, zodTextFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { type AudioService, startAudioService } from '../../apps/audio-service/src/app.js';
import { startEmbeddingService } from '../../apps/embedding-service/src/app.js';
import { type ImageService, startImageService } from '../../apps/image-service/src/app.js';
import { apiError, type Stack, startStack } from './harness.js';

const Person = z.object({ name: z.string(), age: z.number().int() });
const weatherParams = z.object({ city: z.string() });

describe('client compatibility: openai SDK helpers, Vercel AI SDK, LangChain JS', () => {
  let stack: Stack;
  let client: OpenAI;
  let audio: AudioService | undefined;
  let image: ImageService | undefined;
  const id = randomBytes(4).toString('hex');
  const env = {
    MODEL_SUBJECT_PREFIX: `test.${randomUUID()}.`,
    BULLMQ_PREFIX: `test-compat-${id}`,
    IMAGE_STORE_REDIS_PREFIX: `test:compat:${id}:`,
  };

  before(async () => {
    stack = await startStack({
      env,
      services: [
        (e) => startEmbeddingService({ env: e, subjectPrefix: e.MODEL_SUBJECT_PREFIX }),
        async (e) => {
          audio = await startAudioService({ env: e, role: 'all', subjectPrefix: e.MODEL_SUBJECT_PREFIX });
          return audio;
        },
        async (e) => {
          image = await startImageService({ env: e, subjectPrefix: e.MODEL_SUBJECT_PREFIX });
          return image;
        },
      ],
    });
    client = stack.client('inference');
  });

  after(async () => {
    await image?.queue.obliterate({ force: true }).catch(() => undefined);
    await audio?.queue.obliterate({ force: true }).catch(() => undefined);
    await stack?.close();
    const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
    const keys = await redis.keys(`${env.IMAGE_STORE_REDIS_PREFIX}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });

  describe('openai SDK helpers', () => {
    it('responses.stream: events as they come, the accumulated final response', async () => {
      const stream = client.responses.stream({ model: 'chat-E', input: 'Say hello' });
      const types: string[] = [];
      let text = '';
      stream.on('event', (e) => types.push(e.type));
      stream.on('response.output_text.delta', (e) => {
        text += e.delta;
      });
      const final = await stream.finalResponse();
      assert.equal(types[0], 'response.created');
      assert.equal(types.at(-1), 'response.completed');
      assert.ok(types.includes('response.reasoning_text.delta'), 'chat-E reasons');
      assert.ok(text.length > 0);
      assert.equal(final.output_text, text);
      assert.equal(final.status, 'completed');
    });

    it('responses.parse with a zod text format gives output_parsed', async () => {
      const r = await client.responses.parse({
        model: 'chat-F',
        input: 'Invent a person.',
        text: { format: zodTextFormat(Person, 'person') },
      });
      const p = Person.parse(r.output_parsed);
      assert.equal(typeof p.name, 'string');
    });

    it('chat.completions.parse with a zod response format gives message.parsed', async () => {
      const c = await client.chat.completions.parse({
        model: 'chat-E',
        messages: [{ role: 'user', content: 'Invent a person.' }],
        response_format: zodResponseFormat(Person, 'person'),
      });
      const msg = c.choices[0]?.message;
      assert.equal(msg?.refusal, null);
      Person.parse(msg?.parsed);
    });

    it('chat.completions.runTools calls the function and feeds its result back', async () => {
      const calls: string[] = [];
      const runner = client.chat.completions.runTools({
        model: 'chat-E',
        // The simulator (a test double) calls a tool under tool_choice auto when the message names it.
        messages: [{ role: 'user', content: 'Use get_weather: what is the weather in Oslo?' }],
        tools: [
          {
            type: 'function',
            function: {
              name: 'get_weather',
              description: 'Weather in a city',
              parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
              parse: JSON.parse,
              function: (args: { city: string }) => {
                calls.push(args.city);
                return { temperature_c: 3 };
              },
            },
          },
        ],
      });
      const content = await runner.finalContent();
      assert.ok(calls.length >= 1, 'the function ran');
      assert.equal(typeof content, 'string');
      const msgs = runner.messages;
      assert.ok(msgs.some((m) => m.role === 'tool'));
    });
  });

  describe('Vercel AI SDK (@ai-sdk/openai, @ai-sdk/openai-compatible)', () => {
    const providers = () => {
      const key = stack.keys.inference;
      return {
        openai: createOpenAI({ baseURL: stack.baseURL, apiKey: key }),
        compat: createOpenAICompatible({
          name: 'infer',
          baseURL: stack.baseURL,
          apiKey: key,
          supportsStructuredOutputs: true,
        }),
      };
    };
    const models = () => {
      const { openai, compat } = providers();
      return [
        ['@ai-sdk/openai Responses', openai('chat-E')],
        ['@ai-sdk/openai chat', openai.chat('chat-E')],
        ['@ai-sdk/openai-compatible', compat.chatModel('chat-E')],
      ] as const;
    };

    it('generateText and streamText on each provider', async () => {
      for (const [name, model] of models()) {
        const g = await generateText({ model, prompt: 'Say hello' });
        assert.ok(g.text.length > 0, `${name}: generateText`);
        assert.ok((g.usage.totalTokens ?? 0) > 0, `${name}: usage`);
        const s = streamText({ model, prompt: 'Say hello' });
        let chunks = 0;
        let text = '';
        for await (const t of s.textStream) {
          chunks++;
          text += t;
        }
        assert.ok(text.length > 0, `${name}: streamText text`);
        assert.ok(chunks > 1, `${name}: streamed in pieces`);
        assert.equal(await s.finishReason, 'stop', name);
      }
    });

    it('tools: the model calls them, the SDK runs them and the model answers', async () => {
      for (const [name, model] of models()) {
        const seen: string[] = [];
        const r = await generateText({
          model,
          prompt: 'What is the weather in Oslo?',
          tools: {
            get_weather: tool({
              description: 'Weather in a city',
              inputSchema: weatherParams,
              execute: async ({ city }) => {
                seen.push(city);
                return { temperature_c: 3 };
              },
            }),
          },
          toolChoice: 'required',
          stopWhen: stepCountIs(1),
        });
        assert.ok(seen.length >= 1, `${name}: tool executed`);
        assert.equal(r.toolCalls[0]?.toolName, 'get_weather', name);
        // A second step with the tool result in the history.
        const two = await generateText({
          model,
          prompt: 'Use get_weather: what is the weather in Oslo?',
          tools: {
            get_weather: tool({
              inputSchema: weatherParams,
              execute: async () => ({ temperature_c: 3 }),
            }),
          },
          stopWhen: stepCountIs(2),
        });
        // Step 1 calls the tool, step 2 sends its result back (by item_reference on the Responses
        // provider, whose store is on by default) and gets the answer.
        assert.equal(two.steps.length, 2, name);
        assert.equal(two.steps[0]?.toolResults.length, 1, name);
        assert.ok(two.text.length > 0, `${name}: final answer`);
      }
    });

    it('generateObject (structured output) on each provider', async () => {
      for (const [name, model] of models()) {
        const { object } = await generateObject({ model, schema: Person, prompt: 'Invent a person.' });
        Person.parse(object);
        assert.ok(name);
      }
    });

    it('embedMany, generateImage, speech and transcription', async () => {
      const { openai, compat } = providers();
      for (const model of [openai.embedding('embed-model'), compat.embeddingModel('embed-model')]) {
        const { embeddings } = await embedMany({ model, values: ['sunny day', 'rainy night'] });
        assert.equal(embeddings.length, 2);
        assert.equal(embeddings[0]?.length, 4096);
      }
      for (const model of [openai.image('image-model'), compat.imageModel('image-model')]) {
        const { image: img } = await generateImage({ model, prompt: 'a red square', size: '256x256' });
        assert.deepEqual([...img.uint8Array.subarray(1, 4)], [0x50, 0x4e, 0x47], 'a PNG');
      }
      const speech = await generateSpeech({
        model: openai.speech('tts-model'),
        text: 'The weather is sunny today.',
        voice: 'alloy',
        outputFormat: 'wav',
      });
      const wav = speech.audio.uint8Array;
      assert.equal(Buffer.from(wav.subarray(0, 4)).toString('latin1'), 'RIFF');
      const heard = await transcribe({ model: openai.transcription('stt-model'), audio: wav });
      assert.match(heard.text.toLowerCase(), /weather|sunny|today/);
    });
  });

  describe('token-id input of /v1/embeddings (what Python LangChain sends by default)', () => {
    it('cl100k_base ids embed as the text they spell; an unknown id is a 400 naming the input', async () => {
      const enc = new Tiktoken(cl100kBase);
      const texts = ['The weather is sunny today.', 'A rainy night.'];
      const byText = await client.embeddings.create({ model: 'embed-model', input: texts });
      const byIds = await client.embeddings.create({
        model: 'embed-model',
        input: texts.map((t) => enc.encode(t)),
      });
      assert.deepEqual(
        byIds.data.map((d) => d.embedding),
        byText.data.map((d) => d.embedding),
      );
      assert.equal(
        byIds.usage.prompt_tokens,
        texts.reduce((n, t) => n + enc.encode(t).length, 0),
      );
      const one = await client.embeddings.create({ model: 'embed-model', input: enc.encode(texts[0] ?? '') });
      assert.deepEqual(one.data[0]?.embedding, byText.data[0]?.embedding);
      const err = await apiError(
        client.embeddings.create({ model: 'embed-model', input: [[1, 2], [99_999_999]] }),
      );
      assert.equal(err.status, 400);
      assert.equal(err.param, 'input[1]');
    });
  });

  describe('LangChain JS (@langchain/openai)', () => {
    const chat = (extra: Record<string, unknown> = {}) =>
      new ChatOpenAI({
        model: 'chat-E',
        apiKey: stack.keys.inference,
        configuration: { baseURL: stack.baseURL },
        maxRetries: 0,
        ...extra,
      });

    it('invoke, stream, bindTools, withStructuredOutput; chat and Responses API', async () => {
      for (const useResponsesApi of [false, true]) {
        const llm = chat({ useResponsesApi });
        const label = useResponsesApi ? 'responses' : 'chat';
        const msg = await llm.invoke('Say hello');
        assert.ok(String(msg.content).length > 0 || msg.text.length > 0, `${label}: invoke`);
        let streamed = '';
        let pieces = 0;
        for await (const chunk of await llm.stream('Say hello')) {
          streamed += chunk.text;
          pieces++;
        }
        assert.ok(streamed.length > 0, `${label}: stream text`);
        assert.ok(pieces > 1, `${label}: stream pieces`);
        const weather = lcTool(async ({ city }: { city: string }) => `3C in ${city}`, {
          name: 'get_weather',
          description: 'Weather in a city',
          schema: weatherParams,
        });
        // LangChain's Responses path drops a bound tool_choice; under auto the simulator calls the tool
        // the message names.
        const called = await llm.bindTools([weather]).invoke('Use get_weather: weather in Oslo?');
        assert.equal(called.tool_calls?.[0]?.name, 'get_weather', `${label}: bindTools`);
        assert.equal(typeof called.tool_calls?.[0]?.args.city, 'string');
        const person = await llm.withStructuredOutput(Person, { name: 'person' }).invoke('Invent a person.');
        Person.parse(person);
      }
    });

    it('OpenAIEmbeddings: embedDocuments and embedQuery', async () => {
      const emb = new OpenAIEmbeddings({
        model: 'embed-model',
        apiKey: stack.keys.inference,
        configuration: { baseURL: stack.baseURL },
        maxRetries: 0,
      });
      const docs = await emb.embedDocuments(['a sunny day', 'a rainy night']);
      assert.equal(docs.length, 2);
      assert.equal(docs[0]?.length, 4096);
      const q = await emb.embedQuery('sunny');
      assert.equal(q.length, 4096);
    });
  });
});
