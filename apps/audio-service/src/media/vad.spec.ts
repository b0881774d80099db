import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { type Passage, spokenWithPauses } from '../testing/spoken.js';
import {
  planChunks,
  planSpeechChunks,
  type SpeechRegion,
  speechProbabilities,
  speechRegions,
  toFloat,
} from './vad.js';
import type { Pcm16 } from './wav.js';

const RATE = 16_000;
const sec = (samples: number) => samples / RATE;
const TEXTS = [
  'The quick brown fox jumps over the lazy dog.',
  'Please call Stella and ask her to bring these things from the store.',
  'Six spoons of fresh snow peas and five thick slabs of blue cheese.',
  'We also need a small plastic snake and a big toy frog for the kids.',
];

describe('Silero VAD splitter (real model, flite speech with known pauses)', () => {
  let pcm: Pcm16;
  let passages: Passage[];
  before(async () => {
    ({ pcm, passages } = await spokenWithPauses(TEXTS, [1.5, 2, 0.6, 3], { tail: 2 }));
  });

  it('finds speech only inside the passages, and every passage', async () => {
    const probs = await speechProbabilities(toFloat(pcm));
    const regions = speechRegions(probs, pcm.data.length / 2);
    assert.ok(regions.length >= TEXTS.length - 1, `${regions.length} regions`);
    for (const r of regions) {
      const inside = passages.some((p) => sec(r.start) >= p.start - 0.2 && sec(r.end) <= p.end + 0.2);
      assert.ok(inside, `region ${sec(r.start)}-${sec(r.end)} lies in a passage`);
    }
    for (const p of passages) {
      const covered = regions.some((r) => sec(r.start) < p.end && sec(r.end) > p.start);
      assert.ok(covered, `passage at ${p.start} found`);
    }
    // Silence (pauses and tail) is mostly left out.
    const speech = regions.reduce((s, r) => s + sec(r.end - r.start), 0);
    const spoken = passages.reduce((s, p) => s + p.end - p.start, 0);
    assert.ok(speech <= spoken + 0.5, `${speech} s of speech found in ${spoken} s of passages`);
  });

  it('cuts long audio only in pauses: no piece boundary inside a passage, long pauses dropped', async () => {
    const { chunks } = await planSpeechChunks(pcm, 6);
    assert.ok(chunks.length >= 2);
    for (const c of chunks) {
      assert.ok(sec(c.to - c.from) <= 6 + 1e-9, 'at most the limit');
      for (const p of passages) {
        // A boundary inside a passage would cut a sentence: not allowed (flite's own edges give 0.2 s).
        for (const b of [sec(c.from), sec(c.to)]) {
          assert.ok(
            !(b > p.start + 0.25 && b < p.end - 0.25),
            `boundary ${b} inside passage ${p.start}-${p.end}`,
          );
        }
      }
    }
    // The 3 s pause before the last passage is never sent: it is not inside any piece.
    const gapStart = (passages[2] as Passage).end + 0.3;
    const gapEnd = (passages[3] as Passage).start - 0.3;
    assert.ok(chunks.every((c) => sec(c.to) <= gapStart || sec(c.from) >= gapEnd));
    // Pieces are in order and do not overlap.
    for (let i = 1; i < chunks.length; i++)
      assert.ok((chunks[i] as { from: number }).from >= (chunks[i - 1] as { to: number }).to);
  });

  it('gives no piece for silence only', async () => {
    const quiet: Pcm16 = { sampleRate: RATE, channels: 1, data: Buffer.alloc(RATE * 2 * 3) };
    assert.deepEqual((await planSpeechChunks(quiet, 30)).chunks, []);
  });
});

describe('planChunks (regions -> pieces)', () => {
  const pcm = (seconds: number): Pcm16 => ({
    sampleRate: RATE,
    channels: 1,
    data: Buffer.alloc(seconds * RATE * 2),
  });
  const r = (a: number, b: number): SpeechRegion => ({ start: a * RATE, end: b * RATE });
  const secs = (cs: Array<{ from: number; to: number }>) => cs.map((c) => [sec(c.from), sec(c.to)]);

  it('joins regions across short pauses up to the limit, and ends a piece at a long pause', () => {
    const p = pcm(60);
    assert.deepEqual(secs(planChunks(p, [r(1, 3), r(3.5, 5), r(5.2, 9)], 10)), [[1, 9]]);
    assert.deepEqual(secs(planChunks(p, [r(1, 3), r(3.5, 5), r(5.2, 9)], 6)), [
      [1, 5],
      [5.2, 9],
    ]);
    assert.deepEqual(
      secs(planChunks(p, [r(1, 3), r(6, 8)], 30)),
      [
        [1, 3],
        [6, 8],
      ],
      'a 3 s pause ends it',
    );
    assert.deepEqual(secs(planChunks(p, [r(1, 3), r(6, 8)], 30, 5)), [[1, 8]]);
    assert.deepEqual(planChunks(p, [], 30), []);
  });

  it('cuts a region longer than the limit inside it (speech without any pause)', () => {
    const chunks = planChunks(pcm(60), [r(0, 25)], 10);
    assert.ok(chunks.length === 3);
    for (const c of chunks) assert.ok(c.to - c.from <= 10 * RATE);
    assert.equal(chunks[0]?.from, 0);
    assert.equal(chunks.at(-1)?.to, 25 * RATE);
  });
});
