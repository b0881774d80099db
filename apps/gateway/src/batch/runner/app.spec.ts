import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Test } from '@nestjs/testing';
import { BatchRunnerHost, BatchRunnerModule } from './app.js';

/**
 * The batch runner's Nest wiring: its one provider, the host of the runner's parts (connections, lane,
 * BullMQ worker: opened by app.ts, here a stand-in; the real runner: test/integration/batch.spec.ts).
 * The host opens them when the app is up and closes them (jobs requeued) before the app closes.
 */
describe('BatchRunnerModule wiring (Test.createTestingModule)', () => {
  it('provides the host, which starts with the app and stops before it closes', async () => {
    const events: string[] = [];
    const host = new BatchRunnerHost(
      async () => {
        events.push('start');
        return {} as never;
      },
      async () => {
        events.push('stop');
      },
    );
    const moduleRef = await Test.createTestingModule({
      imports: [BatchRunnerModule.forRoot(host)],
    }).compile();
    assert.equal(moduleRef.get(BatchRunnerHost), host);
    await moduleRef.init();
    assert.deepEqual(events, ['start']);
    await moduleRef.close();
    assert.deepEqual(events, ['start', 'stop']);
  });
});
