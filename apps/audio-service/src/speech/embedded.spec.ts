import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { describe, it } from 'node:test';
import type { CatalogEntry } from '@infer/contracts';
import { createLogger } from '@infer/telemetry';
import { parseWav, wavDuration } from '../media/wav.js';
import { embeddedSpeechFactory, speakableText, speedPlan } from './embedded.js';

const tools = {
  ffmpeg: 'ffmpeg',
  flite: 'flite',
  espeak: 'espeak-ng',
  pocketsphinx: 'pocketsphinx_continuous',
  tmpDir: tmpdir(),
};
const model = { id: 'tts-model', engine: { type: 'embedded-tts' } } as CatalogEntry;
const log = createLogger('test', 'silent');

describe('embedded-tts', () => {
  it('plans speed: flite stretches, espeak-ng changes its rate and atempo makes up the rest', () => {
    assert.deepEqual(speedPlan('flite', 2), { args: ['--setf', 'duration_stretch=0.5000'], tempo: 1 });
    assert.deepEqual(speedPlan('espeak', 1), { args: ['-s', '175'], tempo: 1 });
    const slow = speedPlan('espeak', 0.25);
    assert.deepEqual(slow.args, ['-s', '80']);
    assert.ok(Math.abs(slow.tempo - (0.25 * 175) / 80) < 1e-9);
    assert.deepEqual(speedPlan('espeak', 4).args, ['-s', '450']);
  });

  it('strips control characters but keeps newlines', () => {
    assert.equal(speakableText('a\u0000b\nc\u001bd'), 'a b\nc d');
  });

  it('speaks with flite and espeak-ng (real programs) into a finished WAV', async () => {
    const engine = embeddedSpeechFactory(tools).create(model.engine as never, { model, log });
    for (const voice of ['en-female', 'es-male']) {
      const wav = await engine.synthesize(
        { input: 'Hello, one two three.', voice, format: 'wav', speed: 1 },
        new AbortController().signal,
      );
      const d = wavDuration(parseWav(wav));
      assert.ok(d > 0.8 && d < 5, `${voice}: ${d} s`);
    }
  });

  it('stops at once when aborted', async () => {
    const engine = embeddedSpeechFactory(tools).create(model.engine as never, { model, log });
    await engine.checkVoice('en-female');
    const ac = new AbortController();
    const p = engine.synthesize(
      { input: 'word '.repeat(800), voice: 'en-female', format: 'flac', speed: 0.25 },
      ac.signal,
    );
    setTimeout(() => ac.abort(new Error('client gone')), 20);
    await assert.rejects(p, /client gone/);
  });
});
