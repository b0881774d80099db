import { Inject, Injectable } from '@nestjs/common';
import type { CallObserver, CallOutcome } from '../outcome.js';
import { TrafficRecorder } from './traffic.js';

/** The console's overview: per-minute per-model counts of admitted model calls (traffic.ts). */
@Injectable()
export class TrafficObserver implements CallObserver {
  constructor(@Inject(TrafficRecorder) private readonly traffic: TrafficRecorder) {}

  settled(c: CallOutcome): void {
    if (!c.admitted || c.kind !== 'model' || c.batch) return;
    this.traffic.record(c.model as string, c.status, c.latencyMs, c.usage?.total_tokens ?? 0);
  }
}
