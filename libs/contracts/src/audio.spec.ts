import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  AUDIO_CONTENT_TYPES,
  SPEECH_FORMATS,
  SpeechRequestSchema,
  TRANSCRIPTION_MAX_BYTES,
  TranscriptionJsonSchema,
  TranscriptionRequestSchema,
  TranscriptionResponseSchema,
  TranscriptionSchema,
} from './audio.js';
import { normalizeFormFields } from './common.js';
import { rejectParam } from './testing/reject.js';
import { parseOrThrow } from './validate.js';

const speech = { model: 'tts-model', input: 'Hello there', voice: 'en-female' };

describe('SpeechRequestSchema', () => {
  it('defaults response_format to mp3 and speed to 1', () => {
    const r = parseOrThrow(SpeechRequestSchema, speech);
    assert.equal(r.response_format, 'mp3');
    assert.equal(r.speed, 1);
  });

  it('accepts every format and the speed bounds', () => {
    for (const f of SPEECH_FORMATS) {
      assert.equal(parseOrThrow(SpeechRequestSchema, { ...speech, response_format: f }).response_format, f);
    }
    assert.equal(parseOrThrow(SpeechRequestSchema, { ...speech, speed: 0.25 }).speed, 0.25);
    assert.equal(parseOrThrow(SpeechRequestSchema, { ...speech, speed: 4 }).speed, 4);
  });

  it('checks input, voice, format and speed', () => {
    assert.equal(rejectParam(SpeechRequestSchema, { ...speech, input: undefined }), 'input');
    assert.equal(rejectParam(SpeechRequestSchema, { ...speech, input: '' }), 'input');
    assert.equal(
      parseOrThrow(SpeechRequestSchema, { ...speech, input: 'a'.repeat(4096) }).input.length,
      4096,
    );
    assert.equal(rejectParam(SpeechRequestSchema, { ...speech, input: 'a'.repeat(4097) }), 'input');
    assert.equal(rejectParam(SpeechRequestSchema, { ...speech, voice: undefined }), 'voice');
    assert.equal(rejectParam(SpeechRequestSchema, { ...speech, voice: '' }), 'voice');
    assert.equal(rejectParam(SpeechRequestSchema, { ...speech, response_format: 'ogg' }), 'response_format');
    assert.equal(rejectParam(SpeechRequestSchema, { ...speech, speed: 0.2 }), 'speed');
    assert.equal(rejectParam(SpeechRequestSchema, { ...speech, speed: 4.5 }), 'speed');
    assert.equal(rejectParam(SpeechRequestSchema, { ...speech, model: undefined }), 'model');
  });

  it('maps each format to its content type', () => {
    assert.deepEqual(AUDIO_CONTENT_TYPES, {
      mp3: 'audio/mpeg',
      wav: 'audio/wav',
      flac: 'audio/flac',
      aac: 'audio/aac',
      pcm: 'audio/pcm',
      opus: 'audio/ogg',
    });
    assert.deepEqual(Object.keys(AUDIO_CONTENT_TYPES).sort(), [...SPEECH_FORMATS].sort());
  });
});

