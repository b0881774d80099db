import { Inject, Injectable } from '@nestjs/common';
import type { CallObserver, CallOutcome } from '../outcome.js';
import { InteractivePressure } from './pressure.js';

/** Interactive model calls in flight, reported to Redis: the batch lane yields to them (batch/pressure.ts). */
@Injectable()
export class PressureObserver implements CallObserver {
  constructor(@Inject(InteractivePressure) private readonly pressure: InteractivePressure) {}

  begin(c: CallOutcome): void {
    if (c.kind === 'model' && !c.batch) this.pressure.begin();
  }

  settled(c: CallOutcome): void {
    if (c.admitted && c.kind === 'model' && !c.batch) this.pressure.end();
  }
}
