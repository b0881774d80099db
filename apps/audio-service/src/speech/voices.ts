import { ApiError } from '@infer/contracts';
import { run, ToolMissingError } from '../media/process.js';

/**
 * The voices of the embedded speech engine (flite + espeak-ng) and their public ids.
 *
 *   en-female   English (US) female    flite `slt` (by far the most intelligible voice here)
 *   es-female   Spanish female         espeak-ng `es+f3`
 *   es-male     Spanish male           espeak-ng `es+m3`
 *
 * plus everything the installed engines offer:
 *   flite:<name>                 each flite voice (`flite -lv`: slt, rms, awb, kal, kal16), e.g. flite:rms
 *   espeak:<language>[+<variant>] each espeak-ng language (`espeak-ng --voices`) with an optional
 *                                variant (`espeak-ng --voices=variant`: f1-f5, m1-m8, klatt, whisper ...),
 *                                e.g. espeak:de, espeak:fr-fr+f2, espeak:en-gb+m3
 * and OpenAI voice names as aliases, so that code written for OpenAI works unchanged:
 *   alloy -> flite:slt, echo -> flite:rms, fable -> flite:awb, onyx -> flite:kal16
 */
export interface VoiceSpec {
  engine: 'flite' | 'espeak';
  /** The engine's own voice name: `slt`, or `es+f3`. */
  name: string;
}

export interface VoiceInfo extends VoiceSpec {
  id: string;
  language: string;
  gender: 'female' | 'male' | null;
  description: string;
}

export const DOCUMENTED_VOICES: readonly VoiceInfo[] = [
  {
    id: 'en-female',
    engine: 'flite',
    name: 'slt',
    language: 'en',
    gender: 'female',
    description: 'English (US), female',
  },
  {
    id: 'es-female',
    engine: 'espeak',
    name: 'es+f3',
    language: 'es',
    gender: 'female',
    description: 'Spanish, female',
  },
  {
    id: 'es-male',
    engine: 'espeak',
    name: 'es+m3',
    language: 'es',
    gender: 'male',
    description: 'Spanish, male',
  },
];

export const OPENAI_ALIASES: Readonly<Record<string, string>> = {
  alloy: 'flite:slt',
  echo: 'flite:rms',
  fable: 'flite:awb',
  onyx: 'flite:kal16',
};

const FLITE_INFO: Readonly<
  Record<string, { language: string; gender: 'female' | 'male'; description: string }>
> = {
  slt: { language: 'en', gender: 'female', description: 'English (US), female' },
  rms: { language: 'en', gender: 'male', description: 'English (US), male' },
  awb: { language: 'en', gender: 'male', description: 'English (Scottish), male' },
  kal: { language: 'en', gender: 'male', description: 'English (US), male, 8 kHz diphone' },
  kal16: { language: 'en', gender: 'male', description: 'English (US), male, 16 kHz diphone' },
};

/** What the installed programs offer, discovered once. */
export interface InstalledVoices {
  flite: Set<string>;
  espeakLanguages: Set<string>;
  espeakVariants: Set<string>;
}

/** Parses `flite -lv`: "Voices available: kal awb_time kal16 awb rms slt". Time-only voices are left out. */
export function parseFliteVoices(out: string): Set<string> {
  const m = /Voices available:\s*(.*)/.exec(out);
  const names = (m?.[1] ?? '').split(/\s+/).filter((v) => v && !v.endsWith('_time'));
  return new Set(names);
}

/**
 * Parses `espeak-ng --voices[=variant]`: a header line, then "Pty Language Age/Gender VoiceName File
 * Other". Returns the languages (column 2), or the variant names (the file column after `!v/`).
 * MBROLA voices (file `mb/...`) need extra packages and are left out.
 */
export function parseEspeakVoices(out: string, what: 'languages' | 'variants'): Set<string> {
  const set = new Set<string>();
  for (const line of out.split('\n').slice(1)) {
    const cols = line.trim().split(/\s+/);
    if (cols.length < 5) continue;
    const file = cols[4] ?? '';
    if (what === 'languages') {
      if (!file.startsWith('mb/') && cols[1]) set.add(cols[1].toLowerCase());
    } else if (file.startsWith('!v/')) {
      set.add(file.slice(3));
    }
  }
  return set;
}

