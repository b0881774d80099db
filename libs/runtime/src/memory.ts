/**
 * The process's memory upkeep, all of it (ADR 0014 "Memory", ADR 0015). Each trick below keeps one
 * invariant, shown by the bench named with it; one may go only when its bench shows the invariant holds
 * without it. Nothing else in the product code tunes the heap or the allocator (the gateway image's node
 * flags, docker/gateway.Dockerfile, are the one other place, and say why there).
 *
 * 1. The Intl deferral (`beginIntlDeferral`/`endIntlDeferral`, run by `runMain`). Invariant: formatters
 *    made while the app's modules load (Nest's logger makes two) map no ICU data into a process that never
 *    formats with them; formatters made at run time are the real ones. Bench: bench/gateway-rss.ts (the
 *    gateway's idle RSS beside the bare Nest floor).
 * 2. The idle collection (`startIdleHeapTrim`, every app): V8's last-resort collection, reached through
 *    `--expose-gc` set at run time and held by one function (`lastResortGc`). Invariant: an app that goes
 *    idle after a burst comes back near its fresh idle RSS, and it never collects while busy or between
 *    short pauses. Bench: bench/stack.ts `--rss` (idle RSS before and after load) and `--gc` (bytes
 *    promoted per request, per round: why it waits for several idle intervals).
 * 3. glibc's `malloc_trim(0)` through `node:ffi`, right after that collection (`mallocTrim`). Invariant:
 *    the native memory the collection frees goes back to the system, not only to malloc's arenas.
 *    Bench: bench/stack.ts `--rss`.
 *
 * This module imports Node built-ins only (none of them makes a formatter), so `runMain` can load it and
 * begin the deferral before anything else loads.
 */
import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

// ---------------------------------------------------------------------------------------------------
// 2 and 3: the idle collection and the trim.

/**
 * Gives memory back to the system once an app is idle again after its heap grew; every app starts it
 * through `startIdleHeapTrim()` (below).
 *
 * Why: V8's own memory reducer cannot be relied on here (and the gateway image turns it off, below). In the
 * gateway, after a burst, `--trace-memory-reducer` prints "high alloc, foreground" every 8 s for
 * as long as the gateway stays idle: its allocation-rate estimate does not come down while nothing
 * collects (after one collection the reducer works again), and an idle process allocates too little to
 * trigger one, so the garbage of the burst (and the pages V8 pools for reuse) stay resident until the
 * next load. Node offers no other hint (no memory-pressure or
 * background notification), so this asks V8 for the collection the reducer would have made: a full
 * "last resort" GC (compacts, shrinks the young generation, releases the pooled pages), then has glibc
 * give back the free pages of malloc's arenas (collectAndTrim, below). It also drops
 * the compiled code of functions not on the stack, so the next load re-tiers them; the "regular" flavour
 * keeps it but leaves the pooled pages resident until V8's own reducer runs. Either flavour, like V8's reducer, leaves a small young
 * generation and a low old-generation limit for the next load: the gateway image's node flags
 * (docker/gateway.Dockerfile) make it regrow at once.
 *
 * When: every `intervalMs`, only if the event loop was busy less than `maxIdleUtilization` of that
 * interval (the collection pauses the event loop: a request arriving meanwhile waits for it) and RSS grew by at least
 * `minGrowthBytes` since the last collection this made (or since start-up, whose garbage counts too).
 * Under load it never runs; after a collection RSS is the new reference, so a heap that really holds
 * more (caches) is not collected again and again.
 *
 * How long idle: start-up's garbage after one idle interval, any later collection only after
 * `idleIntervals` idle intervals in a row (default 3: 30 s). A full collection while idle, ours or V8's
 * memory reducer (which the gateway image turns off), last-resort or regular flavour alike, leaves the
 * gateway promoting several times the bytes per request (V8's pretenuring decisions starting over would
 * explain it; not proven) and costing more CPU per request until a mark-compact under load: worth paying
 * after a long pause, not after each short one between bursts (`bench/stack.ts --gc` shows it per round).
 */
export interface HeapTrimOptions {
  intervalMs?: number;
  maxIdleUtilization?: number;
  minGrowthBytes?: number;
  /** Idle intervals in a row before a collection after the first one (default 3). */
  idleIntervals?: number;
  /** Test seams: resident set size, event-loop utilization since the previous call, the collection. */
  rss?: () => number;
  utilization?: () => number;
  collect?: () => void;
}

