/**
 * Audio through the gateway with the official openai SDK: speech in every format (decoded by
 * ffprobe), a flite -> pocketsphinx round trip with a bound on word error rate, the split path of
 * audio over 2 minutes, the 25 MB limit, bad input, upstream engines (a local fake server, a test
 * double), queue metrics and the admin API, a worker killed mid-job (its job finished by another
 * worker process), and a job past its deadline (524).
 *
 * The audio-service runs in-process in its `api` role; workers run in-process or as child processes
 * (AUDIO_ROLE=worker) on a BullMQ prefix of this run only.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import {
  AUDIO_CONTENT_TYPES,
  Queues,
  SPEECH_FORMATS,
  type SpeechFormat,
  TranscriptionJsonSchema,
  TranscriptionSchema,
} from '@infer/contracts';
import { Redis } from 'ioredis';
import { toFile } from 'openai';
import { parse, stringify } from 'yaml';
import { type AudioService, startAudioService } from '../../apps/audio-service/src/app.js';
import { encodeWav } from '../../apps/audio-service/src/media/wav.js';
import {
  type FakeAudioUpstream,
  startFakeAudioUpstream,
} from '../../apps/audio-service/src/testing/fake-audio-upstream.js';
import { spokenWithPauses } from '../../apps/audio-service/src/testing/spoken.js';
import { apiError, type Stack, startStack } from './harness.js';

const run = promisify(execFile);
const ADMIN_TOKEN = `admin-${randomBytes(16).toString('hex')}`;
const PREFIX = `it-audio-${randomBytes(4).toString('hex')}`;
/** NATS subjects of this run only (the gateway's MODEL_SUBJECT_PREFIX and the services' subjectPrefix). */
const SUBJECTS = `test.${randomBytes(4).toString('hex')}.`;