describe('TranscriptionRequestSchema', () => {
  const t = { model: 'stt-model' };
  it('has json and [segment] as defaults and a 25 MB file limit', () => {
    const r = parseOrThrow(TranscriptionRequestSchema, t);
    assert.equal(r.response_format, 'json');
    assert.deepEqual(r.timestamp_granularities, ['segment']);
    assert.equal(r.language, undefined);
    assert.equal(TRANSCRIPTION_MAX_BYTES, 25 * 1024 * 1024);
  });

  it('takes form strings: language, formats, granularities, temperature, prompt', () => {
    const r = parseOrThrow(TranscriptionRequestSchema, {
      ...t,
      language: 'EN',
      response_format: 'verbose_json',
      timestamp_granularities: ['word', 'segment', 'word'],
      temperature: '0.2',
      prompt: 'Names: Ada',
    });
    assert.equal(r.language, 'en');
    assert.deepEqual(r.timestamp_granularities, ['word', 'segment']);
    assert.equal(r.temperature, 0.2);
    assert.equal(r.prompt, 'Names: Ada');
    assert.deepEqual(
      parseOrThrow(TranscriptionRequestSchema, { ...t, timestamp_granularities: 'word' })
        .timestamp_granularities,
      ['word'],
    );
    for (const f of ['json', 'verbose_json', 'text', 'srt', 'vtt']) {
      assert.equal(parseOrThrow(TranscriptionRequestSchema, { ...t, response_format: f }).response_format, f);
    }
  });

  it('names the offending field', () => {
    assert.equal(rejectParam(TranscriptionRequestSchema, {}), 'model');
    assert.equal(rejectParam(TranscriptionRequestSchema, { ...t, language: 'eng' }), 'language');
    assert.equal(rejectParam(TranscriptionRequestSchema, { ...t, language: 'e1' }), 'language');
    assert.equal(
      rejectParam(TranscriptionRequestSchema, { ...t, response_format: 'xml' }),
      'response_format',
    );
    assert.equal(
      rejectParam(TranscriptionRequestSchema, { ...t, timestamp_granularities: 'line' }),
      'timestamp_granularities',
    );
    assert.equal(
      rejectParam(TranscriptionRequestSchema, { ...t, timestamp_granularities: ['word', 'line'] }),
      'timestamp_granularities[1]',
    );
    assert.equal(rejectParam(TranscriptionRequestSchema, { ...t, temperature: '1.5' }), 'temperature');
    assert.equal(rejectParam(TranscriptionRequestSchema, { ...t, temperature: '-0.1' }), 'temperature');
    assert.equal(rejectParam(TranscriptionRequestSchema, { ...t, temperature: 'warm' }), 'temperature');
  });

  it('parses multipart fields after normalizeFormFields folds timestamp_granularities[]', () => {
    const fields = normalizeFormFields([
      ['model', 'stt-model'],
      ['response_format', 'verbose_json'],
      ['timestamp_granularities[]', 'word'],
      ['timestamp_granularities[]', 'segment'],
    ]);
    const r = parseOrThrow(TranscriptionRequestSchema, fields);
    assert.deepEqual(r.timestamp_granularities, ['word', 'segment']);
    // A part without a name (the gateway's form readers refuse it with a 400) is skipped, not a TypeError.
    assert.deepEqual(
      normalizeFormFields([
        [undefined as unknown as string, 'x'],
        ['', 'y'],
        ['model', 'm'],
      ]),
      { model: 'm' },
    );
    assert.deepEqual(normalizeFormFields({ 'timestamp_granularities[]': 'word', model: 'm' }), {
      timestamp_granularities: ['word'],
      model: 'm',
    });
  });
});

describe('Transcription responses', () => {
  const segment = {
    id: 0,
    seek: 0,
    start: 0,
    end: 1.5,
    text: ' Hello.',
    tokens: [50364, 2425],
    temperature: 0,
    avg_logprob: -0.2,
    compression_ratio: 1.1,
    no_speech_prob: 0.01,
  };
  const verbose = {
    text: 'Hello.',
    language: 'en',
    task: 'transcribe',
    duration: 1.5,
    segments: [segment],
    words: null,
  };

  it('parses verbose_json with words null or filled', () => {
    assert.equal(TranscriptionSchema.parse(verbose).words, null);
    const words = [{ word: 'Hello', start: 0, end: 0.5, probability: 0.9 }];
    assert.deepEqual(TranscriptionSchema.parse({ ...verbose, words }).words, words);
    assert.equal(TranscriptionSchema.safeParse({ ...verbose, task: 'translate' }).success, false);
    assert.equal(
      TranscriptionSchema.safeParse({ ...verbose, segments: [{ ...segment, seek: undefined }] }).success,
      false,
    );
  });

  it('parses the json form (text, language, task)', () => {
    const json = TranscriptionJsonSchema.parse({ text: 'Hello.', language: 'en', task: 'transcribe' });
    assert.equal(json.text, 'Hello.');
    assert.equal(TranscriptionJsonSchema.safeParse({ language: 'en', task: 'transcribe' }).success, false);
    assert.ok(TranscriptionResponseSchema.safeParse(verbose).success);
    assert.ok(TranscriptionResponseSchema.safeParse(json).success);
  });
});
