import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '@infer/telemetry';
import type { TestingModule } from '@nestjs/testing';
import { Test } from '@nestjs/testing';
import { AdminGuard } from './admin/access/admin.guard.js';
import { AppModule, GATEWAY_CONTROLLERS, type GatewayDeps } from './app.module.js';
import { GovernedCall } from './call/governed-call.js';
import { CALL_OBSERVERS, type CallObserver } from './call/outcome.js';
import { loadGatewayConfig } from './config.js';
import { MetricsService } from './metrics/metrics.service.js';
import { ModelGateway } from './openai/model-gateway.service.js';
import { SearchGateway } from './search/search.service.js';

/**
 * The gateway's Nest wiring, compiled with its real providers and controllers: only the connections
 * made before Nest starts (app.ts: PostgreSQL, Redis, NATS) are stand-ins, and nothing here connects.
 * A provider that cannot be injected (a missing provider, a wrong token, a cycle) fails this spec in
 * seconds instead of an integration run.
 */
describe('AppModule wiring (Test.createTestingModule)', () => {
  let moduleRef: TestingModule;

  before(async () => {
    const config = loadGatewayConfig({
      LOG_LEVEL: 'silent',
      IMAGE_URL_SECRET: 'a-secret-of-at-least-thirty-two-characters',
    });
    const idle = () => undefined;
    const deps: GatewayDeps = {
      config,
      log: createLogger('app-module-spec', 'silent'),
      prisma: {} as GatewayDeps['prisma'],
      pg: {} as GatewayDeps['pg'],
      // Stand-ins for the connections: what the constructors touch, nothing that would connect.
      redis: {
        options: {},
        on: idle,
        hdel: async () => 0,
        pipeline: () => ({ exec: async () => [] }),
      } as never,
      nc: { subscribe: () => ({ unsubscribe: idle }), publish: idle, info: undefined } as never,
      keyStore: { findActiveByHash: async () => null },
      catalogSource: { listEnabled: async () => [] },
      metrics: new MetricsService(),
    };
    moduleRef = await Test.createTestingModule({ imports: [AppModule.forRoot(deps)] }).compile();
  });
  after(async () => {
    await moduleRef?.close();
  });

  it('builds every controller', () => {
    for (const c of GATEWAY_CONTROLLERS) assert.ok(moduleRef.get(c), c.name);
  });

  it('builds the governed call with its observers, usage first, and its users', () => {
    const observers = moduleRef.get<CallObserver[]>(CALL_OBSERVERS);
    assert.deepEqual(
      observers.map((o) => o.constructor.name),
      ['UsageObserver', 'RequestLogObserver', 'TrafficObserver', 'MetricsObserver', 'PressureObserver'],
    );
    assert.ok(moduleRef.get(GovernedCall));
    assert.ok(moduleRef.get(ModelGateway));
    assert.ok(moduleRef.get(SearchGateway));
    assert.ok(moduleRef.get(AdminGuard));
  });
});
