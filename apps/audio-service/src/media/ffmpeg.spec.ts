import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ApiError } from '@infer/contracts';
import { toneWav } from '../testing/fake-audio-upstream.js';
import { decodeForStt, encodeSpeech, STT_SAMPLE_RATE } from './ffmpeg.js';
import { run } from './process.js';
import { parseWav, wavDuration } from './wav.js';

describe('ffmpeg', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ffmpeg-spec-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('decodes audio to 16 kHz mono 16-bit WAV', async () => {
    const input = join(dir, 'tone.wav');
    await writeFile(input, toneWav(1.5));
    const { pcm, path } = await decodeForStt('ffmpeg', input, dir, { maxSeconds: 60 });
    assert.equal(pcm.sampleRate, STT_SAMPLE_RATE);
    assert.equal(pcm.channels, 1);
    assert.ok(Math.abs(wavDuration(pcm) - 1.5) < 0.01);
    assert.ok(path.endsWith('decoded.wav'));
  });

  it('refuses non-audio and audio over the longest accepted, as 400 file', async () => {
    const junk = join(dir, 'junk.bin');
    await writeFile(junk, Buffer.from('definitely not audio, just text\n'.repeat(100)));
    await assert.rejects(decodeForStt('ffmpeg', junk, dir, { maxSeconds: 60 }), (e: unknown) => {
      assert.ok(e instanceof ApiError);
      assert.equal(e.status, 400);
      assert.equal(e.param, 'file');
      return true;
    });
    const long = join(dir, 'long.wav');
    await writeFile(long, toneWav(4));
    await assert.rejects(decodeForStt('ffmpeg', long, dir, { maxSeconds: 2 }), /longer than 2 seconds/);
  });

  it('encodes a finished WAV (sizes in the header) and changes tempo', async () => {
    const input = join(dir, 'in.wav');
    await writeFile(input, toneWav(2, 16_000));
    const wav = await encodeSpeech('ffmpeg', input, dir, 'wav', { tempo: 2 });
    const p = parseWav(wav);
    assert.equal(p.sampleRate, 24_000);
    assert.equal(wav.readUInt32LE(4), wav.length - 8, 'RIFF size filled in');
    assert.ok(Math.abs(wavDuration(p) - 1) < 0.05, `tempo 2 halves 2 s: ${wavDuration(p)}`);
  });

  it('kills the process when the signal aborts', async () => {
    const ac = new AbortController();
    const started = performance.now();
    const p = run('sleep', ['5'], { signal: ac.signal });
    setTimeout(() => ac.abort(new Error('stop')), 50);
    await assert.rejects(p, /stop/);
    assert.ok(
      performance.now() - started < 4000,
      'killed well before the 5 s sleep ends (slack for a busy machine)',
    );
  });
});
