import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import type { CatalogEntry } from '@infer/contracts';
import { createLogger } from '@infer/telemetry';
import {
  baseWord,
  compressionRatio,
  parseDictionary,
  parsePocketsphinxOutput,
  pocketsphinxFactory,
  toSegments,
} from './pocketsphinx.js';

const OUTPUT = `good morning everyone
<s> 0.110 0.170 0.999700
good(2) 0.180 0.350 0.091595
morning 0.360 0.760 0.990247
<sil> 0.770 0.800 0.999
everyone 0.800 1.420 0.980196
</s> 1.430 1.670 1.000000
[NOISE]
<s> 2.000 2.100 0.99
[NOISE] 2.100 2.400 0.5
</s> 2.400 2.500 1.0
the weather is nice today
<s> 3.580 3.650 0.999900
the 3.660 3.800 0.997503
weather 3.810 4.110 0.989257
nice 4.280 4.650 1.000100
</s> 5.180 5.360 1.000000
`;

describe('pocketsphinx output', () => {
  it('reads utterances of real words (alternate pronunciations folded, fillers and empty utterances dropped)', () => {
    const utts = parsePocketsphinxOutput(OUTPUT);
    assert.equal(utts.length, 2);
    assert.deepEqual(
      utts[0]?.words.map((w) => w.word),
      ['good', 'morning', 'everyone'],
    );
    assert.equal(utts[0]?.start, 0.11);
    assert.equal(utts[0]?.end, 1.67);
    assert.equal(utts[1]?.words.at(-1)?.probability, 1, 'posteriors above 1 are clamped');
    assert.equal(baseWord('hello(12)'), 'hello');
  });

  it('makes segments with word timings, log-probabilities, no-speech share, tokens and compression ratio', () => {
    const vocab = parseDictionary(
      'a AH\ngood G UH D\ngood(2) G IH D\nmorning M AO R N IH NG\neveryone EH V R IY W AH N\n',
    );
    assert.equal(vocab.get('good'), 1);
    const [s] = toSegments(parsePocketsphinxOutput(OUTPUT), vocab, 0.3, 10);
    assert.ok(s);
    assert.equal(s.text, 'good morning everyone');
    assert.equal(s.start, 0.18);
    assert.equal(s.end, 1.42);
    assert.deepEqual(s.tokens, [1, 3, 4]);
    assert.equal(s.temperature, 0.3);
    assert.ok(s.avg_logprob < 0 && s.avg_logprob > -2);
    assert.ok(s.no_speech_prob > 0.1 && s.no_speech_prob < 0.5, String(s.no_speech_prob));
    assert.equal(s.compression_ratio, Math.round(compressionRatio('good morning everyone') * 1000) / 1000);
    // Times are clamped into the audio's duration.
    const [clamped] = toSegments(parsePocketsphinxOutput(OUTPUT), null, 0, 1);
    assert.equal(clamped?.end, 1);
    assert.deepEqual(clamped?.tokens, []);
  });

  it('transcribes flite speech (real programs)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ps-spec-'));
    try {
      const wav = join(dir, 'a.wav');
      const run = promisify(execFile);
      await run('flite', ['-voice', 'slt', '-t', 'Good morning everyone.', '-o', join(dir, 'src.wav')]);
      await run('ffmpeg', [
        '-loglevel',
        'error',
        '-y',
        '-i',
        join(dir, 'src.wav'),
        '-ar',
        '16000',
        '-ac',
        '1',
        wav,
      ]);
      const model = { id: 'stt', engine: { type: 'pocketsphinx' } } as CatalogEntry;
      const tools = {
        ffmpeg: 'ffmpeg',
        flite: 'flite',
        espeak: 'espeak-ng',
        pocketsphinx: 'pocketsphinx_continuous',
        tmpDir: dir,
      };
      const engine = pocketsphinxFactory(tools).create(model.engine as never, {
        model,
        log: createLogger('t', 'silent'),
      });
      assert.deepEqual(engine.languages, ['en']);
      const t = await engine.transcribe(
        { wavPath: wav, wav: await readFile(wav), duration: 1.6 },
        new AbortController().signal,
      );
      assert.equal(t.language, 'en');
      assert.match(t.segments.map((s) => s.text).join(' '), /morning everyone/);
      assert.ok(t.segments[0]?.tokens.length, "dictionary ids from Debian's cmudict");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
