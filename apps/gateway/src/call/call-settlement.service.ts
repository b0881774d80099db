import type { Logger } from '@infer/telemetry';
import { Inject, Injectable } from '@nestjs/common';
import { LOGGER } from '../infra/tokens.js';
import { CALL_OBSERVERS, type CallObserver, type CallOutcome } from './outcome.js';

/**
 * Runs the observers of every call (CALL_OBSERVERS, in their order) at its three moments. Each
 * observer runs on its own: one that throws (or rejects) is logged and skipped, so it can neither fail
 * the request nor keep the next observer (usage comes first) from seeing the call.
 */
@Injectable()
export class CallSettlement {
  private readonly beginners: CallObserver[];
  private readonly firstChunkers: CallObserver[];

  constructor(
    @Inject(CALL_OBSERVERS) private readonly observers: readonly CallObserver[],
    @Inject(LOGGER) private readonly log: Logger,
  ) {
    // Chosen once: the per-call loops visit only the observers that have the hook.
    this.beginners = observers.filter((o) => o.begin);
    this.firstChunkers = observers.filter((o) => o.firstChunk);
  }

  begin(call: CallOutcome): void {
    for (const o of this.beginners) {
      try {
        o.begin?.(call);
      } catch (err) {
        this.failed(o, err, call);
      }
    }
  }

  firstChunk(call: CallOutcome): void {
    for (const o of this.firstChunkers) {
      try {
        o.firstChunk?.(call);
      } catch (err) {
        this.failed(o, err, call);
      }
    }
  }

  /**
   * Hands the settled call to every observer. Returns null when no observer returned a promise (the
   * interactive path: nothing to await), else a promise of all of them, which only the batch runner
   * awaits: there a usage event without its JetStream ack must stop the line's checkpoint (the line is
   * run again, and the ledger keeps its event once), so a rejection is logged AND passed on.
   */
  settled(call: CallOutcome): Promise<void> | null {
    let waits: Promise<void>[] | null = null;
    for (const o of this.observers) {
      try {
        const p = o.settled(call);
        if (p) {
          waits ??= [];
          waits.push(
            p.catch((err) => {
              this.failed(o, err, call);
              throw err;
            }),
          );
        }
      } catch (err) {
        this.failed(o, err, call);
      }
    }
    return waits ? Promise.all(waits).then(() => undefined) : null;
  }

  private failed(o: CallObserver, err: unknown, call: CallOutcome): void {
    this.log.error(
      { err, observer: o.constructor.name, requestId: call.requestId },
      'a call observer failed',
    );
  }
}
