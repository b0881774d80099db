import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { Subjects } from '@infer/contracts';
import { ServiceCoreModule } from '@infer/runtime';
import { createLogger } from '@infer/telemetry';
import { PATTERN_METADATA } from '@nestjs/microservices/constants.js';
import { Test, type TestingModule } from '@nestjs/testing';
import { AudioController, AudioServiceModule, TranscriptionWorkerHost } from './audio.module.js';

const log = createLogger('audio-module-spec', 'silent');

/**
 * The audio service's Nest wiring in each role, compiled with the module's real controller and providers.
 * What app.ts builds before Nest starts (Redis, the queue, the engines) is a stand-in: compiling runs no
 * lifecycle hook, so nothing connects and the worker does not start. A provider that cannot be injected
 * fails here in seconds.
 */
describe('AudioServiceModule wiring (Test.createTestingModule)', () => {
  let moduleRef: TestingModule | undefined;
  afterEach(async () => {
    await moduleRef?.close();
    moduleRef = undefined;
  });
  const compile = async (parts: Parameters<typeof AudioServiceModule.forRoot>[0]) => {
    moduleRef = await Test.createTestingModule({
      imports: [ServiceCoreModule.forRoot(log), AudioServiceModule.forRoot(parts)],
    }).compile();
    return moduleRef;
  };
  const api = { speech: {} as never, transcription: {} as never };

  it('api role: the controller on the speech and transcription subjects, no worker', async () => {
    const m = await compile({ api });
    const controller = m.get(AudioController);
    assert.deepEqual(Reflect.getMetadata(PATTERN_METADATA, controller.speech), [Subjects.speech]);
    assert.deepEqual(Reflect.getMetadata(PATTERN_METADATA, controller.transcriptions), [
      Subjects.transcriptions,
    ]);
    assert.throws(() => m.get(TranscriptionWorkerHost));
  });

  it('worker role: the worker host (started by the app, not by compiling), no controller', async () => {
    const m = await compile({ worker: {} as never });
    assert.equal(m.get(TranscriptionWorkerHost).value, null);
    assert.throws(() => m.get(AudioController));
  });

  it('all: both', async () => {
    const m = await compile({ api, worker: {} as never });
    assert.ok(m.get(AudioController));
    assert.ok(m.get(TranscriptionWorkerHost));
  });
});
