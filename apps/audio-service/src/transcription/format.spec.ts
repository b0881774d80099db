import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TranscriptionJsonSchema, TranscriptionSchema } from '@infer/contracts';
import type { Transcript, TranscriptSegment } from './engine.js';
import { mergePieces, toResponse, toSrt, toVtt } from './format.js';

function seg(start: number, end: number, text: string): TranscriptSegment {
  const words = text.split(' ').map((w, i, all) => {
    const step = (end - start) / all.length;
    return { word: w, start: start + i * step, end: start + (i + 1) * step, probability: 0.9 };
  });
  return {
    start,
    end,
    text,
    words,
    tokens: [1, 2],
    temperature: 0,
    avg_logprob: -0.1,
    compression_ratio: 1,
    no_speech_prob: 0,
  };
}
const piece = (segments: TranscriptSegment[], language = 'en'): Transcript => ({
  language,
  duration: 120,
  segments,
});

describe('merging pieces of a split file', () => {
  it('moves timestamps by each piece offset, in piece order, with seek in 10 ms frames', () => {
    const m = mergePieces(
      [
        { index: 1, offset: 119.5, transcript: piece([seg(1, 2, 'second piece')]) },
        { index: 0, offset: 0, transcript: piece([seg(0.5, 1.5, 'first piece')]) },
      ],
      125,
    );
    assert.deepEqual(
      m.segments.map((s) => [s.text, s.start, s.end, s.seek]),
      [
        ['first piece', 0.5, 1.5, 0],
        ['second piece', 120.5, 121.5, 11950],
      ],
    );
    assert.equal(m.segments[1]?.words[0]?.start, 120.5);
    assert.equal(m.language, 'en');
  });

  it('keeps timestamps monotone and inside the duration', () => {
    const m = mergePieces(
      [
        { index: 0, offset: 0, transcript: piece([seg(0, 3, 'a b c'), seg(2, 4, 'd e')]) },
        { index: 1, offset: 3.5, transcript: piece([seg(0, 9, 'f g')]) },
      ],
      10,
    );
    let last = 0;
    for (const s of m.segments) {
      assert.ok(s.start >= last && s.end >= s.start && s.end <= 10, JSON.stringify(s));
      last = s.end;
    }
    last = 0;
    for (const w of m.segments.flatMap((s) => s.words)) {
      assert.ok(w.start >= last && w.end >= w.start && w.end <= 10, JSON.stringify(w));
      last = w.end;
    }
  });

  it('takes the requested language, else the one of most text', () => {
    const pieces = [
      { index: 0, offset: 0, transcript: piece([seg(0, 1, 'hola que tal amigos')], 'es') },
      { index: 1, offset: 1, transcript: piece([seg(0, 1, 'hi')], 'en') },
    ];
    assert.equal(mergePieces(pieces, 2).language, 'es');
    assert.equal(mergePieces(pieces, 2, 'en').language, 'en');
  });
});

describe('response formats', () => {
  const m = mergePieces(
    [{ index: 0, offset: 0, transcript: piece([seg(0, 1.25, 'hello there'), seg(61, 62.5, 'bye')]) }],
    63,
  );

  it('json and verbose_json in the contract shapes; words only with word granularity', () => {
    assert.deepEqual(toResponse(m, 'json', ['segment']), {
      text: 'hello there bye',
      language: 'en',
      task: 'transcribe',
    });
    const v = TranscriptionSchema.parse(toResponse(m, 'verbose_json', ['segment']));
    assert.equal(v.words, null);
    assert.deepEqual(
      v.segments.map((s) => s.id),
      [0, 1],
    );
    assert.equal(v.duration, 63);
    const w = TranscriptionSchema.parse(toResponse(m, 'verbose_json', ['word']));
    assert.equal(w.words?.length, 3);
  });

  it('text, srt and vtt wrapped in JSON', () => {
    TranscriptionJsonSchema.parse(toResponse(m, 'srt', ['segment']));
    assert.equal((toResponse(m, 'text', ['segment']) as { text: string }).text, 'hello there bye');
    assert.equal(
      toSrt(m),
      '1\n00:00:00,000 --> 00:00:01,250\nhello there\n\n2\n00:01:01,000 --> 00:01:02,500\nbye\n',
    );
    assert.equal(
      toVtt(m),
      'WEBVTT\n\n00:00:00.000 --> 00:00:01.250\nhello there\n\n00:01:01.000 --> 00:01:02.500\nbye\n',
    );
  });
});
