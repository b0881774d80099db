import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError } from '@infer/runtime';
import { loadAudioConfig } from './config.js';

describe('audio-service config', () => {
  it('has working defaults: role all, 2-minute segments, no metrics port', () => {
    const c = loadAudioConfig({});
    assert.equal(c.AUDIO_ROLE, 'all');
    assert.equal(c.AUDIO_SEGMENT_SECONDS, 120);
    assert.equal(c.AUDIO_METRICS_PORT, undefined);
    assert.equal(loadAudioConfig({ AUDIO_METRICS_PORT: '' }).AUDIO_METRICS_PORT, undefined);
    assert.equal(loadAudioConfig({ AUDIO_METRICS_PORT: '9464' }).AUDIO_METRICS_PORT, 9464);
  });

  it('refuses a bad role and segments longer than the spec allows, naming them', () => {
    assert.throws(
      () => loadAudioConfig({ AUDIO_ROLE: 'gpu' }),
      (e: unknown) => e instanceof ConfigError && /AUDIO_ROLE/.test(e.message),
    );
    assert.throws(() => loadAudioConfig({ AUDIO_SEGMENT_SECONDS: '300' }), /AUDIO_SEGMENT_SECONDS/);
  });
});
