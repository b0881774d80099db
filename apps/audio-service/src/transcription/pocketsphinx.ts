import { readFile } from 'node:fs/promises';
import { deflateSync } from 'node:zlib';
import { ApiError } from '@infer/contracts';
import { parseEngineSettings } from '@infer/runtime';
import { z } from 'zod';
import type { Tools } from '../config.js';
import type { EngineFactory } from '../engines.js';
import { run, ToolMissingError } from '../media/process.js';
import type {
  TranscribeInput,
  Transcript,
  TranscriptionEngine,
  TranscriptSegment,
  TranscriptWord,
} from './engine.js';

/**
 * `pocketsphinx`: CMU PocketSphinx from Debian (`pocketsphinx` + `pocketsphinx-en-us`), spawned as
 *   pocketsphinx_continuous -infile X.wav -time yes -logfn /dev/null [-hmm H -lm L -dict D]
 * on 16 kHz mono. It prints each utterance as a text line and then one line per word:
 * `word start end posterior` (seconds, 10 ms steps), utterances bounded by `<s>` and `</s>`.
 * Utterances become segments; words become words.
 *
 * The Debian model is US English only: `language` is 'en' (or what `language` says for another
 * acoustic model). The engine does not sample, so `temperature` is reported but changes nothing, and
 * it takes no `prompt`.
 */
export const PocketsphinxSettingsSchema = z.object({
  type: z.literal('pocketsphinx'),
  /** ISO-639-1 code of the model's language (Debian's pocketsphinx-en-us: en). */
  language: z
    .string()
    .regex(/^[a-z]{2}$/)
    .default('en'),
  /** Acoustic model folder, language model and dictionary; default: the ones pocketsphinx was built with. */
  hmm: z.string().optional(),
  lm: z.string().optional(),
  dict: z.string().optional(),
  /** Longest a transcription job of this model may take (524 after it); default AUDIO_JOB_TIMEOUT_MS. */
  job_timeout_ms: z.number().int().min(100).optional(),
});
export type PocketsphinxSettings = z.infer<typeof PocketsphinxSettingsSchema>;

/** Debian's dictionary, read for token ids when `dict` is not set. */
const DEBIAN_DICT = '/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict';
const WORD_LINE = /^(\S+)\s+(-?\d+(?:\.\d+)?)\s+(-?\d+(?:\.\d+)?)\s+(-?\d+(?:\.\d+)?)\s*$/;

interface Utterance {
  start: number;
  end: number;
  words: TranscriptWord[];
}

/** A filler or marker of the decoder, not a word: <s> </s> <sil> [NOISE] ++BREATH++ ... */
function isFiller(w: string): boolean {
  return /^(<.*>|\[.*\]|\+\+.*\+\+)$/.test(w);
}

/** `hello(2)` (an alternate pronunciation) -> `hello`. */
export function baseWord(w: string): string {
  return w.replace(/\(\d+\)$/, '');
}

/** Parses pocketsphinx_continuous `-time yes` output into utterances of real words. */
export function parsePocketsphinxOutput(out: string): Utterance[] {
  const utts: Utterance[] = [];
  let cur: Utterance | null = null;
  for (const raw of out.split('\n')) {
    const m = WORD_LINE.exec(raw.trim());
    if (!m) continue; // the hypothesis text line of an utterance (rebuilt from the words) or noise
    const token = m[1] as string;
    const start = Number(m[2]);
    const end = Number(m[3]);
    const prob = Math.min(1, Math.max(0, Number(m[4])));
    if (token === '<s>') {
      cur = { start, end, words: [] };
      utts.push(cur);
      continue;
    }
    if (!cur) {
      cur = { start, end, words: [] };
      utts.push(cur);
    }
    cur.end = Math.max(cur.end, end);
    if (token === '</s>') {
      cur = null;
      continue;
    }
    if (isFiller(token)) continue;
    cur.words.push({ word: baseWord(token), start, end, probability: prob });
  }
  return utts.filter((u) => u.words.length > 0);
}

/** Whisper's compression ratio: UTF-8 bytes of the text over its zlib-compressed bytes. */
export function compressionRatio(text: string): number {
  const raw = Buffer.from(text, 'utf8');
  if (raw.length === 0) return 0;
  return raw.length / deflateSync(raw).length;
}

