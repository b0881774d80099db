/**
 * Transcription of long speech with pauses: fixed-length cuts vs Silero VAD pieces (numbers, not
 * pass/fail).
 *
 *   node --conditions=source --import ./tools/ts-register.js bench/vad.ts [--limit 20] [--rounds 2]
 *
 * Audio: passages spoken by flite (`slt`) with pauses of 0.4 to 3 s between them (deterministic
 * choice), faint noise in the pauses. Each plan's pieces are transcribed by the pocketsphinx engine
 * (the default stt-model) and merged as the worker does (transcription/format.ts mergePieces). The
 * piece limit is `--limit` seconds (the service uses AUDIO_SEGMENT_SECONDS, 120; a small limit makes
 * the short benchmark audio need cuts). Printed per plan:
 *   WER               word error rate of the merged text against the passages' text
 *   cuts inside a passage   piece boundaries more than 0.25 s inside a passage (between its words)
 *   cuts on sound     piece boundaries where the 40 ms around are louder than -40 dBFS (a cut word)
 *   boundary error    mean distance (s) from each output segment's start and end to the nearest
 *                     passage edge (flite's own leading/trailing silence counts as part of a passage)
 *   audio sent        seconds of audio given to the recogniser, of the total
 *   time              planning (VAD) + recognition, wall clock on this machine
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  encodeWav,
  mergePieces,
  planSegments,
  planSpeechChunks,
  pocketsphinxFactory,
  type Segment,
  slice,
  spokenWithPauses,
} from '@infer/audio-service/public';
import type { CatalogEntry } from '@infer/contracts';
import { createLogger } from '@infer/telemetry';

const { values: args } = parseArgs({ options: { limit: { type: 'string' }, rounds: { type: 'string' } } });
const limit = Number(args.limit ?? 20);
const rounds = Number(args.rounds ?? 1);

const TEXTS = [
  'The quick brown fox jumps over the lazy dog.',
  'Please call Stella and ask her to bring these things from the store.',
  'Six spoons of fresh snow peas and five thick slabs of blue cheese.',
  'We also need a small plastic snake and a big toy frog for the kids.',
  'She can scoop these things into three red bags.',
  'We will go meet her on Wednesday at the train station.',
  'The birch canoe slid on the smooth planks.',
  'Glue the sheet to the dark blue background.',
  'It is easy to tell the depth of a well.',
  'These days a chicken leg is a rare dish.',
  'Rice is often served in round bowls.',
  'The juice of lemons makes fine punch.',
  'The box was thrown beside the parked truck.',
  'The hogs were fed chopped corn and garbage.',
  'Four hours of steady work faced us.',
  'A large size in stockings is hard to sell.',
];
const PAUSES = TEXTS.map((_, i) => [0.4, 1.2, 3, 0.7, 2, 0.5, 1.6, 2.6][i % 8] as number);

function wer(reference: string, hypothesis: string): number {
  const norm = (s: string) =>
    s
      .toLowerCase()
      .replace(/[^a-z0-9' ]+/g, ' ')
      .split(/\s+/)
      .filter(Boolean);
  const r = norm(reference);
  const h = norm(hypothesis);
  let prev = Array.from({ length: h.length + 1 }, (_, j) => j);
  for (let i = 1; i <= r.length; i++) {
    const row = [i];
    for (let j = 1; j <= h.length; j++)
      row[j] = Math.min(
        (prev[j] as number) + 1,
        (row[j - 1] as number) + 1,
        (prev[j - 1] as number) + (r[i - 1] === h[j - 1] ? 0 : 1),
      );
    prev = row;
  }
  return (prev[h.length] as number) / r.length;
}

const { pcm, passages } = await spokenWithPauses(TEXTS, PAUSES, { tail: 1.5 });
const total = pcm.data.length / 2 / pcm.sampleRate;
/** Level (dBFS) of the 40 ms around sample `at`. */
function rmsDb(at: number): number {
  const half = Math.floor(pcm.sampleRate / 50);
  let sq = 0;
  let n = 0;
  for (let i = Math.max(0, at - half); i < Math.min(pcm.data.length / 2, at + half); i++, n++)
    sq += (pcm.data.readInt16LE(i * 2) / 32768) ** 2;
  return 10 * Math.log10(sq / Math.max(1, n) + 1e-12);
}
const dir = await mkdtemp(join(tmpdir(), 'bench-vad-'));
const model = { id: 'stt', engine: { type: 'pocketsphinx' } } as CatalogEntry;
const engine = pocketsphinxFactory({
  ffmpeg: 'ffmpeg',
  flite: 'flite',
  espeak: 'espeak-ng',
  pocketsphinx: 'pocketsphinx_continuous',
  tmpDir: dir,
}).create(model.engine as never, { model, log: createLogger('bench', 'silent') });
const signal = new AbortController().signal;

async function run(plan: (signal: AbortSignal) => Promise<Segment[]>) {
  const t0 = performance.now();
  const pieces = await plan(signal);
  const results = await Promise.all(
    pieces.map(async (s) => {
      const wav = encodeWav(slice(pcm, s.from, s.to));
      const path = join(dir, `piece-${s.index}-${Math.random().toString(36).slice(2)}.wav`);
      await writeFile(path, wav);
      const transcript = await engine.transcribe(
        { wavPath: path, wav, duration: (s.to - s.from) / pcm.sampleRate },
        signal,
      );
      return { index: s.index, offset: s.from / pcm.sampleRate, transcript };
    }),
  );
  const merged = mergePieces(results, total, 'en');
  const ms = performance.now() - t0;
  const text = merged.segments.map((s) => s.text).join(' ');
  const edges = passages.flatMap((p) => [p.start, p.end]);
  const nearest = (t: number) => Math.min(...edges.map((e) => Math.abs(e - t)));
  const bounds = merged.segments.flatMap((s) => [s.start, s.end]);
  const boundaries = pieces.flatMap((s) => [s.from, s.to]);
  const cuts = boundaries.filter((b) =>
    passages.some((p) => b / pcm.sampleRate > p.start + 0.25 && b / pcm.sampleRate < p.end - 0.25),
  ).length;
  const onSound = boundaries.filter((b) => rmsDb(b) > -40).length;
  return {
    wer: wer(TEXTS.join(' '), text),
    cuts,
    onSound,
    boundary: bounds.reduce((a, b) => a + nearest(b), 0) / Math.max(1, bounds.length),
    segments: merged.segments.length,
    pieces: pieces.length,
    sent: pieces.reduce((a, s) => a + (s.to - s.from) / pcm.sampleRate, 0),
    ms,
  };
}

try {
  console.log(
    `\n${TEXTS.length} flite passages, pauses 0.4-3 s, ${total.toFixed(1)} s of audio, piece limit ${limit} s\n`,
  );
  console.log(
    '| plan | pieces | segments | WER | cuts inside a passage | cuts on sound (> -40 dBFS) | boundary error | audio sent | time |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  for (let r = 0; r < rounds; r++) {
    for (const [name, plan] of [
      ['fixed (before)', async () => planSegments(pcm, limit)],
      [
        'Silero VAD (after)',
        async (s: AbortSignal) => (await planSpeechChunks(pcm, limit, { signal: s })).chunks,
      ],
    ] as const) {
      const x = await run(plan);
      console.log(
        `| ${name} | ${x.pieces} | ${x.segments} | ${(100 * x.wer).toFixed(1)}% | ${x.cuts} | ${x.onSound} | ${x.boundary.toFixed(2)} s | ${x.sent.toFixed(1)} of ${total.toFixed(1)} s | ${x.ms.toFixed(0)} ms |`,
      );
    }
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
