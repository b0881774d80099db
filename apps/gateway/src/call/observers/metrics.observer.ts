import { Inject, Injectable } from '@nestjs/common';
import { MetricsService } from '../../metrics/metrics.service.js';
import type { CallObserver, CallOutcome } from '../outcome.js';

/**
 * Prometheus: time to first byte and open streams of streamed calls, and the per-model outcome of
 * every admitted interactive model call (labelled by tier, never by member).
 */
@Injectable()
export class MetricsObserver implements CallObserver {
  constructor(@Inject(MetricsService) private readonly metrics: MetricsService) {}

  firstChunk(c: CallOutcome): void {
    this.metrics.ttfb.observe({ route: c.endpoint }, (performance.now() - c.started) / 1000);
    this.metrics.openStreams.inc();
  }

  settled(c: CallOutcome): void {
    if (c.firstTokenMs !== null) this.metrics.openStreams.dec();
    if (!c.admitted || c.kind !== 'model' || c.batch) return;
    const u = c.usage;
    this.metrics.modelDone(
      c.model as string,
      c.tier,
      c.endpoint,
      c.status,
      u?.prompt_tokens ?? 0,
      u?.completion_tokens ?? 0,
      c.latencyMs / 1000,
    );
  }
}
