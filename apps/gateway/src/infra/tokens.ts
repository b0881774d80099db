/** DI tokens for the gateway's infrastructure. */
export const LOGGER = Symbol('LOGGER');
export const PRISMA = Symbol('PRISMA');
export const REDIS = Symbol('REDIS');
export const NATS = Symbol('NATS');
export const CATALOG_SOURCE = Symbol('CATALOG_SOURCE');
export const KEY_STORE = Symbol('KEY_STORE');
export const FILE_STORE = Symbol('FILE_STORE');
