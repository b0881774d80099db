import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApiError, type CatalogEntry } from '@infer/contracts';
import { createLogger } from '@infer/telemetry';
import { type FakeAudioUpstream, startFakeAudioUpstream } from '../testing/fake-audio-upstream.js';
import { upstreamSpeechFactory } from './upstream.js';

const log = createLogger('test', 'silent');
const signal = () => new AbortController().signal;

describe('openai speech upstream (against a local fake server, a test double)', () => {
  let fake: FakeAudioUpstream;
  before(async () => {
    fake = await startFakeAudioUpstream();
  });
  after(async () => {
    await fake.close();
  });
  const make = (engine: Record<string, unknown>) => {
    const model = {
      id: 'tts-x',
      engine: { type: 'openai', base_url: fake.baseUrl, ...engine },
    } as unknown as CatalogEntry;
    return upstreamSpeechFactory.create(model.engine as never, { model, log });
  };

  it('posts the request with the model name and key, and returns the audio bytes', async () => {
    process.env.FAKE_TTS_KEY = 'sk-upstream';
    const engine = make({ api_key_env: 'FAKE_TTS_KEY' });
    const audio = await engine.synthesize(
      { input: 'hi', voice: 'af_heart', format: 'mp3', speed: 1 },
      signal(),
    );
    assert.ok(audio.length > 1000);
    const r = fake.requests.at(-1);
    assert.equal(r?.authorization, 'Bearer sk-upstream');
    assert.deepEqual(r?.json, {
      model: 'tts-x',
      input: 'hi',
      voice: 'af_heart',
      response_format: 'mp3',
      speed: 1,
    });
  });

  it('maps public voice ids, refuses unlisted ones before calling, and maps the upstream 400 to voice', async () => {
    const mapped = make({ voices: { 'es-female': 'ef_dora' } });
    await mapped.synthesize({ input: 'hola', voice: 'es-female', format: 'wav', speed: 1 }, signal());
    assert.equal(fake.requests.at(-1)?.json?.voice, 'ef_dora');
    const n = fake.requests.length;
    await assert.rejects(
      mapped.checkVoice('af_heart'),
      (e: unknown) => e instanceof ApiError && e.param === 'voice',
    );
    assert.equal(fake.requests.length, n);
    const open = make({});
    await assert.rejects(
      open.synthesize({ input: 'x', voice: 'nope', format: 'mp3', speed: 1 }, signal()),
      (e: unknown) =>
        e instanceof ApiError && e.status === 400 && e.param === 'voice' && /not found/.test(e.message),
    );
  });

  it('is a 500 when the key variable is unset or the upstream cannot be reached', async () => {
    await assert.rejects(
      make({ api_key_env: 'NO_SUCH_VAR_FOR_TEST' }).synthesize(
        { input: 'x', voice: 'af_heart', format: 'mp3', speed: 1 },
        signal(),
      ),
      (e: unknown) => e instanceof ApiError && e.status === 500 && /NO_SUCH_VAR_FOR_TEST/.test(e.message),
    );
    const model = {
      id: 'tts-y',
      engine: { type: 'openai', base_url: 'http://127.0.0.1:9/v1' },
    } as unknown as CatalogEntry;
    const dead = upstreamSpeechFactory.create(model.engine as never, { model, log });
    await assert.rejects(
      dead.synthesize({ input: 'x', voice: 'a', format: 'mp3', speed: 1 }, signal()),
      (e: unknown) => e instanceof ApiError && e.status === 500 && /could not be reached/.test(e.message),
    );
  });

  it('refuses invalid settings with a 500 naming the model', () => {
    const model = {
      id: 'tts-z',
      engine: { type: 'openai', base_url: 'not a url' },
    } as unknown as CatalogEntry;
    assert.throws(
      () => upstreamSpeechFactory.create(model.engine as never, { model, log }),
      (e: unknown) => e instanceof ApiError && e.status === 500 && /tts-z/.test(e.message),
    );
  });
});