/** Word error rate: word-level edit distance over the reference length. */
function wer(reference: string, hypothesis: string): number {
  const norm = (s: string) =>
    s
      .toLowerCase()
      .replace(/[^a-z0-9' ]+/g, ' ')
      .split(/\s+/)
      .filter(Boolean);
  const r = norm(reference);
  const h = norm(hypothesis);
  const d = Array.from({ length: r.length + 1 }, (_, i) => [i, ...Array<number>(h.length).fill(0)]);
  for (let j = 1; j <= h.length; j++) (d[0] as number[])[j] = j;
  for (let i = 1; i <= r.length; i++) {
    for (let j = 1; j <= h.length; j++) {
      const row = d[i] as number[];
      const prev = d[i - 1] as number[];
      row[j] = Math.min(
        (prev[j] as number) + 1,
        (row[j - 1] as number) + 1,
        (prev[j - 1] as number) + (r[i - 1] === h[j - 1] ? 0 : 1),
      );
    }
  }
  return ((d[r.length] as number[])[h.length] as number) / r.length;
}

interface Probe {
  streams: Array<{ codec_name: string; sample_rate?: string; channels?: number }>;
  format: { format_name: string; duration?: string };
}

async function ffprobe(dir: string, bytes: Buffer, name: string, inputArgs: string[] = []): Promise<Probe> {
  const path = join(dir, name);
  await writeFile(path, bytes);
  const { stdout } = await run('ffprobe', [
    '-v',
    'error',
    ...inputArgs,
    '-show_entries',
    'stream=codec_name,sample_rate,channels:format=format_name,duration',
    '-of',
    'json',
    path,
  ]);
  return JSON.parse(stdout) as Probe;
}

/** The test's own audio: flite's slt voice, optionally with silence around it, encoded by ffmpeg. */
async function fliteAudio(dir: string, text: string, out: string, extra: string[] = []): Promise<Buffer> {
  const wav = join(dir, `${out}.src.wav`);
  await run('flite', ['-voice', 'slt', '-t', text, '-o', wav]);
  await run('ffmpeg', ['-nostdin', '-loglevel', 'error', '-y', '-i', wav, ...extra, join(dir, out)]);
  return readFile(join(dir, out));
}

const EXPECTED: Record<SpeechFormat, { codec: string; format: string }> = {
  mp3: { codec: 'mp3', format: 'mp3' },
  wav: { codec: 'pcm_s16le', format: 'wav' },
  flac: { codec: 'flac', format: 'flac' },
  aac: { codec: 'aac', format: 'aac' },
  pcm: { codec: 'pcm_s16le', format: 's16le' },
  opus: { codec: 'opus', format: 'ogg' },
};

describe('audio through the gateway (openai SDK)', () => {
  let stack: Stack;
  let api: AudioService;
  let worker: AudioService | null = null;
  let upstream: FakeAudioUpstream;
  let dir: string;
  let appEnv: NodeJS.ProcessEnv;
  const children: ChildProcess[] = [];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'it-audio-'));
    upstream = await startFakeAudioUpstream();
    // The default catalog plus: a model with a 1 s job deadline, and models on the fake upstream.
    const catalog = parse(await readFile('config/models.yaml', 'utf8')) as {
      models: Array<Record<string, unknown>>;
    };
    const base = { tiers: ['community', 'inference', 'premium'] };
    catalog.models.push(
      {
        ...base,
        id: 'stt-deadline',
        kind: 'stt',
        rank: 900,
        engine: { type: 'pocketsphinx', job_timeout_ms: 1000 },
      },
      {
        ...base,
        id: 'tts-upstream',
        kind: 'tts',
        rank: 910,
        engine: {
          type: 'openai',
          base_url: upstream.baseUrl,
          model: 'kokoro',
          voices: { 'en-female': 'af_heart', 'es-female': 'ef_dora', 'en-missing': 'zz_none' },
        },
      },
      {
        ...base,
        id: 'stt-upstream',
        kind: 'stt',
        rank: 920,
        engine: { type: 'openai', base_url: upstream.baseUrl, model: 'whisper-small' },
      },
    );
    const catalogFile = join(dir, 'models.yaml');
    await writeFile(catalogFile, stringify(catalog));
    stack = await startStack({
      catalogFile,
      env: {
        BULLMQ_PREFIX: PREFIX,
        MODEL_SUBJECT_PREFIX: SUBJECTS,
        ADMIN_TOKEN,
        // Short enough that a killed worker's job is taken over in seconds, long enough that a live
        // worker on a busy machine renews its lock in time (BullMQ renews at half the duration).
        AUDIO_LOCK_DURATION_MS: '5000',
        AUDIO_STALLED_INTERVAL_MS: '1000',
        AUDIO_METRICS_PORT: '0',
        AUDIO_METRICS_HOST: '127.0.0.1',
      },
      services: [
        async (env) => {
          appEnv = env;
          api = await startAudioService({ env, role: 'api', subjectPrefix: SUBJECTS });
          return api;
        },
      ],
    });
    worker = await startAudioService({ env: appEnv, role: 'worker' });
  });

  after(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await worker?.stop();
    await stack?.close();
    await upstream?.close();
    // Every key of this run's queues (a BullMQ prefix of its own).
    const redis = new Redis(appEnv?.REDIS_URL ?? 'redis://127.0.0.1:6379');
    for await (const keys of redis.scanStream({ match: `${PREFIX}:*`, count: 500 }) as AsyncIterable<
      string[]
    >) {
      if (keys.length) await redis.del(...keys);
    }
    redis.disconnect();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  describe('speech', () => {
    for (const format of SPEECH_FORMATS) {
      it(`answers ${format}: a valid file of its kind with Content-Type ${AUDIO_CONTENT_TYPES[format]}`, async () => {
        const res = await stack.client('community').audio.speech.create({
          model: 'tts-model',
          input: 'The quick brown fox jumps over the lazy dog.',
          voice: 'en-female',
          response_format: format,
        });
        assert.equal(res.headers.get('content-type'), AUDIO_CONTENT_TYPES[format]);
        const bytes = Buffer.from(await res.arrayBuffer());
        assert.ok(bytes.length > 1000, `${bytes.length} bytes`);
        const probe = await ffprobe(
          dir,
          bytes,
          `speech.${format}`,
          format === 'pcm' ? ['-f', 's16le', '-ar', '24000', '-ac', '1'] : [],
        );
        assert.equal(probe.streams[0]?.codec_name, EXPECTED[format].codec);
        assert.equal(probe.format.format_name, EXPECTED[format].format);
        assert.equal(probe.streams[0]?.channels, 1);
        if (format === 'pcm') {
          assert.equal(bytes.length % 2, 0);
          assert.ok(bytes.length / 48_000 > 1.5, 'about 2.5 s of 24 kHz 16-bit audio');
        } else {
          assert.ok(Number(probe.format.duration) > 1.5, `duration ${probe.format.duration}`);
        }
      });
    }

    it('defaults to mp3; speaks the Spanish voices; speed changes the duration', async () => {
      const client = stack.client('inference');
      const def = await client.audio.speech.create({ model: 'tts-model', input: 'Hello.', voice: 'alloy' });
      assert.equal(def.headers.get('content-type'), 'audio/mpeg');
      const dur = async (voice: string, speed: number) => {
        const r = await client.audio.speech.create({
          model: 'tts-model',
          input: 'Hola, ¿cómo estás? Hoy hace un día muy bonito.',
          voice,
          response_format: 'wav',
          speed,
        });
        const p = await ffprobe(dir, Buffer.from(await r.arrayBuffer()), `${voice}-${speed}.wav`);
        return Number(p.format.duration);
      };
      const female = await dur('es-female', 1);
      const male = await dur('es-male', 1);
      const fast = await dur('es-male', 2);
      const slow = await dur('es-male', 0.25);
      assert.ok(female > 1 && male > 1);
      assert.ok(Math.abs(fast / male - 0.5) < 0.12, `speed 2: ${fast} vs ${male}`);
      assert.ok(Math.abs(slow / male - 4) < 0.6, `speed 0.25: ${slow} vs ${male}`);
      const other = await dur('espeak:de+m2', 1);
      assert.ok(other > 1);
    });

    it('refuses an unknown voice, too long an input and a speed out of range with 400 naming the field', async () => {
      const client = stack.client('community');
      let e = await apiError(
        client.audio.speech.create({ model: 'tts-model', input: 'Hi', voice: 'nobody' }),
      );
      assert.equal(e.status, 400);
      assert.equal(e.param, 'voice');
      assert.match(e.message, /en-female/);
      e = await apiError(
        client.audio.speech.create({ model: 'tts-model', input: 'Hi', voice: 'espeak:es+nosuchvariant' }),
      );
      assert.equal(e.param, 'voice');
      e = await apiError(
        client.audio.speech.create({ model: 'tts-model', input: 'a'.repeat(4097), voice: 'en-female' }),
      );
      assert.equal(e.status, 400);
      assert.equal(e.param, 'input');
      e = await apiError(
        client.audio.speech.create({ model: 'tts-model', input: 'Hi', voice: 'en-female', speed: 4.5 }),
      );
      assert.equal(e.param, 'speed');
      e = await apiError(client.audio.speech.create({ model: 'stt-model', input: 'Hi', voice: 'en-female' }));
      assert.equal(e.status, 400);
      assert.equal(e.param, 'model');
    });

    it('answers speech larger than a NATS message (parked in Redis on the way)', async () => {
      const input = 'This sentence is repeated to make a long recording. '.repeat(30).trim();
      const res = await stack.client('premium').audio.speech.create({
        model: 'tts-model',
        input,
        voice: 'en-female',
        response_format: 'wav',
      });
      const bytes = Buffer.from(await res.arrayBuffer());
      assert.ok(bytes.length > 1.1 * 1024 * 1024, `${bytes.length} bytes > 1 MB NATS payload`);
      const p = await ffprobe(dir, bytes, 'long.wav');
      assert.ok(Number(p.format.duration) > 25, `duration ${p.format.duration}`);
    });

    it('serves a model on an OpenAI-compatible speech upstream (voice ids mapped)', async () => {
      const res = await stack.client('community').audio.speech.create({
        model: 'tts-upstream',
        input: 'Hola',
        voice: 'es-female',
        response_format: 'flac',
        speed: 1.5,
      });
      assert.equal(res.headers.get('content-type'), 'audio/flac');
      assert.ok((await res.arrayBuffer()).byteLength > 1000);
      const sent = upstream.requests.at(-1)?.json;
      assert.deepEqual(sent, {
        model: 'kokoro',
        input: 'Hola',
        voice: 'ef_dora',
        response_format: 'flac',
        speed: 1.5,
      });
      let e = await apiError(
        stack.client('community').audio.speech.create({ model: 'tts-upstream', input: 'x', voice: 'nope' }),
      );
      assert.equal(e.param, 'voice');
      // A voice the catalog maps but the upstream refuses: the upstream's 400 comes back naming voice.
      e = await apiError(
        stack
          .client('community')
          .audio.speech.create({ model: 'tts-upstream', input: 'x', voice: 'en-missing' }),
      );
      assert.equal(e.status, 400);
      assert.equal(e.param, 'voice');
    });
  });

  describe('transcription', () => {
    const SENTENCE = 'The quick brown fox jumps over the lazy dog. Hello world, this is a simple test.';
    let speechWav: Buffer;
    /** A shorter clip for the tests that do not measure accuracy. */
    let shortClip: Buffer;

    before(async () => {
      const speak = async (input: string) => {
        const res = await stack.client('community').audio.speech.create({
          model: 'tts-model',
          input,
          voice: 'en-female',
          response_format: 'mp3',
        });
        return Buffer.from(await res.arrayBuffer());
      };
      speechWav = await speak(SENTENCE);
      shortClip = await speak('The quick brown fox.');
    });

    it('round trip: flite English female speech -> transcript with WER <= 35%, monotone timestamps inside the duration', async () => {
      const t = await stack.client('community').audio.transcriptions.create({
        file: await toFile(speechWav, 'speech.mp3'),
        model: 'stt-model',
        response_format: 'verbose_json',
        timestamp_granularities: ['word', 'segment'],
      });
      const v = TranscriptionSchema.parse(t);
      const rate = wer(SENTENCE, v.text);
      console.log(`# round trip WER ${(rate * 100).toFixed(1)}%: "${v.text}"`);
      assert.ok(rate <= 0.35, `WER ${rate}`);
      assert.equal(v.language, 'en');
      assert.equal(v.task, 'transcribe');
      assert.ok(v.duration > 3 && v.duration < 10, `duration ${v.duration}`);
      assert.ok(v.segments.length >= 1);
      assert.ok(v.words && v.words.length >= 10);
      let last = 0;
      for (const [i, s] of v.segments.entries()) {
        assert.equal(s.id, i);
        assert.ok(s.start >= last && s.end >= s.start && s.end <= v.duration, JSON.stringify(s));
        assert.ok(s.no_speech_prob >= 0 && s.no_speech_prob <= 1);
        assert.ok(s.avg_logprob <= 0);
        assert.ok(s.tokens.length > 0);
        last = s.end;
      }
      last = 0;
      for (const w of v.words ?? []) {
        assert.ok(w.start >= last && w.end >= w.start && w.end <= v.duration, JSON.stringify(w));
        assert.ok(w.probability >= 0 && w.probability <= 1);
        last = w.end;
      }
    });

    it('json by default; words null without word granularity; text/srt/vtt wrapped in JSON', async () => {
      const client = stack.client('inference');
      const file = () => toFile(shortClip, 'short.mp3');
      const j = await client.audio.transcriptions.create({ file: await file(), model: 'stt-model' });
      assert.deepEqual(Object.keys(j).sort(), ['language', 'task', 'text']);
      TranscriptionJsonSchema.parse(j);
      const v = TranscriptionSchema.parse(
        await client.audio.transcriptions.create({
          file: await file(),
          model: 'stt-model',
          response_format: 'verbose_json',
          language: 'en',
        }),
      );
      assert.equal(v.words, null);
      for (const [format, pattern] of [
        ['text', /quick/],
        ['srt', /^1\n00:00:0\d,\d{3} --> 00:00:0\d,\d{3}\n/],
        ['vtt', /^WEBVTT\n\n00:00:0\d\.\d{3} --> /],
      ] as const) {
        const r = (await client.audio.transcriptions.create({
          file: await file(),
          model: 'stt-model',
          response_format: format,
        })) as unknown;
        const w = TranscriptionJsonSchema.parse(r);
        assert.match(w.text, pattern, `${format}: ${w.text}`);
        assert.equal(w.language, 'en');
      }
    });

    it('splits audio over 2 minutes into segments (child jobs) and merges them with offset timestamps', async () => {
      const first = 'Good morning everyone. This is the first part of a long recording.';
      const second = 'And this is the second part, spoken after a long pause.';
      const a = join(dir, 'p1.wav');
      const b = join(dir, 'p2.wav');
      await run('flite', ['-voice', 'slt', '-t', first, '-o', a]);
      await run('flite', ['-voice', 'slt', '-t', second, '-o', b]);
      const long = join(dir, 'long.ogg');
      // first sentence, 125 s of silence, second sentence: about 135 s in Ogg/Opus.
      await run('ffmpeg', [
        ...['-nostdin', '-loglevel', 'error', '-y', '-i', a, '-f', 'lavfi', '-t', '125', '-i'],
        ...['anullsrc=r=16000:cl=mono', '-i', b, '-filter_complex', '[0][1][2]concat=n=3:v=0:a=1'],
        ...['-ac', '1', '-c:a', 'libopus', '-b:a', '24k', long],
      ]);
      const before = await api.queue.getJobCounts('completed');
      const t0 = performance.now();
      const v = TranscriptionSchema.parse(
        await stack.client('community').audio.transcriptions.create({
          file: await toFile(await readFile(long), 'long.ogg'),
          model: 'stt-model',
          response_format: 'verbose_json',
          timestamp_granularities: ['word'],
        }),
      );
      console.log(
        `# ${v.duration.toFixed(1)} s through the split path in ${Math.round(performance.now() - t0)} ms`,
      );
      assert.ok(v.duration > 125 && v.duration < 140, `duration ${v.duration}`);
      assert.ok(wer(`${first} ${second}`, v.text) <= 0.4, v.text);
      const late = v.segments.filter((s) => s.start > 120);
      assert.ok(late.length >= 1, 'a segment from the second piece, moved by its offset');
      assert.ok(
        late.every((s) => s.seek > 0),
        'seek = the piece offset in 10 ms frames',
      );
      assert.ok(v.segments.some((s) => s.end < 10));
      let last = 0;
      for (const w of v.words ?? []) {
        assert.ok(w.start >= last && w.end <= v.duration);
        last = w.end;
      }
      const after = await api.queue.getJobCounts('completed');
      // One parent and at least two segment children completed.
      assert.ok((after.completed ?? 0) - (before.completed ?? 0) >= 3, JSON.stringify({ before, after }));
    });

    it('long speech with pauses: VAD pieces, every segment starts and ends within its passage (no cut mid-sentence)', async () => {
      const texts = [
        'The quick brown fox jumps over the lazy dog.',
        'Please call Stella and ask her to bring these things from the store.',
        'Six spoons of fresh snow peas and five thick slabs of blue cheese.',
        'We also need a small plastic snake and a big toy frog for the kids.',
      ];
      const { pcm, passages } = await spokenWithPauses(texts, [1, 2.5, 3, 2.5], { tail: 1.5 });
      const before = await api.queue.getJobCounts('completed');
      const v = TranscriptionSchema.parse(
        await stack.client('community').audio.transcriptions.create({
          file: await toFile(encodeWav(pcm), 'pauses.wav'),
          model: 'stt-model',
          response_format: 'verbose_json',
          timestamp_granularities: ['segment', 'word'],
        }),
      );
      assert.ok(wer(texts.join(' '), v.text) <= 0.4, v.text);
      assert.ok(v.segments.length >= texts.length, `${v.segments.length} segments`);
      for (const s of v.segments) {
        const home = passages.find((p) => s.start >= p.start - 0.3 && s.end <= p.end + 0.3);
        assert.ok(home, `segment ${s.start}-${s.end} "${s.text}" lies within one passage`);
      }
      for (const p of passages) assert.ok(v.segments.some((s) => s.start < p.end && s.end > p.start));
      const after = await api.queue.getJobCounts('completed');
      // Pauses over 1.5 s end a piece: one parent and a child per passage.
      assert.ok(
        (after.completed ?? 0) - (before.completed ?? 0) >= 1 + texts.length,
        JSON.stringify({ before, after }),
      );
    });

    it('refuses a non-English language on pocketsphinx, and a code that is not ISO-639-1 (400 language)', async () => {
      const client = stack.client('community');
      let e = await apiError(
        client.audio.transcriptions.create({
          file: await toFile(speechWav, 'a.mp3'),
          model: 'stt-model',
          language: 'es',
        }),
      );
      assert.equal(e.status, 400);
      assert.equal(e.param, 'language');
      assert.match(e.message, /en/);
      e = await apiError(
        client.audio.transcriptions.create({
          file: await toFile(speechWav, 'a.mp3'),
          model: 'stt-model',
          language: 'xq',
        }),
      );
      assert.equal(e.param, 'language');
      e = await apiError(
        client.audio.transcriptions.create({
          file: await toFile(speechWav, 'a.mp3'),
          model: 'stt-model',
          language: 'eng',
        }),
      );
      assert.equal(e.param, 'language');
    });

    it('answers 400 file for corrupt, non-audio, empty and missing files', async () => {
      const client = stack.client('community');
      const cases: Array<[string, Buffer]> = [
        ['noise.mp3', randomBytes(20_000)],
        ['notes.txt', Buffer.from('this is not audio at all\n'.repeat(50))],
        ['truncated.wav', speechWav.subarray(0, 300)],
        ['empty.wav', Buffer.alloc(0)],
      ];
      for (const [name, bytes] of cases) {
        const e = await apiError(
          client.audio.transcriptions.create({ file: await toFile(bytes, name), model: 'stt-model' }),
        );
        assert.equal(e.status, 400, name);
        assert.equal(e.param, 'file', name);
        assert.equal(e.code, 'invalid_request_error');
      }
      const form = new FormData();
      form.append('model', 'stt-model');
      const res = await fetch(`${stack.baseURL}/audio/transcriptions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${stack.keys.community}` },
        body: form,
      });
      assert.equal(res.status, 400);
      assert.equal(((await res.json()) as { error: { param: string } }).error.param, 'file');
      const json = await fetch(`${stack.baseURL}/audio/transcriptions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${stack.keys.community}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'stt-model' }),
      });
      assert.equal(json.status, 415);
    });

    it('refuses a file over 25 MB with 400 file', async () => {
      const big = Buffer.alloc(25 * 1024 * 1024 + 1, 7);
      const e = await apiError(
        stack
          .client('community')
          .audio.transcriptions.create({ file: await toFile(big, 'big.wav'), model: 'stt-model' }),
      );
      assert.equal(e.status, 400);
      assert.equal(e.param, 'file');
      assert.match(e.message, /25 MB/);
    });

    it('refuses bad form fields with 400 naming them', async () => {
      const client = stack.client('community');
      const file = await toFile(speechWav, 'a.mp3');
      let e = await apiError(
        client.audio.transcriptions.create({ file, model: 'stt-model', response_format: 'csv' as 'json' }),
      );
      assert.equal(e.param, 'response_format');
      e = await apiError(
        client.audio.transcriptions.create({
          file: await toFile(speechWav, 'a.mp3'),
          model: 'stt-model',
          temperature: 3,
        }),
      );
      assert.equal(e.param, 'temperature');
      e = await apiError(
        client.audio.transcriptions.create({
          file: await toFile(speechWav, 'a.mp3'),
          model: 'no-such-model',
        }),
      );
      assert.equal(e.status, 404);
    });

    it('serves a model on an OpenAI-compatible transcription upstream', async () => {
      const v = TranscriptionSchema.parse(
        await stack.client('community').audio.transcriptions.create({
          file: await toFile(speechWav, 'speech.mp3'),
          model: 'stt-upstream',
          response_format: 'verbose_json',
          timestamp_granularities: ['word'],
          temperature: 0.2,
          prompt: 'foxes',
        }),
      );
      assert.equal(v.language, 'en', 'english -> en');
      assert.equal(v.text, 'part 1 part 2 part 3');
      assert.equal(v.words?.length, 6);
      const sent = upstream.requests.at(-1);
      assert.equal(sent?.fields?.model?.[0], 'whisper-small');
      assert.equal(sent?.fields?.prompt?.[0], 'foxes');
      assert.equal(sent?.fields?.temperature?.[0], '0.2');
      assert.deepEqual(sent?.fields?.['timestamp_granularities[]'], ['segment', 'word']);
      assert.equal(sent?.file?.type, 'audio/wav');
      const e = await apiError(
        stack.client('community').audio.transcriptions.create({
          file: await toFile(speechWav, 'a.mp3'),
          model: 'stt-upstream',
          language: 'xx',
        }),
      );
      assert.equal(e.status, 400);
      assert.equal(e.param, 'language');
    });
  });

  describe('jobs', () => {
    it('shows queue depth and job timings in the service metrics and in GET /admin/queues', async () => {
      assert.ok(api.metricsUrl);
      const text = await (await fetch(api.metricsUrl)).text();
      assert.match(text, /audio_queue_jobs\{queue="audio-transcriptions",state="completed"\} [1-9]/);
      assert.match(text, /audio_queue_jobs\{queue="audio-transcriptions",state="waiting"\} 0/);
      assert.match(text, /audio_transcription_request_seconds_count\{outcome="ok"\} [1-9]/);
      assert.match(
        text,
        /audio_speech_request_seconds_count\{engine="embedded-tts",format="mp3",outcome="ok"\} [1-9]/,
      );
      assert.ok(worker?.metrics);
      const w = await worker.metrics.registry.metrics();
      assert.match(
        w,
        /audio_job_duration_seconds_count\{queue="audio-transcriptions",name="segment",outcome="completed"\} [1-9]/,
      );
      assert.match(w, /audio_job_wait_seconds_count\{queue="audio-transcriptions",name="transcribe"\} [1-9]/);

      const unauth = await fetch(`${stack.url}/admin/queues`);
      assert.equal(unauth.status, 401);
      const res = await fetch(`${stack.url}/admin/queues`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      assert.equal(res.status, 200);
      const body = (await res.json()) as {
        prefix: string;
        data: Array<{
          name: string;
          counts: Record<string, number>;
          workers: number;
          recent: Record<string, { jobs: number; run_ms: { p50: number } | null }>;
        }>;
      };
      assert.equal(body.prefix, PREFIX);
      const q = body.data.find((d) => d.name === Queues.audioTranscriptions);
      assert.ok(q);
      assert.ok((q.counts.completed ?? 0) >= 3);
      assert.equal(q.counts.waiting, 0);
      assert.ok(q.workers >= 1);
      assert.ok((q.recent.transcribe?.jobs ?? 0) >= 1);
      assert.ok((q.recent.segment?.jobs ?? 0) >= 2);
      assert.ok((q.recent.transcribe?.run_ms?.p50 ?? -1) >= 0);
    });

    /** Starts `AUDIO_ROLE=worker` in a child process; resolves when it says it is ready. */
    function spawnWorker(name: string): Promise<ChildProcess> {
      const child = spawn(
        process.execPath,
        ['--conditions=source', '--import', './tools/ts-register.js', 'apps/audio-service/src/main.ts'],
        {
          env: {
            ...appEnv,
            AUDIO_ROLE: 'worker',
            AUDIO_WORKER_NAME: name,
            AUDIO_METRICS_PORT: '',
            LOG_LEVEL: 'info',
          },
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      children.push(child);
      return new Promise((resolve, reject) => {
        let out = '';
        // A deadline, not a wait: the child compiles the service's TypeScript first, slow on a busy machine.
        const timer = setTimeout(() => reject(new Error(`worker ${name} not ready: ${out}`)), 120_000);
        child.stdout?.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('transcription worker ready')) {
            clearTimeout(timer);
            resolve(child);
          }
        });
        child.once('exit', (code) => reject(new Error(`worker ${name} exited (${code}): ${out}`)));
      });
    }

    it('retries the job of a worker killed mid-job (SIGKILL) on another worker', async () => {
      await worker?.stop();
      worker = null;
      const speech = await fliteAudio(
        dir,
        'Workers come and go. When one of them dies in the middle of a job, the lock it held on the job runs out, ' +
          'another worker finds the job stalled, and takes it over from the start. This recording is long enough ' +
          'for the first worker to be stopped while it is still listening.',
        'kill.wav',
        ['-ar', '16000', '-ac', '1'],
      );
      const a = await spawnWorker('worker-A');
      const pending = stack.client('community').audio.transcriptions.create({
        file: await toFile(speech, 'kill.wav'),
        model: 'stt-model',
      });
      pending.catch(() => undefined);
      // Wait until worker A holds the job, then kill it without warning.
      let held = false;
      for (const until = Date.now() + 60_000; !held && Date.now() < until; ) {
        const active = await api.queue.getJobs(['active']);
        held = active.some((j) => j.name === 'transcribe' && j.processedBy === 'worker-A');
        if (!held) await new Promise((r) => setTimeout(r, 25));
      }
      assert.ok(held, 'worker A took the job');
      a.kill('SIGKILL');
      await new Promise((r) => a.once('exit', r));
      await spawnWorker('worker-B');
      const t = await pending;
      assert.match(t.text, /worker/);
      const done = await api.queue.getJobs(['completed'], 0, 20);
      const job = done.find((j) => j.name === 'transcribe' && j.processedBy === 'worker-B');
      assert.ok(job, 'worker B completed the job');
      assert.ok(job.attemptsStarted >= 2 || (job.stalledCounter ?? 0) >= 1, JSON.stringify(job.asJSON()));
    });

    it('answers 524 when a job passes its deadline, and takes the job off the queue', async () => {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
      await Promise.all(
        children.map((c) =>
          c.exitCode === null && c.signalCode === null ? new Promise((r) => c.once('exit', r)) : null,
        ),
      );
      // No worker runs now: the job waits in the queue past the model's 1 s job deadline.
      const t0 = performance.now();
      const e = await apiError(
        stack.client('community').audio.transcriptions.create({
          file: await toFile(randomBytes(1000), 'a.wav'),
          model: 'stt-deadline',
        }),
      );
      const ms = performance.now() - t0;
      assert.equal(e.status, 524);
      assert.equal(e.type, 'timeout_error');
      // At the 1 s job deadline, far from the gateway's 600 s request timeout (slack for a busy machine).
      assert.ok(ms >= 900 && ms < 60_000, `${ms} ms`);
      const counts = await api.queue.getJobCounts('waiting', 'active');
      assert.equal(counts.waiting, 0);
      assert.equal(counts.active, 0);
    });
  });
});
