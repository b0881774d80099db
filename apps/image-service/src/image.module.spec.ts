import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { Subjects } from '@infer/contracts';
import { ServiceCoreModule } from '@infer/runtime';
import { createLogger } from '@infer/telemetry';
import { PATTERN_METADATA } from '@nestjs/microservices/constants.js';
import { Test, type TestingModule } from '@nestjs/testing';
import { ImageServiceModule, ImagesController, ImageWorkerHost } from './image.module.js';

const log = createLogger('image-module-spec', 'silent');

/**
 * The image service's Nest wiring in each role, compiled with the module's real controller and providers.
 * What app.ts builds before Nest starts (Redis, the queue, the image store, the engines) is a stand-in:
 * compiling runs no lifecycle hook, so nothing connects and the worker does not start. A provider that
 * cannot be injected fails here in seconds.
 */
describe('ImageServiceModule wiring (Test.createTestingModule)', () => {
  let moduleRef: TestingModule | undefined;
  afterEach(async () => {
    await moduleRef?.close();
    moduleRef = undefined;
  });
  const compile = async (parts: Parameters<typeof ImageServiceModule.forRoot>[0]) => {
    moduleRef = await Test.createTestingModule({
      imports: [ServiceCoreModule.forRoot(log), ImageServiceModule.forRoot(parts)],
    }).compile();
    return moduleRef;
  };

  it('api role: the controller on the generations and edits subjects, no worker', async () => {
    const m = await compile({ api: {} as never });
    const controller = m.get(ImagesController);
    assert.deepEqual(Reflect.getMetadata(PATTERN_METADATA, controller.generations), [
      Subjects.imageGenerations,
    ]);
    assert.deepEqual(Reflect.getMetadata(PATTERN_METADATA, controller.edits), [Subjects.imageEdits]);
    assert.throws(() => m.get(ImageWorkerHost));
  });

  it('worker role: the worker host (started by the app, not by compiling), no controller', async () => {
    const m = await compile({ worker: {} as never });
    assert.equal(m.get(ImageWorkerHost).value, null);
    assert.throws(() => m.get(ImagesController));
  });

  it('all: both', async () => {
    const m = await compile({ api: {} as never, worker: {} as never });
    assert.ok(m.get(ImagesController));
    assert.ok(m.get(ImageWorkerHost));
  });
});
