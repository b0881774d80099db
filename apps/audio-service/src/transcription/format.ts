import type {
  TimestampGranularity,
  Transcription,
  TranscriptionFormat,
  TranscriptionJson,
  TranscriptionSegment,
  TranscriptionWord,
} from '@infer/contracts';
import type { Transcript, TranscriptSegment } from './engine.js';
import { round3 } from './pocketsphinx.js';

/** One transcribed piece of a (possibly split) file: where it starts in the file and what it holds. */
export interface PieceResult {
  index: number;
  /** Seconds from the start of the file. */
  offset: number;
  transcript: Transcript;
}

/** A whole file's transcript after merging: segments carry `seek`, the start of their piece. */
export interface MergedTranscript {
  language: string;
  duration: number;
  segments: Array<TranscriptSegment & { seek: number }>;
}

/**
 * Merges the pieces of a split file in order, moving every timestamp by its piece's offset, and makes
 * the timestamps monotone and inside [0, duration]: a segment or word never starts before the previous
 * one ended, never ends before it starts. The language is the requested one, else the one most pieces
 * report. `seek` is the piece's offset in 10 ms frames (as Whisper counts it).
 */
export function mergePieces(pieces: PieceResult[], duration: number, requested?: string): MergedTranscript {
  const sorted = [...pieces].sort((a, b) => a.index - b.index);
  const segments: MergedTranscript['segments'] = [];
  let segCursor = 0;
  let wordCursor = 0;
  const clamp = (t: number) => round3(Math.min(Math.max(0, t), duration));
  for (const p of sorted) {
    for (const s of p.transcript.segments) {
      const words = [];
      for (const w of s.words) {
        const start = Math.max(clamp(w.start + p.offset), wordCursor);
        const end = Math.max(clamp(w.end + p.offset), start);
        wordCursor = end;
        words.push({ ...w, start, end });
      }
      const start = Math.max(clamp(s.start + p.offset), segCursor);
      const end = Math.max(clamp(s.end + p.offset), start, words.at(-1)?.end ?? 0);
      segCursor = end;
      segments.push({
        ...s,
        start,
        end: Math.min(end, round3(duration)),
        words,
        seek: Math.round(p.offset * 100),
      });
    }
  }
  return { language: requested ?? majorityLanguage(sorted) ?? 'en', duration: round3(duration), segments };
}

function majorityLanguage(pieces: PieceResult[]): string | null {
  const votes = new Map<string, number>();
  for (const p of pieces) {
    const weight = p.transcript.segments.reduce((n, s) => n + s.text.length, 0) || 1;
    votes.set(p.transcript.language, (votes.get(p.transcript.language) ?? 0) + weight);
  }
  let best: string | null = null;
  let most = -1;
  for (const [l, n] of votes) {
    if (n > most) {
      best = l;
      most = n;
    }
  }
  return best;
}

export function fullText(t: MergedTranscript): string {
  return t.segments
    .map((s) => s.text.trim())
    .filter(Boolean)
    .join(' ');
}

/**
 * The response body of each `response_format`:
 * - json: {text, language, task}
 * - verbose_json: {text, language, task, duration, segments, words} with `words` only when
 *   `timestamp_granularities` holds `word`, otherwise null
 * - text, srt, vtt: the content wrapped in JSON as the spec says: {text: <plain | SRT | WebVTT>, language, task}
 */
export function toResponse(
  t: MergedTranscript,
  format: TranscriptionFormat,
  granularities: readonly TimestampGranularity[],
): Transcription | TranscriptionJson {
  const base = { text: fullText(t), language: t.language, task: 'transcribe' as const };
  switch (format) {
    case 'json':
    case 'text':
      return base;
    case 'srt':
      return { ...base, text: toSrt(t) };
    case 'vtt':
      return { ...base, text: toVtt(t) };
    case 'verbose_json': {
      const segments: TranscriptionSegment[] = t.segments.map((s, id) => ({
        id,
        seek: s.seek,
        start: s.start,
        end: s.end,
        text: s.text,
        tokens: s.tokens,
        temperature: s.temperature,
        avg_logprob: s.avg_logprob,
        compression_ratio: s.compression_ratio,
        no_speech_prob: s.no_speech_prob,
      }));
      const words: TranscriptionWord[] | null = granularities.includes('word')
        ? t.segments.flatMap((s) =>
            s.words.map((w) => ({ word: w.word, start: w.start, end: w.end, probability: w.probability })),
          )
        : null;
      return { ...base, duration: t.duration, segments, words };
    }
  }
}

function clock(seconds: number, sep: ',' | '.'): string {
  const ms = Math.max(0, Math.round(seconds * 1000));
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = Math.floor((ms % 60_000) / 1000);
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${pad(h)}:${pad(m)}:${pad(s)}${sep}${pad(ms % 1000, 3)}`;
}

export function toSrt(t: MergedTranscript): string {
  return t.segments
    .filter((s) => s.text.trim())
    .map((s, i) => `${i + 1}\n${clock(s.start, ',')} --> ${clock(s.end, ',')}\n${s.text.trim()}\n`)
    .join('\n');
}

export function toVtt(t: MergedTranscript): string {
  const cues = t.segments
    .filter((s) => s.text.trim())
    .map((s) => `${clock(s.start, '.')} --> ${clock(s.end, '.')}\n${s.text.trim()}\n`);
  return `WEBVTT\n\n${cues.join('\n')}`;
}
