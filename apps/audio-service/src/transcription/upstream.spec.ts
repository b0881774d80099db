import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApiError, type CatalogEntry } from '@infer/contracts';
import { createLogger } from '@infer/telemetry';
import { encodeWav } from '../media/wav.js';
import { type FakeAudioUpstream, startFakeAudioUpstream } from '../testing/fake-audio-upstream.js';
import { checkLanguage } from './engine.js';
import { toIso6391 } from './languages.js';
import { normalizeUpstream, upstreamTranscriptionFactory } from './upstream.js';

const log = createLogger('test', 'silent');

describe('normalizeUpstream', () => {
  it('puts top-level words into their segments and maps language names', () => {
    const t = normalizeUpstream(
      {
        text: 'hi there',
        language: 'english',
        segments: [{ id: 0, start: 0, end: 2, text: ' hi there', tokens: [1] }],
        words: [
          { word: ' hi', start: 0.1, end: 0.5 },
          { word: 'there', start: 0.6, end: 5 },
        ],
      },
      { duration: 3 },
    );
    assert.equal(t.language, 'en');
    assert.equal(t.segments[0]?.text, 'hi there');
    assert.deepEqual(
      t.segments[0]?.words.map((w) => [w.word, w.end, w.probability]),
      [
        ['hi', 0.5, 1],
        ['there', 3, 1],
      ],
    );
    assert.equal(t.segments[0]?.temperature, 0);
  });

  it('makes one segment from a bare {text}, keeps words nested in segments, refuses non-transcriptions', () => {
    const bare = normalizeUpstream(
      { text: ' just text ' },
      { duration: 4, language: 'de', temperature: 0.4 },
    );
    assert.deepEqual(
      bare.segments.map((s) => [s.text, s.start, s.end, s.temperature]),
      [['just text', 0, 4, 0.4]],
    );
    assert.equal(bare.language, 'de');
    const nested = normalizeUpstream(
      {
        text: 'a',
        language: 'FR',
        segments: [
          { start: 0, end: 1, text: 'a', words: [{ word: 'a', start: 0, end: 1, probability: 0.5 }] },
        ],
      },
      { duration: 1 },
    );
    assert.equal(nested.language, 'fr');
    assert.equal(nested.segments[0]?.words[0]?.probability, 0.5);
    assert.throws(
      () => normalizeUpstream({ nope: 1 }, { duration: 1 }),
      (e: unknown) => e instanceof ApiError && e.status === 500,
    );
  });

  it('maps languages to ISO-639-1', () => {
    assert.equal(toIso6391('en-US'), 'en');
    assert.equal(toIso6391('Spanish'), 'es');
    assert.equal(toIso6391('hawaiian'), null);
    assert.equal(toIso6391(''), null);
  });
});

describe('openai transcription upstream (against a local fake server, a test double)', () => {
  let fake: FakeAudioUpstream;
  before(async () => {
    fake = await startFakeAudioUpstream();
  });
  after(async () => {
    await fake.close();
  });
  const model = (extra: Record<string, unknown> = {}) =>
    ({
      id: 'stt-x',
      engine: { type: 'openai', base_url: fake.baseUrl, ...extra },
    }) as unknown as CatalogEntry;
  const wav = encodeWav({ sampleRate: 16_000, channels: 1, data: Buffer.alloc(16_000 * 2 * 2) });

  it('sends the segment as multipart with verbose_json and both granularities', async () => {
    const m = model({ model: 'whisper-1', languages: ['en', 'es'], job_timeout_ms: 5000 });
    const engine = upstreamTranscriptionFactory.create(m.engine as never, { model: m, log });
    assert.deepEqual(engine.languages, ['en', 'es']);
    assert.equal(engine.jobTimeoutMs, 5000);
    const t = await engine.transcribe(
      { wavPath: '/unused', wav, duration: 2, language: 'es', temperature: 0 },
      new AbortController().signal,
    );
    assert.equal(t.segments.length, 2);
    const r = fake.requests.at(-1);
    assert.deepEqual(r?.fields?.model, ['whisper-1']);
    assert.deepEqual(r?.fields?.response_format, ['verbose_json']);
    assert.deepEqual(r?.fields?.['timestamp_granularities[]'], ['segment', 'word']);
    assert.deepEqual(r?.fields?.language, ['es']);
    assert.deepEqual(r?.fields?.temperature, ['0']);
    assert.equal(r?.file?.bytes.length, wav.length);
    assert.throws(
      () => checkLanguage(engine, 'stt-x', 'de'),
      (e: unknown) => e instanceof ApiError && e.param === 'language',
    );
  });

  it("maps the upstream's 400 to a 400 naming its param", async () => {
    const m = model();
    const engine = upstreamTranscriptionFactory.create(m.engine as never, { model: m, log });
    await assert.rejects(
      engine.transcribe(
        { wavPath: '/unused', wav, duration: 2, language: 'xx' },
        new AbortController().signal,
      ),
      (e: unknown) => e instanceof ApiError && e.status === 400 && e.param === 'language',
    );
  });
});