export async function discoverVoices(tools: { flite: string; espeak: string }): Promise<InstalledVoices> {
  const [flite, langs, variants] = await Promise.all([
    run(tools.flite, ['-lv']).catch(orMissing),
    run(tools.espeak, ['--voices']).catch(orMissing),
    run(tools.espeak, ['--voices=variant']).catch(orMissing),
  ]);
  return {
    flite: flite ? parseFliteVoices(flite.stdout.toString('utf8')) : new Set(),
    espeakLanguages: langs ? parseEspeakVoices(langs.stdout.toString('utf8'), 'languages') : new Set(),
    espeakVariants: variants ? parseEspeakVoices(variants.stdout.toString('utf8'), 'variants') : new Set(),
  };
}

function orMissing(e: unknown): null {
  if (e instanceof ToolMissingError) return null;
  throw e;
}

/**
 * Public voice id -> engine voice, checked against what is installed. An unknown id is the client's
 * 400 (`param: voice`); a documented voice whose program is missing is the operator's 500.
 */
export function resolveVoice(id: string, installed: InstalledVoices): VoiceSpec {
  const documented = DOCUMENTED_VOICES.find((v) => v.id === id);
  const target = documented ? `${documented.engine}:${documented.name}` : (OPENAI_ALIASES[id] ?? id);
  const m = /^(flite|espeak):(.+)$/.exec(target);
  if (m) {
    const engine = m[1] as 'flite' | 'espeak';
    const name = m[2] as string;
    const known = engine === 'flite' ? installed.flite.has(name) : espeakVoiceKnown(name, installed);
    if (known) return { engine, name };
    if (documented || OPENAI_ALIASES[id]) {
      throw ApiError.internal(
        `The voice '${id}' is not available: ${engine === 'flite' ? 'flite' : 'espeak-ng'} is not installed on the audio service.`,
      );
    }
  }
  throw ApiError.invalid(
    `Unknown voice '${id}'. Use en-female (English, female), es-female (Spanish, female), es-male (Spanish, male), an OpenAI name (alloy, echo, fable, onyx), flite:<voice> (${[...installed.flite].join(', ') || 'none installed'}) or espeak:<language>[+<variant>], e.g. espeak:de or espeak:fr-fr+f2.`,
    'voice',
  );
}

function espeakVoiceKnown(name: string, installed: InstalledVoices): boolean {
  const [lang, variant, ...rest] = name.split('+');
  if (!lang || rest.length) return false;
  if (!installed.espeakLanguages.has(lang.toLowerCase())) return false;
  return variant === undefined || installed.espeakVariants.has(variant);
}

/** Every public voice id the installed engines offer (documented ones and aliases first). */
export function listVoices(installed: InstalledVoices): VoiceInfo[] {
  const out: VoiceInfo[] = [];
  for (const v of DOCUMENTED_VOICES) {
    if (v.engine === 'flite' ? installed.flite.has(v.name) : espeakVoiceKnown(v.name, installed)) out.push(v);
  }
  for (const [alias, target] of Object.entries(OPENAI_ALIASES)) {
    const name = target.slice('flite:'.length);
    const info = FLITE_INFO[name];
    if (installed.flite.has(name)) {
      out.push({
        id: alias,
        engine: 'flite',
        name,
        language: info?.language ?? 'en',
        gender: info?.gender ?? null,
        description: `alias of ${target}`,
      });
    }
  }
  for (const name of installed.flite) {
    const info = FLITE_INFO[name];
    out.push({
      id: `flite:${name}`,
      engine: 'flite',
      name,
      language: info?.language ?? 'en',
      gender: info?.gender ?? null,
      description: info?.description ?? 'flite voice',
    });
  }
  for (const lang of [...installed.espeakLanguages].sort()) {
    out.push({
      id: `espeak:${lang}`,
      engine: 'espeak',
      name: lang,
      language: lang.split('-')[0] ?? lang,
      gender: null,
      description: `espeak-ng ${lang} (add +<variant> for another voice)`,
    });
  }
  return out;
}
