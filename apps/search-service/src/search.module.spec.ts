import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Subjects } from '@infer/contracts';
import { ServiceCoreModule } from '@infer/runtime';
import { createLogger } from '@infer/telemetry';
import { PATTERN_METADATA } from '@nestjs/microservices/constants.js';
import { Test } from '@nestjs/testing';
import { SearchController, SearchServiceModule } from './search.module.js';

/**
 * The search service's Nest wiring, compiled with the module's real controller and providers. The
 * handler's dependencies (engine, cache, PostgreSQL, Redis: built by app.ts before Nest starts) are
 * stand-ins. A provider that cannot be injected fails here in seconds.
 */
describe('SearchServiceModule wiring (Test.createTestingModule)', () => {
  it('builds the controller on the search subject and closes what the service opened with the app', async () => {
    let closed = 0;
    const moduleRef = await Test.createTestingModule({
      imports: [
        ServiceCoreModule.forRoot(createLogger('search-module-spec', 'silent')),
        SearchServiceModule.forRoot({} as never, async () => {
          closed++;
        }),
      ],
    }).compile();
    const controller = moduleRef.get(SearchController);
    assert.deepEqual(Reflect.getMetadata(PATTERN_METADATA, controller.handle), [Subjects.search]);
    assert.equal(closed, 0);
    await moduleRef.close();
    assert.equal(closed, 1);
  });
});
