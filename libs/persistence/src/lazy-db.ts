// A Db whose Prisma client is made on first use. Prisma's client (its runtime, the generated client,
// the wasm query compiler held as base64 and compiled) is a large share of an idle gateway's RSS, and a gateway
// that serves only the public API never needs it: its start-up, auth, catalog, limits and /readyz run
// on pg directly (queries.ts). Routes that do need it (console/admin, /v1/files, /v1/batches ...) take
// this Db as they took the eager one; the first call loads the client (tens of milliseconds, once) on
// the same pg pool. ADR 0014, "Prisma's client on first use".
//
// Until the client is loaded, a call returns a DeferredCall, which runs when it is awaited, as a
// PrismaPromise does; `$transaction([...])` turns the DeferredCalls it is given into the client's own
// calls, so the batch form keeps its meaning. Errors are the client's own (PrismaClientKnownRequestError
// with its P-code ...). Once loaded, every property is the client's (functions bound to it).
import type pg from 'pg';
import type { Db } from './db.js';
import type { Prisma } from './prisma.js';

/** The model delegates of the client (`db.member`, `db.apiKey` ...): exactly Prisma's models (checked). */
const MODELS: Record<Uncapitalize<Prisma.ModelName>, true> = {
  member: true,
  apiKey: true,
  apiKeySecret: true,
  model: true,
  usageEvent: true,
  requestLog: true,
  requestLogBody: true,
  searchDocument: true,
  operator: true,
  operatorSession: true,
  memberSession: true,
  memberInvitation: true,
  auditEvent: true,
  usageDaily: true,
  usageHourlyModel: true,
  usageDailyMember: true,
  usageMonthlyMember: true,
  file: true,
  batch: true,
  batchLine: true,
  storedResponse: true,
  alertEvent: true,
  alertDelivery: true,
};
const RAW = new Set(['$queryRaw', '$queryRawUnsafe', '$executeRaw', '$executeRawUnsafe']);
const STATE = Symbol('lazyPrisma');

interface State {
  pool: pg.Pool;
  client: Db | null;
  loading: Promise<Db> | null;
  onLoad: ((ms: number) => void) | undefined;
}

type AnyFn = (...args: unknown[]) => unknown;

function load(state: State): Promise<Db> {
  if (state.client) return Promise.resolve(state.client);
  state.loading ??= (async () => {
    const started = performance.now();
    try {
      const { createPrismaOnPool } = await import('./prisma.js');
      state.client = createPrismaOnPool(state.pool);
      state.onLoad?.(performance.now() - started);
      return state.client;
    } catch (error) {
      state.loading = null; // a later call tries again
      throw error;
    }
  })();
  return state.loading;
}

/** A call made before the client was loaded: runs when awaited, or in a `$transaction([...])`. */
class DeferredCall<T = unknown> implements PromiseLike<T> {
  private running: Promise<T> | null = null;

  constructor(
    private readonly state: State,
    private readonly model: string | null,
    private readonly method: string,
    private readonly args: unknown[],
  ) {}

  /** The same call on the client: its PrismaPromise, not yet run. */
  on(client: Db): PromiseLike<T> {
    const target = (this.model === null ? client : client[this.model as keyof Db]) as unknown as Record<
      string,
      AnyFn
    >;
    return target[this.method]!.apply(target, this.args) as PromiseLike<T>;
  }

  private run(): Promise<T> {
    this.running ??= load(this.state).then((client) => this.on(client));
    return this.running;
  }

  // biome-ignore lint/suspicious/noThenProperty: it is a promise, as Prisma's own calls are
  then<A = T, B = never>(
    onfulfilled?: ((value: T) => A | PromiseLike<A>) | null,
    onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    return this.run().then(onfulfilled, onrejected);
  }

  catch<B = never>(onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<T | B> {
    return this.run().catch(onrejected);
  }

  finally(onfinally?: (() => void) | null): Promise<T> {
    return this.run().finally(onfinally);
  }

  get [Symbol.toStringTag](): string {
    return 'PrismaPromise';
  }
}

function transaction(state: State, arg: unknown, options: unknown): Promise<unknown> {
  return load(state).then((client) => {
    const $transaction = client.$transaction.bind(client) as (a: unknown, o: unknown) => Promise<unknown>;
    if (!Array.isArray(arg)) return $transaction(arg, options);
    return $transaction(
      arg.map((call) => (call instanceof DeferredCall ? call.on(client) : call)),
      options,
    );
  });
}

export interface LazyPrisma {
  /** Prisma's client, made on first use. */
  db: Db;
  /** Whether the client was made (its modules loaded). */
  loaded(): boolean;
  /** Disconnects the client if it was made; the pool stays open (its owner ends it). */
  close(): Promise<void>;
}

/**
 * A Db on `pool` whose Prisma client is made on first use. `onLoad` is told once, with the time the
 * load took (ms).
 */
export function lazyPrisma(pool: pg.Pool, options: { onLoad?: (ms: number) => void } = {}): LazyPrisma {
  const state: State = { pool, client: null, loading: null, onLoad: options.onLoad };
  const delegates = new Map<string, object>();
  const bound = new Map<PropertyKey, unknown>();
  const delegate = (model: string) =>
    new Proxy(
      {},
      {
        get(_target, method) {
          if (state.client) {
            const d = state.client[model as keyof Db] as unknown as Record<PropertyKey, unknown>;
            const v = d[method];
            return typeof v === 'function' ? v.bind(d) : v;
          }
          if (typeof method !== 'string' || method === 'then') return undefined;
          return (...args: unknown[]) => new DeferredCall(state, model, method, args);
        },
      },
    );
  const db = new Proxy({} as Db, {
    get(_target, prop) {
      if (prop === STATE) return state;
      if (prop === '$transaction')
        return (arg: unknown, options?: unknown) => transaction(state, arg, options);
      if (state.client) {
        if (bound.has(prop)) return bound.get(prop);
        const v = (state.client as unknown as Record<PropertyKey, unknown>)[prop];
        if (typeof v !== 'function') return v;
        const fn = v.bind(state.client);
        bound.set(prop, fn);
        return fn;
      }
      if (typeof prop !== 'string') return undefined;
      if (Object.hasOwn(MODELS, prop)) {
        let d = delegates.get(prop);
        if (!d) {
          d = delegate(prop);
          delegates.set(prop, d);
        }
        return d;
      }
      if (RAW.has(prop)) return (...args: unknown[]) => new DeferredCall(state, null, prop, args);
      if (prop === '$connect') return () => load(state).then((client) => client.$connect());
      if (prop === '$disconnect') return () => Promise.resolve();
      if (prop.startsWith('$'))
        throw new Error(`lazyPrisma: ${prop} needs Prisma's client loaded first (await a query before)`);
      return undefined;
    },
    has(_target, prop) {
      if (state.client) return prop in state.client;
      return (
        prop === '$transaction' ||
        (typeof prop === 'string' && (Object.hasOwn(MODELS, prop) || RAW.has(prop)))
      );
    },
  });
  return {
    db,
    loaded: () => state.client !== null,
    close: async () => {
      const client = state.client ?? (await state.loading?.catch(() => null));
      await client?.$disconnect();
    },
  };
}

/**
 * Whether `db`'s Prisma client has been made: false for a lazyPrisma Db before its first use, true
 * after it and for a client made by createPrisma.
 */
export function prismaLoaded(db: object): boolean {
  const state = (db as { [STATE]?: State })[STATE];
  return state === undefined ? true : state.client !== null;
}