export function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

/**
 * Utterances -> segments. `avg_logprob` is the mean log posterior of the words; `no_speech_prob` the
 * share of the utterance that no word covers (pauses, noise); tokens are the words' line numbers in
 * the recognizer's dictionary (its vocabulary ids), or none when the dictionary cannot be read.
 */
export function toSegments(
  utts: Utterance[],
  vocab: Map<string, number> | null,
  temperature: number,
  duration: number,
): TranscriptSegment[] {
  return utts.map((u) => {
    const words = u.words.map((w) => ({
      ...w,
      start: round3(Math.min(w.start, duration)),
      end: round3(Math.min(w.end, duration)),
    }));
    const text = words.map((w) => w.word).join(' ');
    const spoken = u.words.reduce((s, w) => s + Math.max(0, w.end - w.start), 0);
    const span = Math.max(u.end - u.start, spoken, 1e-3);
    const logp = u.words.reduce((s, w) => s + Math.log(Math.max(w.probability, 1e-6)), 0) / u.words.length;
    return {
      start: words[0]?.start ?? 0,
      end: words.at(-1)?.end ?? 0,
      text,
      words,
      tokens: vocab
        ? words.map((w) => vocab.get(w.word.toLowerCase())).filter((t): t is number => t !== undefined)
        : [],
      temperature,
      avg_logprob: round3(logp),
      compression_ratio: round3(compressionRatio(text)),
      no_speech_prob: round3(Math.min(1, Math.max(0, 1 - spoken / span))),
    };
  });
}

/** word -> line number (0-based) of its first entry in a pocketsphinx dictionary. */
export function parseDictionary(text: string): Map<string, number> {
  const vocab = new Map<string, number>();
  let line = 0;
  for (const l of text.split('\n')) {
    const w = l.split(/\s/, 1)[0];
    if (w) {
      const base = baseWord(w).toLowerCase();
      if (!vocab.has(base)) vocab.set(base, line);
    }
    line++;
  }
  return vocab;
}

class PocketsphinxEngine implements TranscriptionEngine {
  readonly type = 'pocketsphinx';
  readonly languages: readonly string[];
  readonly jobTimeoutMs: number | undefined;
  private vocab: Promise<Map<string, number> | null> | null = null;

  constructor(
    private readonly s: PocketsphinxSettings,
    private readonly tools: Tools,
  ) {
    this.languages = [s.language];
    this.jobTimeoutMs = s.job_timeout_ms;
  }

  private vocabulary(): Promise<Map<string, number> | null> {
    this.vocab ??= readFile(this.s.dict ?? DEBIAN_DICT, 'utf8')
      .then(parseDictionary)
      .catch(() => null);
    return this.vocab;
  }

  async transcribe(input: TranscribeInput, signal: AbortSignal): Promise<Transcript> {
    const args = ['-infile', input.wavPath, '-time', 'yes', '-logfn', '/dev/null'];
    if (this.s.hmm) args.push('-hmm', this.s.hmm);
    if (this.s.lm) args.push('-lm', this.s.lm);
    if (this.s.dict) args.push('-dict', this.s.dict);
    let out: string;
    try {
      const r = await run(this.tools.pocketsphinx, args, { signal });
      if (r.code !== 0) throw new Error(`pocketsphinx exited with ${r.code}: ${r.stderr.trim().slice(-300)}`);
      out = r.stdout.toString('utf8');
    } catch (e) {
      if (e instanceof ToolMissingError) {
        throw ApiError.internal(
          'The transcription engine is not installed on the audio service (pocketsphinx).',
        );
      }
      throw e;
    }
    const utts = parsePocketsphinxOutput(out);
    return {
      language: this.s.language,
      duration: input.duration,
      segments: toSegments(utts, await this.vocabulary(), input.temperature ?? 0, input.duration),
    };
  }
}

export function pocketsphinxFactory(tools: Tools): EngineFactory<TranscriptionEngine> {
  return {
    type: 'pocketsphinx',
    create(settings, { model }) {
      return new PocketsphinxEngine(parseEngineSettings(PocketsphinxSettingsSchema, settings, model), tools);
    },
  };
}