export class IdleHeapTrim {
  private readonly maxUtil: number;
  private readonly minGrowth: number;
  private readonly idleIntervals: number;
  private readonly rss: () => number;
  private readonly utilization: () => number;
  private readonly collect: () => void;
  /** RSS right after the last collection (0 before the first: start-up's garbage is worth one). */
  private reference = 0;
  /** Idle intervals in a row until now. */
  private idleStreak = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly opts: HeapTrimOptions = {}) {
    this.maxUtil = opts.maxIdleUtilization ?? 0.05;
    this.minGrowth = opts.minGrowthBytes ?? 32 * 1024 * 1024;
    this.idleIntervals = opts.idleIntervals ?? 3;
    this.rss = opts.rss ?? process.memoryUsage.rss;
    this.utilization = opts.utilization ?? eventLoopUtilizationSinceLastCall();
    this.collect = opts.collect ?? collectAndTrim();
  }

  start(): this {
    this.timer ??= setInterval(() => this.check(), this.opts.intervalMs ?? 10_000);
    this.timer.unref();
    return this;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** One look; true when it collected. */
  check(): boolean {
    const busy = this.utilization();
    const rss = this.rss();
    if (this.reference && rss < this.reference) this.reference = rss; // V8 gave memory back itself
    if (busy > this.maxUtil) {
      this.idleStreak = 0;
      return false;
    }
    this.idleStreak++;
    if (this.reference && rss - this.reference < this.minGrowth) return false;
    if (this.reference && this.idleStreak < this.idleIntervals) return false;
    this.collect();
    this.reference = this.rss();
    return true;
  }
}

function eventLoopUtilizationSinceLastCall(): () => number {
  let last = performance.eventLoopUtilization();
  return () => {
    const now = performance.eventLoopUtilization();
    const u = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    return u;
  };
}

/**
 * V8's `gc()` without `--expose-gc` on the command line: the flag set at run time makes it available to
 * contexts created afterwards, so only this function holds it (the main context gets no global `gc`).
 */
function lastResortGc(): () => void {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as (o: {
    type: 'major';
    execution: 'sync';
    flavor: 'last-resort';
  }) => void;
  return () => gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}

/**
 * The idle collection: V8's last-resort collection, then glibc's `malloc_trim(0)` when it can be had
 * (mallocTrim). The collection frees the garbage's native parts (buffers, sockets' and parsers' state)
 * into malloc's arenas, where glibc keeps every page that lies between live chunks (it gives back only the
 * top of its heap): without the trim a process settles well above its fresh idle level after load
 * (`bench/stack.ts --rss` reads both levels).
 */
export function collectAndTrim(): () => void {
  const gc = lastResortGc();
  // undefined until the first collection (a process that is never idle never loads node:ffi); null when
  // it cannot be had, or once a call failed.
  let trim: (() => number) | null | undefined;
  return () => {
    gc();
    if (trim === undefined) trim = mallocTrim();
    try {
      trim?.();
    } catch {
      trim = null;
    }
  };
}

interface NodeFfi {
  dlopen(
    path: string | null,
    definitions: Record<string, { arguments: string[]; return: string }>,
  ): { functions: Record<string, (...args: unknown[]) => unknown> };
}

/**
 * glibc's `malloc_trim(0)`, called through Node's own foreign function interface (`node:ffi`, Node 26.1+):
 * returns to the system every whole free page of malloc's arenas, where glibc itself only gives back the
 * top of the heap. Node exposes no such call, and an addon would need a compiler in every image; the
 * symbol is looked up in the process itself (`dlopen(null)`), so nothing is loaded from disk. null (and
 * nothing trimmed) where it cannot be had: another C library (musl), a Node without `node:ffi` or run with
 * `--no-experimental-ffi`, or the permission model without `--allow-ffi`. `node:ffi` is experimental
 * (stability 1): its one-time ExperimentalWarning is left out of the logs, as this is the only use and
 * the failure of any part of it only leaves the pages where they are.
 */
