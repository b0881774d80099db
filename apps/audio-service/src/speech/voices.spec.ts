import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError } from '@infer/contracts';
import {
  DOCUMENTED_VOICES,
  type InstalledVoices,
  listVoices,
  parseEspeakVoices,
  parseFliteVoices,
  resolveVoice,
} from './voices.js';

const ESPEAK = `Pty Language       Age/Gender VoiceName          File                 Other Languages
 5  af              --/M      Afrikaans          gmw/af
 3  es-es           --/F      spanish-mbrola-3   mb/mb-es3            (es 3)
 5  es              --/M      Spanish_(Spain)    roa/es
 5  en-us           --/M      English_(America)  gmw/en-US            (en 3)
`;
const VARIANTS = `Pty Language       Age/Gender VoiceName          File                 Other Languages
 5  variant         --/M      Adam               !v/adam
 5  variant         --/F      f3                 !v/f3
 5  variant         --/M      m3                 !v/m3
`;

const installed: InstalledVoices = {
  flite: parseFliteVoices('Voices available: kal awb_time kal16 awb rms slt \n'),
  espeakLanguages: parseEspeakVoices(ESPEAK, 'languages'),
  espeakVariants: parseEspeakVoices(VARIANTS, 'variants'),
};

describe('voices', () => {
  it('reads what flite and espeak-ng offer (no time-only voice, no MBROLA)', () => {
    assert.deepEqual([...installed.flite].sort(), ['awb', 'kal', 'kal16', 'rms', 'slt']);
    assert.deepEqual([...installed.espeakLanguages].sort(), ['af', 'en-us', 'es']);
    assert.deepEqual([...installed.espeakVariants].sort(), ['adam', 'f3', 'm3']);
  });

  it('maps the documented voices, the OpenAI aliases and engine voices', () => {
    assert.deepEqual(resolveVoice('en-female', installed), { engine: 'flite', name: 'slt' });
    assert.deepEqual(resolveVoice('es-female', installed), { engine: 'espeak', name: 'es+f3' });
    assert.deepEqual(resolveVoice('es-male', installed), { engine: 'espeak', name: 'es+m3' });
    assert.deepEqual(resolveVoice('alloy', installed), { engine: 'flite', name: 'slt' });
    assert.deepEqual(resolveVoice('flite:rms', installed), { engine: 'flite', name: 'rms' });
    assert.deepEqual(resolveVoice('espeak:af', installed), { engine: 'espeak', name: 'af' });
    assert.deepEqual(resolveVoice('espeak:en-us+adam', installed), { engine: 'espeak', name: 'en-us+adam' });
  });

  it('refuses unknown voices with 400 voice', () => {
    for (const v of [
      'nova',
      'flite:awb_time',
      'espeak:xx',
      'espeak:es+zz',
      'espeak:es+f3+m3',
      'es',
      'flite:',
    ]) {
      assert.throws(
        () => resolveVoice(v, installed),
        (e: unknown) => e instanceof ApiError && e.status === 400 && e.param === 'voice',
        v,
      );
    }
  });

  it('is a 500 (operator) when a documented voice lacks its program', () => {
    const none: InstalledVoices = { flite: new Set(), espeakLanguages: new Set(), espeakVariants: new Set() };
    assert.throws(
      () => resolveVoice('en-female', none),
      (e: unknown) => e instanceof ApiError && e.status === 500,
    );
  });

  it('lists the documented voices first, then aliases, flite and espeak voices', () => {
    const ids = listVoices(installed).map((v) => v.id);
    assert.deepEqual(
      ids.slice(0, 3),
      DOCUMENTED_VOICES.map((v) => v.id),
    );
    assert.ok(ids.includes('alloy') && ids.includes('flite:kal16') && ids.includes('espeak:es'));
  });
});
