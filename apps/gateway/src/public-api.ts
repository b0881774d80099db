/**
 * What the gateway offers other projects (bench/, test/): its start functions and the parts the
 * benches measure on their own. Imported as `@infer/gateway/public` (package.json `exports`);
 * tools/check-layout.js refuses a bench import that goes around it.
 */
export { type RunningGateway, startGateway } from './app.js';
export { type RunningBatchRunner, startBatchRunner } from './batch/runner/app.js';
export { TrafficRecorder } from './call/observers/traffic.js';
export { LimitsStore } from './limits/limits.store.js';
export type { LimitSubject } from './limits/plan.js';
export { BATCH_LUA } from './limits/scripts.js';
export { MetricsService } from './metrics/metrics.service.js';
export { TRACE_ID_HEADER, tracedRequest, traceHttpServer } from './telemetry/http-tracing.js';
