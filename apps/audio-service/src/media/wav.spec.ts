import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { atempoChain } from './ffmpeg.js';
import {
  encodeWav,
  type Pcm16,
  parseWav,
  planSegments,
  quietestPoint,
  slice,
  WavError,
  wavDuration,
} from './wav.js';

/** `seconds` of a loud square wave at 16 kHz with silent gaps at the given [start, end) seconds. */
function audio(seconds: number, gaps: Array<[number, number]> = []): Pcm16 {
  const rate = 16_000;
  const data = Buffer.alloc(seconds * rate * 2);
  for (let i = 0; i < seconds * rate; i++) {
    const t = i / rate;
    const silent = gaps.some(([a, b]) => t >= a && t < b);
    data.writeInt16LE(silent ? 0 : i % 40 < 20 ? 9000 : -9000, i * 2);
  }
  return { sampleRate: rate, channels: 1, data };
}

describe('wav', () => {
  it('writes a canonical header and reads it back', () => {
    const p = audio(2);
    const buf = encodeWav(p);
    assert.equal(buf.length, 44 + p.data.length);
    const back = parseWav(buf);
    assert.equal(back.sampleRate, 16_000);
    assert.equal(back.channels, 1);
    assert.ok(back.data.equals(p.data));
    assert.equal(wavDuration(back), 2);
  });

  it('reads an unfinished header (written to a pipe) as the rest of the file, and refuses non-WAV', () => {
    const buf = encodeWav(audio(1));
    buf.writeUInt32LE(0xffffffff, 40);
    assert.equal(wavDuration(parseWav(buf)), 1);
    assert.throws(() => parseWav(Buffer.from('ID3 not a wav at all')), WavError);
    const bits8 = encodeWav(audio(1));
    bits8.writeUInt16LE(8, 34);
    assert.throws(() => parseWav(bits8), /16-bit/);
  });

  it('keeps audio of at most the limit whole', () => {
    const segs = planSegments(audio(30), 30);
    assert.deepEqual(segs, [{ index: 0, from: 0, to: 30 * 16_000 }]);
  });

  it('cuts long audio at the quietest moment before each limit, in contiguous segments of at most the limit', () => {
    const p = audio(70, [[26, 26.5]]);
    const segs = planSegments(p, 30);
    assert.ok(segs.length >= 3);
    const first = segs[0];
    assert.ok(
      first && first.to / 16_000 > 26 && first.to / 16_000 < 26.5,
      `cut at ${(first?.to ?? 0) / 16_000}`,
    );
    let at = 0;
    for (const s of segs) {
      assert.equal(s.from, at);
      assert.ok(s.to - s.from <= 30 * 16_000);
      at = s.to;
    }
    assert.equal(at, 70 * 16_000);
    assert.equal(slice(p, first?.from ?? 0, first?.to ?? 0).data.length, (first?.to ?? 0) * 2);
  });

  it('prefers the latest of equally quiet windows (digital silence)', () => {
    const p = audio(10, [[0, 10]]);
    const cut = quietestPoint(p, 0, 5 * 16_000);
    assert.ok(cut > 4.8 * 16_000, String(cut));
  });
});

describe('atempoChain', () => {
  it('chains factors below 0.5 and leaves 1 alone', () => {
    assert.equal(atempoChain(1), null);
    assert.equal(atempoChain(2), 'atempo=2.000000');
    assert.equal(atempoChain(0.25), 'atempo=0.5,atempo=0.500000');
    assert.equal(atempoChain(0.3), 'atempo=0.5,atempo=0.600000');
    assert.throws(() => atempoChain(0));
  });
});
