// One request of every capability through a containerised gateway with the `openai` SDK, shared by the
// compose run (containers.spec.ts) and the kube play run (kube-play.spec.ts).
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { image, run } from './engine-support.js';

/** A key of the premium tier (every model): the admin CLI's demo keys, from its image. */
export async function demoKey(databaseUrl: string): Promise<string> {
  const key = /INFER_DEMO_KEY_PREMIUM=(\S+)/.exec(
    await run(
      'podman',
      [
        'run',
        '--rm',
        '--network=host',
        '-e',
        `DATABASE_URL=${databaseUrl}`,
        '--entrypoint',
        'node',
        image('admin-cli'),
        'apps/admin-cli/dist/main.js',
        'demo-keys',
        '--env',
      ],
      60_000,
    ),
  )?.[1];
  assert.ok(key, 'an API key from the admin CLI');
  return key;
}

/**
 * Chat, completions (chat-E: the catalog's only model of the legacy /completions), responses, embeddings,
 * rerank, speech, transcription, images and search (POST /v1/search, the search service).
 */
export async function everyCapability(baseURL: string, key: string): Promise<void> {
  const client = new OpenAI({ apiKey: key, baseURL, maxRetries: 0, timeout: 60_000 });
  const chat = await client.chat.completions.create({
    model: 'chat-A',
    messages: [{ role: 'user', content: 'hi' }],
    max_tokens: 8,
  });
  assert.ok(chat.choices[0]?.message);
  const completion = await client.completions.create({ model: 'chat-E', prompt: 'hi', max_tokens: 8 });
  assert.ok(completion.choices[0]);
  // /responses through chat-F (a responses model without a reasoning trace); the default catalog's
  // simulator writes until max_output_tokens, so a 200 with a message, completed or cut at the limit.
  const response = await client.responses.create({ model: 'chat-F', input: 'hi', max_output_tokens: 16 });
  assert.ok(
    response.output.some((o) => o.type === 'message'),
    JSON.stringify(response.output),
  );
  assert.ok(
    response.status === 'completed' || response.incomplete_details?.reason === 'max_output_tokens',
    JSON.stringify(response),
  );
  const emb = await client.embeddings.create({ model: 'embed-model', input: 'a car' });
  assert.ok(emb.data[0]!.embedding.length > 0);
  const rerank = await fetch(`${baseURL}/rerank`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'rerank', query: 'car', documents: ['an automobile', 'a banana'] }),
  });
  assert.equal(rerank.status, 200, await rerank.clone().text());
  const speech = await client.audio.speech.create({
    model: 'tts-model',
    voice: 'alloy',
    input: 'hello world',
    response_format: 'wav',
  });
  const wav = Buffer.from(await speech.arrayBuffer());
  assert.equal(wav.subarray(0, 4).toString(), 'RIFF');
  const text = await client.audio.transcriptions.create({
    model: 'stt-model',
    file: new File([wav], 'hello.wav', { type: 'audio/wav' }),
  });
  assert.equal(typeof text.text, 'string');
  const img = await client.images.generate({ model: 'image-model', prompt: 'a red square', size: '256x256' });
  assert.ok(img.data?.[0]);
  const search = await fetch(`${baseURL}/search`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query: 'quick start' }),
  });
  assert.equal(search.status, 200, await search.clone().text());
  assert.ok(((await search.json()) as { results: unknown[] }).results.length > 0, 'search results');
}
