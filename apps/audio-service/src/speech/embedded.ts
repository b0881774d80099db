import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ApiError } from '@infer/contracts';
import { parseEngineSettings } from '@infer/runtime';
import { z } from 'zod';
import type { Tools } from '../config.js';
import type { EngineFactory } from '../engines.js';
import { encodeSpeech } from '../media/ffmpeg.js';
import { run, ToolMissingError, withTempDir } from '../media/process.js';
import type { SpeechEngine, SpeechInput } from './engine.js';
import { discoverVoices, type InstalledVoices, resolveVoice, type VoiceSpec } from './voices.js';

/**
 * `embedded-tts`: speech made on the service's own machine by Debian's flite (voice `slt` and the other
 * flite voices) and espeak-ng (every espeak-ng language and variant), encoded by ffmpeg. No settings.
 */
export const EmbeddedTtsSettingsSchema = z.object({ type: z.literal('embedded-tts') });

/** espeak-ng's default rate (words per minute) and the range it accepts. */
const ESPEAK_RATE = 175;
const ESPEAK_MIN_RATE = 80;
const ESPEAK_MAX_RATE = 450;

/**
 * How `speed` is honoured: flite stretches its durations (duration_stretch = 1/speed, any speed);
 * espeak-ng speaks at 175 x speed words per minute within 80..450, and ffmpeg's atempo makes up the
 * rest (e.g. 0.25 = 80 wpm then atempo 0.547). Pitch is kept either way.
 */
export function speedPlan(engine: VoiceSpec['engine'], speed: number): { args: string[]; tempo: number } {
  if (engine === 'flite') return { args: ['--setf', `duration_stretch=${(1 / speed).toFixed(4)}`], tempo: 1 };
  const rate = Math.min(ESPEAK_MAX_RATE, Math.max(ESPEAK_MIN_RATE, Math.round(ESPEAK_RATE * speed)));
  return { args: ['-s', String(rate)], tempo: (speed * ESPEAK_RATE) / rate };
}

/** Text as the synthesizers get it: control characters (but newlines) become spaces. */
export function speakableText(input: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping control characters is the point
  return input.replace(/[\u0000-\u0009\u000b-\u001f\u007f]/g, ' ');
}

class EmbeddedSpeechEngine implements SpeechEngine {
  readonly type = 'embedded-tts';
  private installed: Promise<InstalledVoices> | null = null;

  constructor(private readonly tools: Tools) {}

  private voices(): Promise<InstalledVoices> {
    this.installed ??= discoverVoices(this.tools).catch((e) => {
      this.installed = null;
      throw e;
    });
    return this.installed;
  }

  async checkVoice(voice: string): Promise<void> {
    resolveVoice(voice, await this.voices());
  }

  async synthesize(req: SpeechInput, signal: AbortSignal): Promise<Buffer> {
    const spec = resolveVoice(req.voice, await this.voices());
    return withTempDir(this.tools.tmpDir, async (dir) => {
      const text = join(dir, 'input.txt');
      const wav = join(dir, 'voice.wav');
      await writeFile(text, speakableText(req.input), 'utf8');
      const plan = speedPlan(spec.engine, req.speed);
      const [cmd, args] =
        spec.engine === 'flite'
          ? [this.tools.flite, ['-voice', spec.name, '-f', text, '-o', wav, ...plan.args]]
          : [this.tools.espeak, ['-v', spec.name, '-b', '1', ...plan.args, '-f', text, '-w', wav]];
      try {
        const r = await run(cmd, args, { signal });
        if (r.code !== 0) throw new Error(`${cmd} exited with ${r.code}: ${r.stderr.trim().slice(0, 300)}`);
      } catch (e) {
        if (e instanceof ToolMissingError) {
          throw ApiError.internal(`The speech engine is not installed on the audio service (${e.tool}).`);
        }
        throw e;
      }
      return encodeSpeech(this.tools.ffmpeg, wav, dir, req.format, { tempo: plan.tempo, signal });
    });
  }
}

export function embeddedSpeechFactory(tools: Tools): EngineFactory<SpeechEngine> {
  // One engine (and one voice discovery) per process, whatever the number of models using it.
  let shared: EmbeddedSpeechEngine | null = null;
  return {
    type: 'embedded-tts',
    create(settings, { model }) {
      parseEngineSettings(EmbeddedTtsSettingsSchema, settings, model);
      shared ??= new EmbeddedSpeechEngine(tools);
      return shared;
    },
  };
}
