import type { Provider } from '@nestjs/common';
import { CallSettlement } from './call-settlement.service.js';
import { GovernedCall } from './governed-call.js';
import { MetricsObserver } from './observers/metrics.observer.js';
import { PressureObserver } from './observers/pressure.observer.js';
import { RequestLogObserver } from './observers/request-log.observer.js';
import { TrafficObserver } from './observers/traffic.observer.js';
import { UsageObserver } from './observers/usage.observer.js';
import { CALL_OBSERVERS, type CallObserver } from './outcome.js';
import { ParkedResults } from './parked-results.store.js';

/**
 * The observers of every governed call, in the order they run: usage first (nothing may keep a
 * usage event from being published), the request log's refusals, then the console's traffic, metrics,
 * batch pressure. A new concern is one more class here: a Nest provider implementing CallObserver.
 */
export const CALL_OBSERVER_CLASSES = [
  UsageObserver,
  RequestLogObserver,
  TrafficObserver,
  MetricsObserver,
  PressureObserver,
];

/** GovernedCall and its parts, for the app module. */
export const CALL_PROVIDERS: Provider[] = [
  ...CALL_OBSERVER_CLASSES,
  {
    provide: CALL_OBSERVERS,
    useFactory: (...observers: CallObserver[]) => observers,
    inject: CALL_OBSERVER_CLASSES,
  },
  CallSettlement,
  ParkedResults,
  GovernedCall,
];