export function mallocTrim(): (() => number) | null {
  if (process.platform !== 'linux') return null;
  const emitWarning = process.emitWarning;
  try {
    process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
      if (String(warning).startsWith('FFI is an experimental feature')) return;
      (emitWarning as (...a: unknown[]) => void).call(process, warning, ...rest);
    }) as typeof process.emitWarning;
    const ffi = process.getBuiltinModule('node:ffi') as NodeFfi | undefined;
    if (!ffi) return null;
    const fn = ffi.dlopen(null, { malloc_trim: { arguments: ['u64'], return: 'i32' } }).functions.malloc_trim;
    if (typeof fn !== 'function') return null;
    return () => fn(0n) as number;
  } catch {
    return null;
  } finally {
    process.emitWarning = emitWarning;
  }
}

let shared: { trim: IdleHeapTrim; users: number } | null = null;

/**
 * The process's idle collection, started by every app's bootstrap (the gateway, the NATS services, the
 * worker roles): one per process however many apps it hosts (tests start several in one), stopped when
 * the last of them stops.
 */
export function startIdleHeapTrim(): { stop(): void } {
  shared ??= { trim: new IdleHeapTrim().start(), users: 0 };
  shared.users++;
  let stopped = false;
  return {
    stop() {
      if (stopped || !shared) return;
      stopped = true;
      if (--shared.users === 0) {
        shared.trim.stop();
        shared = null;
      }
    },
  };
}

/** How many apps of this process hold the idle collection (0: not running). */
export function idleHeapTrimUsers(): number {
  return shared?.users ?? 0;
}

// ---------------------------------------------------------------------------------------------------
// 1: the Intl deferral.

/*
 * Intl.DateTimeFormat objects made while an app's modules load are built on their first use.
 *
 * Why: @nestjs/common makes two `Intl.DateTimeFormat`s when its logger modules load (for its console
 * logger, which our apps do not print with), and the first Intl formatter of a process maps ICU data from
 * the node binary into the process's RSS, idle or not (ADR 0015; bench/gateway-rss.ts).
 *
 * Use: through `runMain` (`@infer/runtime/main`, run-main.ts), which begins the deferral before it loads
 * the app's modules, then calls `endIntlDeferral()` before starting it. Formatters made after that are
 * the real ones, so a bad option still throws where it is passed; those made during the load check
 * their arguments on first use instead, and otherwise answer exactly as the real ones do.
 */
const Native = Intl.DateTimeFormat;

/** The prototype's members (format is a getter returning a bound function; the rest are methods). */
const MEMBERS = Object.getOwnPropertyNames(Native.prototype).filter((name) => name !== 'constructor');

function deferredFormat(args: ConstructorParameters<typeof Intl.DateTimeFormat>): Intl.DateTimeFormat {
  let real: Intl.DateTimeFormat | undefined;
  const made = (): Intl.DateTimeFormat => {
    real ??= new Native(...args);
    return real;
  };
  const own: PropertyDescriptorMap = {};
  for (const name of MEMBERS) {
    const d = Object.getOwnPropertyDescriptor(Native.prototype, name);
    if (d?.get) {
      own[name] = { get: () => Reflect.get(Native.prototype, name, made()), configurable: true };
    } else if (typeof d?.value === 'function') {
      const method = d.value as (...a: unknown[]) => unknown;
      own[name] = { value: (...a: unknown[]) => method.apply(made(), a), configurable: true, writable: true };
    }
  }
  return Object.create(Native.prototype, own) as Intl.DateTimeFormat;
}

const Deferring: typeof Intl.DateTimeFormat = new Proxy(Native, {
  construct: (target, args, newTarget): object =>
    newTarget === Deferring
      ? deferredFormat(args as ConstructorParameters<typeof Intl.DateTimeFormat>)
      : Reflect.construct(target, args, newTarget),
  apply: (_target, _self, args) => deferredFormat(args as ConstructorParameters<typeof Intl.DateTimeFormat>),
});

let deferring = false;

/** From now until `endIntlDeferral()`, `new Intl.DateTimeFormat(...)` is built on first use. */
export function beginIntlDeferral(): void {
  if (deferring) return;
  deferring = true;
  Intl.DateTimeFormat = Deferring;
}

/** Formatters made from now on are real again. */
export function endIntlDeferral(): void {
  if (!deferring) return;
  deferring = false;
  Intl.DateTimeFormat = Native;
}
