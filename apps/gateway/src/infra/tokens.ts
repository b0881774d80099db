/** DI tokens for the gateway's infrastructure. */
export const LOGGER = Symbol('LOGGER');
/** Prisma's client (a Db made on first use: infra/persistence.ts). */
export const PRISMA = Symbol('PRISMA');
/** The pg pool (a SqlRunner): queries the gateway runs without Prisma's client. */
export const PG = Symbol('PG');
export const REDIS = Symbol('REDIS');
export const NATS = Symbol('NATS');
export const CATALOG_SOURCE = Symbol('CATALOG_SOURCE');
export const KEY_STORE = Symbol('KEY_STORE');
export const FILE_STORE = Symbol('FILE_STORE');
/**
 * Drops cached key lookups here and on every gateway replica (`{ keysChanged(target) }`): the admin
 * room's AdminInvalidation, handed to the account pages under this token so they revoke and rotate
 * exactly as the admin API does without importing admin code (ADR 0031).
 */
export const KEYS_CHANGED = Symbol('KEYS_CHANGED');
export interface KeysChanged {
  keysChanged(target: import('@infer/contracts').InvalidationTarget): Promise<void>;
}
