import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ApiError, type SpeechFormat } from '@infer/contracts';
import { run } from './process.js';
import { type Pcm16, parseWav } from './wav.js';

/** Sample rate of every speech result (as OpenAI's: `pcm` is 24 kHz 16-bit mono little-endian). */
export const SPEECH_SAMPLE_RATE = 24_000;
/** What the recognizers get: 16 kHz mono 16-bit PCM. */
export const STT_SAMPLE_RATE = 16_000;

const QUIET = ['-nostdin', '-hide_banner', '-loglevel', 'error', '-y'];

/** ffmpeg output options per response_format: codec and container. */
const ENCODE: Readonly<Record<SpeechFormat, readonly string[]>> = {
  mp3: ['-c:a', 'libmp3lame', '-b:a', '64k', '-f', 'mp3'],
  wav: ['-c:a', 'pcm_s16le', '-f', 'wav'],
  flac: ['-c:a', 'flac', '-f', 'flac'],
  aac: ['-c:a', 'aac', '-b:a', '64k', '-f', 'adts'],
  pcm: ['-c:a', 'pcm_s16le', '-f', 's16le'],
  opus: ['-c:a', 'libopus', '-b:a', '32k', '-f', 'ogg'],
};

/**
 * `atempo` filters for a tempo factor (each filter takes 0.5 to 100, so slower factors are chained).
 * 1 gives no filter.
 */
export function atempoChain(factor: number): string | null {
  if (!Number.isFinite(factor) || factor <= 0) throw new RangeError('tempo must be positive');
  if (Math.abs(factor - 1) < 1e-3) return null;
  const parts: string[] = [];
  let f = factor;
  while (f < 0.5) {
    parts.push('atempo=0.5');
    f /= 0.5;
  }
  while (f > 100) {
    parts.push('atempo=100');
    f /= 100;
  }
  parts.push(`atempo=${f.toFixed(6)}`);
  return parts.join(',');
}

/**
 * Encodes a WAV file into `format` (24 kHz mono). Written to a file, not a pipe, so that WAV and FLAC
 * get finished headers (sizes, seek table).
 */
export async function encodeSpeech(
  ffmpeg: string,
  wavPath: string,
  dir: string,
  format: SpeechFormat,
  opts: { tempo?: number; signal?: AbortSignal } = {},
): Promise<Buffer> {
  const out = join(dir, `speech.${format}`);
  const filter = atempoChain(opts.tempo ?? 1);
  const args = [
    ...QUIET,
    '-i',
    wavPath,
    '-vn',
    '-map_metadata',
    '-1',
    ...(filter ? ['-filter:a', filter] : []),
    '-ac',
    '1',
    '-ar',
    String(SPEECH_SAMPLE_RATE),
    ...ENCODE[format],
    out,
  ];
  const r = await run(ffmpeg, args, { signal: opts.signal });
  if (r.code !== 0) throw new Error(`ffmpeg could not encode ${format}: ${lastLine(r.stderr)}`);
  return readFile(out);
}

/**
 * Decodes any audio ffmpeg reads (first audio stream) to 16 kHz mono 16-bit PCM in a WAV file in
 * `dir` (`path`), at most `maxSeconds + 1` of it. Input that is not audio, corrupt or empty is the client's fault: a 400
 * naming `file`.
 */
export async function decodeForStt(
  ffmpeg: string,
  inputPath: string,
  dir: string,
  opts: { maxSeconds: number; signal?: AbortSignal },
): Promise<{ pcm: Pcm16; path: string }> {
  const out = join(dir, 'decoded.wav');
  const args = [
    ...QUIET,
    '-i',
    inputPath,
    '-map',
    '0:a:0',
    '-vn',
    '-sn',
    '-dn',
    '-map_metadata',
    '-1',
    '-t',
    String(opts.maxSeconds + 1),
    '-ac',
    '1',
    '-ar',
    String(STT_SAMPLE_RATE),
    '-c:a',
    'pcm_s16le',
    '-f',
    'wav',
    out,
  ];
  const r = await run(ffmpeg, args, { signal: opts.signal });
  if (r.code !== 0) {
    const noAudio = /matches no streams|does not contain any stream|Output file .* does not contain/i.test(
      r.stderr,
    );
    throw ApiError.invalid(
      noAudio
        ? 'The file contains no audio stream.'
        : 'The file could not be decoded as audio: it is corrupt or not in an audio format we can read (e.g. mp3, wav, flac, ogg/opus, m4a/aac, webm).',
      'file',
    );
  }
  let pcm: Pcm16;
  try {
    pcm = parseWav(await readFile(out));
  } catch {
    throw ApiError.invalid('The file could not be decoded as audio.', 'file');
  }
  if (pcm.data.length === 0) throw ApiError.invalid('The file contains no audio samples.', 'file');
  if (pcm.data.length / 2 / STT_SAMPLE_RATE > opts.maxSeconds) {
    throw ApiError.invalid(
      `The audio is longer than ${opts.maxSeconds} seconds, the longest this service accepts.`,
      'file',
    );
  }
  return { pcm, path: out };
}

function lastLine(s: string): string {
  return s.trim().split('\n').pop()?.slice(0, 300) ?? '';
}
