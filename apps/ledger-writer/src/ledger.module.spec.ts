import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Test } from '@nestjs/testing';
import { LedgerWriterHost, LedgerWriterModule } from './ledger.module.js';

/**
 * The ledger writer's Nest wiring: its one provider, the consumer loop's host, with a stand-in loop
 * (the real one reads the usage stream: test/integration/ledger.spec.ts). The host starts the loop when
 * the app is up and stops it before the app closes.
 */
describe('LedgerWriterModule wiring (Test.createTestingModule)', () => {
  it('provides the host, which starts with the app and stops before it closes', async () => {
    const events: string[] = [];
    const host = new LedgerWriterHost(
      async () => {
        events.push('start');
        return {} as never;
      },
      async () => {
        events.push('stop');
      },
    );
    const moduleRef = await Test.createTestingModule({
      imports: [LedgerWriterModule.forRoot(host)],
    }).compile();
    assert.equal(moduleRef.get(LedgerWriterHost), host);
    await moduleRef.init();
    assert.deepEqual(events, ['start']);
    await moduleRef.close();
    assert.deepEqual(events, ['start', 'stop']);
  });
});
